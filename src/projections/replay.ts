/**
 * `wo replay`: rebuild every row from the log alone and compare it, by digest, with the stored row state.
 * It needs no app definition: events carry their data, and `evolve` is the same for every type.
 */
import { Effect, Stream } from "effect"
import { createHash } from "node:crypto"
import type { Row } from "../domain/catalog.ts"
import { evolve } from "../domain/decider.ts"
import type { EventLogShape } from "../commands/event-log.ts"
import { RowTable } from "./row-table.ts"

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
  readonly millis: number
}

export const replay = (log: EventLogShape) =>
  Effect.gen(function* () {
    const started = Date.now()
    const tables = new Map<string, RowTable>()
    let events = 0
    yield* log.readFrom(1).pipe(
      Stream.runForEach((event) =>
        Effect.sync(() => {
          events++
          let t = tables.get(event.type)
          if (t === undefined) tables.set(event.type, (t = new RowTable()))
          const next = evolve(t.get(event.id), event)
          if (next === undefined) t.delete(event.id)
          else t.set(next)
        }))
    )
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
    let storedRows = 0
    yield* log.storedRows.pipe(
      Stream.runForEach(({ type, row }) =>
        Effect.sync(() => {
          const line = lineOf(type, row)
          stored.update(line)
          storedRows++
          const key = `${type}/${row.id}`
          if (rebuiltLines.get(key) !== line && mismatches.length < 10) mismatches.push(key)
          rebuiltLines.delete(key)
        }))
    )
    for (const key of rebuiltLines.keys()) if (mismatches.length < 10) mismatches.push(`${key} (missing from stored rows)`)
    const rebuiltDigest = rebuilt.digest("hex")
    const storedDigest = stored.digest("hex")
    return {
      events,
      rows,
      storedRows,
      rebuiltDigest,
      storedDigest,
      matches: rebuiltDigest === storedDigest,
      mismatches,
      millis: Date.now() - started
    } satisfies ReplayReport
  })
