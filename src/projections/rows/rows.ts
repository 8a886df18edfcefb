/**
 * The rows projection: every type's current rows. The projector applies every durable commit: the writer's own
 * before any of its callers is answered (so a client always reads its own writes), and on a shared log every
 * other node's as the tailer reads it. Reads are synchronous: they are the hot path. Two holders: the embedded
 * store's rows are served from disk through a bounded cache (store-rows.ts); a node on PostgreSQL serves them from
 * the store through the same cache (cache-rows.ts); other shared logs, and `wo test`, keep them in memory
 * (`RowsLive`, loaded at start).
 */
import { Context, Effect, Layer } from "effect"
import { EventLog } from "../../log/event-log.ts"
import { Catalog } from "../../domain/app-catalog.ts"
import { makeCacheRows } from "./cache-rows.ts"
import { recoverRows } from "./recovery.ts"
import { RowTable } from "./row-table.ts"
import type { RecoveryReport, RowsShape } from "./rows-shape.ts"

export type { CachedRows, RecoveryReport, RowsShape } from "./rows-shape.ts"

export class Rows extends Context.Tag("writeonce/Rows")<Rows, RowsShape>() {}

/** Builds the in-memory projection from a set of tables (recovered or empty). */
export const makeRows = (tables: Map<string, RowTable>, checkpoint: number, recovered: RecoveryReport): RowsShape => {
  let seq = checkpoint
  const table = (type: string) => {
    let t = tables.get(type)
    if (t === undefined) tables.set(type, (t = new RowTable()))
    return t
  }
  return {
    get: (type, id) => tables.get(type)?.get(id),
    table,
    apply: (changes) => {
      for (const { event, row } of changes) {
        if (row === null) table(event.type).delete(event.id)
        else table(event.type).set(row)
        seq = event.seq
      }
    },
    checkpoint: () => seq,
    decisionsReady: Effect.void,
    recovered
  }
}

/**
 * The projection recovered from the log into memory: stored rows plus checkpoint, then the log tail, checked
 * against the app's schema (fails with SchemaMismatch when the stored data does not fit it).
 */
export const RowsLive = Layer.effect(
  Rows,
  Effect.gen(function* () {
    const log = yield* EventLog
    if (log.rowStore !== undefined) return yield* makeCacheRows(log.rowStore, yield* Catalog)
    const { tables, checkpoint, report } = yield* recoverRows(log, yield* Catalog)
    return makeRows(tables, checkpoint, report)
  })
)
