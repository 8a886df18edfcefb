/**
 * The rows projection: every type's current rows. The projector applies every durable commit: the writer's own
 * before any of its callers is answered (so a client always reads its own writes), and on a shared log every
 * other node's as the tailer reads it. Reads are synchronous: they are the hot path. Two holders: the embedded
 * store's rows are served from disk through a bounded cache (store-rows.ts); a node on PostgreSQL serves them from
 * the store through the same cache (cache-rows.ts); other shared logs, and `wo test`, keep them in memory
 * (`RowsLive`, loaded at start).
 */
import { Context, Effect, Layer } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { StoreError } from "../../domain/errors.ts"
import type { Change } from "../../domain/events.ts"
import { EventLog } from "../../log/event-log.ts"
import { Catalog } from "../../domain/app-catalog.ts"
import { makeCacheRows } from "./cache-rows.ts"
import { recoverRows } from "./recovery.ts"
import type { NotHeld } from "./cache-table.ts"
import { RowTable, type RowPage, type RowTableShape } from "./row-table.ts"

export interface RowsShape {
  readonly get: (type: string, id: string) => Row | undefined
  readonly table: (type: string) => RowTableShape
  /** Applies committed changes; called by the projector (projector.ts) once they are durable. */
  readonly apply: (changes: ReadonlyArray<Change>) => void
  /** The log sequence these rows include. */
  readonly checkpoint: () => number
  /**
   * Makes ready what the writer's decisions read beyond single rows (the indexes a delete's reference check walks:
   * `table(t).idsWhere`); the writer runs it before deciding a batch. Once done, it succeeds at once.
   */
  readonly decisionsReady: Effect.Effect<void, StoreError>
  readonly recovered: RecoveryReport
  /** Present when the rows are a cache of a shared store (cache-rows.ts): what the tailer folds other nodes' commits on. */
  readonly cached?: CachedRows
}

/**
 * The rows a cache holds, without reading the store, and the store's rows read asynchronously: for the tailer
 * (tailer.ts), the reads served to callers (queries.ts) and the writer's prefetch (commands/batch-prefetch.ts).
 */
export interface CachedRows {
  /** The cached row and the seq of its last event, or undefined: nothing is read. */
  readonly peek: (type: string, id: string) => { readonly row: Row; readonly at: number } | undefined
  /** The cached row as served (undefined for no such type or a non-canonical id), or NOT_HELD: nothing is read. */
  readonly hit: (type: string, id: string) => Row | undefined | NotHeld
  /** These rows read from the store, as served, by stream key (null: none, or deleted); the live ones are cached. */
  readonly fetch: (keys: ReadonlyArray<{ readonly type: string; readonly id: string }>) => Effect.Effect<ReadonlyMap<string, Row | null>, StoreError>
  /** The ids of the live rows of `type` whose `field` equals `value`, read from the store with their rows (cached). */
  readonly fetchIdsWhere: (type: string, field: string, value: unknown) => Effect.Effect<ReadonlyArray<number>, StoreError>
  /** Up to `limit` live rows of `type` with ids after `after`, in id order, and whether more follow, read from the store. */
  readonly fetchPage: (type: string, after: number, limit: number) => Effect.Effect<RowPage, StoreError>
  /** How many rows the cache holds and their estimated bytes (bounded by `WO_ROW_CACHE`). */
  readonly held: () => { readonly rows: number; readonly bytes: number }
  /** These rows as stored now, by stream key, each with the seq of its last event; a deleted one as null. */
  readonly readNow: (keys: ReadonlyArray<{ readonly type: string; readonly id: string }>) => Effect.Effect<ReadonlyMap<string, { readonly row: Row | null; readonly at: number }>, StoreError>
  /** Reads that blocked the thread on the store: what a decision read that its prefetch had not. */
  readonly syncReads: () => number
}

export interface RecoveryReport {
  readonly rows: number
  readonly events: number
  readonly tailEvents: number
  readonly millis: number
}

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
