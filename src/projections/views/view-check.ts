/**
 * `wo replay --app` for views: each declared view folded from the log alone, compared with its stored record.
 * A view matches when both values are equal (as canonical JSON), or when both failed. A record written under
 * another declaration of the view (the app changed since) is reported as stale, not as a mismatch: the next
 * start folds it again; so is a snapshot exact at an earlier seq (`at`), whose tail the next start folds. Without
 * the app a view cannot be folded (its evolve is the app's code).
 */
import { Effect, Either } from "effect"
import type { EventLogShape } from "../../log/event-log.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import { foldViews } from "./view-fold.ts"
import { compareKeyedViews } from "./keyed-check.ts"
import { parseViewRecord, viewDefinition } from "../../log/view-record.ts"

export interface ViewComparison {
  readonly name: string
  readonly outcome: "match" | "mismatch" | "stale"
  /** What was compared, for people. */
  readonly detail: string
  /** A keyed view's differing entries, each naming its key (keyed-check.ts). */
  readonly keys?: ReadonlyArray<string>
}

/** JSON with sorted keys, so that key order does not count as a difference. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(",")}}`
  }
  return JSON.stringify(value)
}

export const compareViews = (log: EventLogShape, catalog: CompiledApp) =>
  Effect.gen(function* () {
    const keyed: ReadonlyArray<ViewComparison> = yield* compareKeyedViews(log, catalog)
    const views = [...catalog.views.values()].filter((v) => !v.keyed)
    if (views.length === 0) return keyed
    const head = yield* log.head
    const stored = new Map((log.storedViews === undefined ? [] : yield* log.storedViews).map((v) => [v.name, v.record]))
    const folded = yield* foldViews(log, catalog, views, false)
    const whole = views.map((view): ViewComparison => {
      const rebuilt = folded.get(view.name)!
      const rebuiltText = rebuilt.failed !== undefined ? `failed: ${rebuilt.failed}` : canonical(JSON.parse(rebuilt.valueJson!))
      const record = stored.get(view.name)
      if (record === undefined) {
        // Never stored: no batch has run since the view was declared. Its value must still be the initial one.
        const initial = Either.map(view.encode(view.initial), (json) => canonical(JSON.parse(json)))
        return Either.isRight(initial) && initial.right === rebuiltText
          ? { name: view.name, outcome: "match", detail: `not stored yet; the log's fold is its initial value ${rebuiltText}` }
          : { name: view.name, outcome: "mismatch", detail: `no stored state, but the log's fold is ${rebuiltText}` }
      }
      const parsed = parseViewRecord(record)
      if (Either.isLeft(parsed)) return { name: view.name, outcome: "mismatch", detail: `the stored record is not a view record: ${parsed.left}` }
      if (parsed.right.definition !== viewDefinition(view)) {
        return { name: view.name, outcome: "stale", detail: "stored by another declaration of the view; the next start folds it again from the log" }
      }
      const at = parsed.right.at
      if (at !== undefined && at < head.lastSeq) {
        return { name: view.name, outcome: "stale", detail: `a snapshot at seq ${at}, before the log's head ${head.lastSeq}; the next start folds the events after it` }
      }
      const storedText = parsed.right.failed !== undefined ? `failed: ${parsed.right.failed}` : canonical(parsed.right.value)
      return storedText === rebuiltText
        ? { name: view.name, outcome: "match", detail: storedText }
        : { name: view.name, outcome: "mismatch", detail: `stored ${storedText}, the log's fold ${rebuiltText}` }
    })
    return [...whole, ...keyed]
  })
