/**
 * `wo replay`: rebuild every row from the log alone and compare it, by digest, with the stored row state.
 *
 * Without the app it compares the data as written: events carry their data, and `evolve` is the same for every
 * type. That proves a log whose schema never changed. Once it has (migrations, defaults, removed fields), the
 * stored rows hold the current form and the fold needs the app to get there: given the app (and a log that
 * upcasts, see log/upcasting-log.ts), both sides are compared after migrations and normalisation.
 */
import { Chunk, Effect, Either, Stream } from "effect"
import { createHash } from "node:crypto"
import type { Row } from "../domain/catalog.ts"
import type { CompiledApp } from "../domain/compile.ts"
import { evolve } from "../domain/decide/decider.ts"
import type { EventLogShape } from "../log/event-log.ts"
import { RowTable } from "./rows/row-table.ts"
import { makeMisfits, newerSchemaProblem, normaliseRow, normaliseTables } from "./rows/schema-check.ts"
import { compareViews, type ViewComparison } from "./views/view-check.ts"

/** JSON with sorted keys, so that a digest does not depend on key order. */
export const canonicalJson = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort()
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(",")}}`
  }
  return JSON.stringify(value)
}

const lineOf = (type: string, row: Row) => `${type}\t${row.id}\t${canonicalJson(row)}\n`

export interface ReplayReport {
  readonly events: number
  readonly rows: number
  readonly storedRows: number
  readonly rebuiltDigest: string
  readonly storedDigest: string
  readonly matches: boolean
  /** The first few rows that differ, as `type/id`. */
  readonly mismatches: ReadonlyArray<string>
  /**
   * Without the app, when the rows differ the way a schema change makes them differ (data written at a schema
   * version above 1, or fields present on one side only): why the comparison needs `--app`.
   */
  readonly needsApp?: string
  /** With the app: rows (rebuilt or stored) that do not fit its schema. */
  readonly misfits: ReadonlyArray<string>
  /** With the app: each declared view folded from the log and compared with its stored state (view-check.ts). */
  readonly views: ReadonlyArray<ViewComparison>
  readonly millis: number
}

/** True when two rows agree on every field they both have: what defaults and removed fields leave behind. */
const differOnlyInPresence = (a: Row | undefined, b: Row) => {
  if (a === undefined) return false
  for (const k of Object.keys(a)) if (k in b && canonicalJson(a[k]) !== canonicalJson(b[k])) return false
  return true
}

export const replay = (log: EventLogShape, catalog?: CompiledApp) =>
  Effect.gen(function* () {
    const started = Date.now()
    const tables = new Map<string, RowTable>()
    // The schema versions the data was written with, as recorded (meaningful without the app only).
    const newerThanOne = new Set<string>()
    // With the app: data written by a newer schema than it declares, which it cannot read.
    const newer = new Map<string, number>()
    const noteSchema = (type: string, schema = 1) => {
      if (schema > 1) newerThanOne.add(type)
      const declared = catalog?.types.get(type)?.version
      if (declared !== undefined && schema > declared) newer.set(type, Math.max(newer.get(type) ?? 0, schema))
    }
    let events = 0
    // A chunk (a read batch) at a time: one effect per batch, not per event.
    yield* log.readFrom(1).pipe(
      Stream.runForEachChunk((chunk) =>
        Effect.sync(() => {
          for (const event of Chunk.toReadonlyArray(chunk)) {
            events++
            noteSchema(event.type, event.schema)
            let t = tables.get(event.type)
            if (t === undefined) tables.set(event.type, (t = new RowTable()))
            const next = evolve(t.get(event.id), event)
            if (next === undefined) t.delete(event.id)
            else t.set(next)
          }
        }))
    )
    const misfits = catalog === undefined ? [] : normaliseTables(catalog, tables, "row rebuilt from the log")
    const rebuilt = createHash("sha256")
    const rebuiltLines = new Map<string, string>()
    let rows = 0
    for (const type of [...tables.keys()].sort()) {
      for (const row of tables.get(type)!.all()) {
        const line = lineOf(type, row)
        rebuilt.update(line)
        rebuiltLines.set(`${type}/${row.id}`, line)
        rows++
      }
    }
    const stored = createHash("sha256")
    const mismatches: Array<string> = []
    let presenceOnly = true
    const storedMisfits = makeMisfits("stored row")
    let storedRows = 0
    yield* log.storedRows.pipe(
      Stream.runForEach(({ type, row: written, schema }) =>
        Effect.sync(() => {
          noteSchema(type, schema)
          let row = written
          const compiled = catalog?.types.get(type)
          if (compiled !== undefined) {
            const normalised = normaliseRow(compiled.normalise, written)
            if (Either.isLeft(normalised)) storedMisfits.add(type, written.id, normalised.left)
            else row = normalised.right
          }
          const line = lineOf(type, row)
          stored.update(line)
          storedRows++
          const key = `${type}/${row.id}`
          if (rebuiltLines.get(key) !== line) {
            if (mismatches.length < 10) mismatches.push(key)
            presenceOnly &&= differOnlyInPresence(tables.get(type)?.get(row.id), row)
          }
          rebuiltLines.delete(key)
        }))
    )
    for (const key of rebuiltLines.keys()) {
      presenceOnly = false
      if (mismatches.length < 10) mismatches.push(`${key} (missing from stored rows)`)
    }
    misfits.push(...storedMisfits.problems())
    for (const [type, written] of newer) misfits.unshift(newerSchemaProblem(type, written, catalog!.types.get(type)!.version))
    const rebuiltDigest = rebuilt.digest("hex")
    const storedDigest = stored.digest("hex")
    // A log that stores no views (PostgreSQL: each node folds them from the log at start) has none to compare.
    const views = catalog === undefined || log.storedViews === undefined ? [] : yield* compareViews(log, catalog)
    const matches = rebuiltDigest === storedDigest && misfits.length === 0 && views.every((v) => v.outcome !== "mismatch")
    const needsApp = catalog !== undefined || matches
      ? undefined
      : newerThanOne.size > 0
      ? `the log holds data written at schema versions above 1 (${[...newerThanOne].sort().join(", ")})`
      : presenceOnly
      ? `the stored rows differ from the log's fold only by fields present on one side, as defaults and removed fields leave them`
      : undefined
    return {
      events,
      rows,
      storedRows,
      rebuiltDigest,
      storedDigest,
      matches,
      mismatches,
      ...(needsApp === undefined ? {} : { needsApp }),
      misfits,
      views,
      millis: Date.now() - started
    } satisfies ReplayReport
  })
