/**
 * Restart recovery: load the stored row state (written atomically with each batch), then fold any events past
 * its checkpoint (none when the rows are exact at the head: the cost is the rows', whatever the log's length). The log it reads is the upcasting one, so both come in the current schema version. Then the
 * startup check (schema-check.ts): every row is decoded once against the app and kept in its current form,
 * or startup is refused by name. Large stores log progress so a long start is never silent.
 */
import { Effect, Either, Stream } from "effect"
import type { EventLogShape } from "../../log/event-log.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import { evolve } from "../../domain/decide/decider.ts"
import { RowTable } from "./row-table.ts"
import { goneTypeProblem, makeMisfits, newerSchemaProblem, normaliseRow, normaliseTables, SchemaMismatch } from "./schema-check.ts"

const PROGRESS_EVERY = 100_000

/**
 * What the stored data may hold: types the log knows but the app does not declare (every type that ever had a
 * create has a counter) are gone unless retired; data written with a newer schema version than the app's is
 * refused. `served` notes both and answers whether the type's data is served.
 */
export const schemaGate = (catalog: CompiledApp, counters: Iterable<string>) => {
  const gone = new Set<string>()
  const newer = new Map<string, number>()
  const served = (type: string, schema: number | undefined) => {
    const compiled = catalog.types.get(type)
    if (compiled === undefined) {
      if (!catalog.retired.has(type)) gone.add(type)
      return false
    }
    if ((schema ?? 1) > compiled.version) newer.set(type, Math.max(newer.get(type) ?? 0, schema!))
    return true
  }
  for (const type of counters) served(type, undefined)
  const refused = () => [
    ...[...gone].map(goneTypeProblem),
    ...[...newer].map(([type, written]) => newerSchemaProblem(type, written, catalog.types.get(type)!.version))
  ]
  return { served, refused }
}

export const recoverRows = (log: EventLogShape, catalog: CompiledApp) =>
  Effect.gen(function* () {
    const started = Date.now()
    const head = yield* log.head
    const tables = new Map<string, RowTable>()
    const table = (type: string) => {
      let t = tables.get(type)
      if (t === undefined) tables.set(type, (t = new RowTable()))
      return t
    }
    const { served, refused: gate } = schemaGate(catalog, head.counters.keys())
    let rows = 0
    yield* log.storedRows.pipe(
      Stream.runForEach(({ type, row, schema }) =>
        Effect.suspend(() => {
          if (served(type, schema)) table(type).set(row)
          return ++rows % PROGRESS_EVERY === 0 ? Effect.logInfo(`recovery: ${rows} rows loaded`) : Effect.void
        }))
    )
    let tailEvents = 0
    // Up to the head read above, not beyond: on a shared log the tailer follows from there (log/pinned-log.ts). Rows
    // exact at the head (stored with every batch, or on PostgreSQL read together with it) read no event at all.
    if (head.checkpoint < head.lastSeq) yield* log.readFrom(head.checkpoint + 1).pipe(
      Stream.takeWhile((event) => event.seq <= head.lastSeq),
      Stream.runForEach((event) =>
        Effect.suspend(() => {
          if (served(event.type, event.schema)) {
            const t = table(event.type)
            const next = evolve(t.get(event.id), event)
            if (next === undefined) t.delete(event.id)
            else t.set(next)
          }
          return ++tailEvents % PROGRESS_EVERY === 0 ? Effect.logInfo(`recovery: ${tailEvents} tail events folded`) : Effect.void
        }))
    )
    const refused = gate()
    if (refused.length > 0) return yield* new SchemaMismatch({ problems: refused })
    const misfits = normaliseTables(catalog, tables)
    if (misfits.length > 0) return yield* new SchemaMismatch({ problems: misfits })
    return {
      tables,
      checkpoint: head.lastSeq,
      report: { rows, events: head.lastSeq, tailEvents, millis: Date.now() - started }
    }
  })

/**
 * The startup check of a store whose rows are served from it (store-rows.ts), without holding them: every stored
 * row is read once, decoded through its type's schema and dropped. Fails with SchemaMismatch as `recoverRows` does.
 */
export const checkStoredRows = (log: EventLogShape, catalog: CompiledApp, counters: Iterable<string>) =>
  Effect.gen(function* () {
    const { served, refused: gate } = schemaGate(catalog, counters)
    const misfits = makeMisfits("stored row")
    let rows = 0
    yield* log.storedRows.pipe(
      Stream.runForEach(({ type, row, schema }) =>
        Effect.suspend(() => {
          if (served(type, schema)) {
            const normalised = normaliseRow(catalog.types.get(type)!.normalise, row)
            if (Either.isLeft(normalised)) misfits.add(type, row.id, normalised.left)
          }
          return ++rows % PROGRESS_EVERY === 0 ? Effect.logInfo(`schema check: ${rows} stored rows checked`) : Effect.void
        }))
    )
    const refused = gate()
    if (refused.length > 0) return yield* new SchemaMismatch({ problems: refused })
    const problems = misfits.problems()
    if (problems.length > 0) return yield* new SchemaMismatch({ problems })
    return rows
  })
