/**
 * What the rows projection offers its readers and the writer (rows.ts holds its Tag and in-memory form): the rows
 * by type and id, what a cache of a shared store adds, and what startup recovered.
 */
import type { Effect } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { StoreError } from "../../domain/errors.ts"
import type { Change } from "../../domain/events.ts"
import type { NotHeld } from "./cache-table.ts"
import type { RowPage, RowTableShape } from "./row-table.ts"

export interface RowsShape {
  readonly get: (type: string, id: string) => Row | undefined
  readonly table: (type: string) => RowTableShape
  /**
   * Applies committed changes; called by the projector (projector.ts) once they are durable. `followed`: other
   * nodes' commits, read from a shared log by the tailer: a cache builds no row it does not hold from them (a read
   * fetches it from the store when asked for).
   */
  readonly apply: (changes: ReadonlyArray<Change>, followed?: boolean) => void
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
