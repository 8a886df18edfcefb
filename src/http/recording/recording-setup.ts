/** What the recorder (recorder.ts) learns from the running server: the catalog's references, and the data it starts on. */
import type { CompiledApp } from "../../domain/compile.ts"
import type { Settings } from "../../support/config.ts"
import type { RecordedRefs } from "./recorded-values.ts"

/** Which fields and command params hold ids of which type. */
export const recordedRefs = (catalog: CompiledApp): RecordedRefs => ({
  fields: new Map([...catalog.types.values()].map((t) => [t.name, t.rules.refs])),
  params: new Map([...catalog.commands.values()].map((c) => [c.name, c.refs]))
})

/**
 * The warning for a recording that starts on a store with history: a transcript replays on an empty store, so
 * what the session reads of the older rows (or references by id) is not there on replay.
 */
export const recordingOverData = (settings: Settings, rows: number) => {
  const where = settings.store === undefined ? `data dir ${settings.dataDir}` : "store"
  return `recording on a ${where} that already holds ${rows} ${rows === 1 ? "row" : "rows"}: a transcript replays on an empty store, ` +
    `so exchanges that read those rows or reference them will not replay as recorded (generated ids, seqs and ETags of rows ` +
    `created while recording are placeholders and do). For a transcript that replays whole, record on an empty data dir: ` +
    `wo run <app-dir> --data "$(mktemp -d)" --record <file>`
}
