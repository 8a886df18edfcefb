/**
 * The rows of one type on a node that caches the PostgreSQL store (cache-rows.ts): read through the shared bounded
 * cache of decoded rows (row-cache.ts), a miss read from the store by (type, id) (log/postgres/row-reads.ts), as
 * the embedded store's tables read classic-level (store-table.ts). Lists are read from the store in their order.
 *
 * Each cached row carries the seq of its last event (`at`). A change is applied to the cache only when the cache
 * holds the row it starts from, or this node created the row (its event holds every field); any other change of a
 * row drops it, and the next read fetches it. Another node's create is left to the store: the cache holds what
 * this node reads and writes. A change at or before a cached row's `at` is in it already (the row was
 * read after that commit, ahead of this node's tailer) and is skipped.
 *
 * Reads served to callers await the store (cache-rows.ts `fetch`: queries.ts); so does the writer, which reads what a batch needs
 * before it decides it (cache-rows.ts `fetch`, `fetchIdsWhere` here: commands/batch-prefetch.ts). The synchronous `get` and
 * `idsWhere` read the store only for what a decision reads that was not read ahead, blocking the thread for that
 * round trip (counted: log/postgres/row-reads.ts `syncReads`).
 */
import { Effect, Either } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import { StoreFailed, isStoreError, type StoreError } from "../../domain/errors.ts"
import { streamKey, type Change } from "../../domain/events.ts"
import { isCanonicalId } from "../../domain/ids.ts"
import { matchesAll } from "../../domain/list-request.ts"
import type { RowAt, RowStore } from "../../log/event-log.ts"
import { upcastRow } from "../../log/upcasting-log.ts"
import type { RowCache } from "./row-cache.ts"
import type { RowPage, RowQuery } from "./row-indexes.ts"
import type { RowTableShape } from "./row-table.ts"
import { normaliseRow } from "./schema-check.ts"

export interface CacheAccess {
  readonly store: RowStore
  readonly cache: RowCache
  readonly catalog: CompiledApp
}

/** A stored row as served: upcast to the type's current schema version, normalised (defaults applied). */
export const servedRowAt = (catalog: CompiledApp, r: RowAt & { readonly row: Row }): Row => {
  try {
    const stored = upcastRow(catalog, { type: r.type, row: r.row, schema: r.schema })
    const compiled = catalog.types.get(r.type)
    const normalised = compiled === undefined ? undefined : normaliseRow(compiled.normalise, stored.row)
    return normalised !== undefined && Either.isRight(normalised) ? normalised.right : stored.row
  } catch (e) {
    throw isStoreError(e) ? e : new StoreFailed({ reason: `cannot read the stored row ${r.type}/${r.id}: ${e instanceof Error ? e.message : String(e)}` })
  }
}

/** A row the cache does not hold: only the store knows it. */
export const NOT_HELD: unique symbol = Symbol("not held")
export type NotHeld = typeof NOT_HELD

export class CacheTable implements RowTableShape {
  private count: number

  constructor(private readonly type: string, private readonly access: CacheAccess, count: number) {
    this.count = count
  }

  get size() {
    return this.count
  }

  get(id: string): Row | undefined {
    // Any other spelling of an id ("01") names no row: the store keys rows by the canonical spelling only.
    if (!isCanonicalId(id)) return undefined
    const key = streamKey(this.type, id)
    const cached = this.access.cache.get(key)
    if (cached !== undefined) return cached
    const stored = this.access.store.rowSync(this.type, id)
    return stored === undefined ? undefined : this.take(stored)
  }

  /** The cached row, or NOT_HELD: nothing is read. */
  hit(id: string): Row | undefined | NotHeld {
    if (!isCanonicalId(id)) return undefined
    return this.access.cache.get(streamKey(this.type, id)) ?? NOT_HELD
  }

  /** The ids of the live rows whose `field` equals `value`, read from the store with their rows, which are cached. */
  fetchIdsWhere(field: string, value: unknown): Effect.Effect<ReadonlyArray<number>, StoreError> {
    return Effect.flatMap(this.access.store.rowsWhere(this.type, field, value), (stored) =>
      this.served(() => {
        const ids: Array<number> = []
        for (const r of stored) if (this.take(r) !== undefined) ids.push(Number(r.id))
        return ids
      }))
  }

  /** Runs `f` on rows read from the store: a row that cannot be served (an upcast that throws) fails as a StoreError. */
  served<A>(f: () => A): Effect.Effect<A, StoreError> {
    return Effect.try({ try: f, catch: (e) => (isStoreError(e) ? e : new StoreFailed({ reason: `cannot read the rows of ${this.type}: ${String(e)}` })) })
  }

  /**
   * A row read from the store, as served: the cached one when it is as recent (the tailer may have applied more than
   * the read saw, never less than the cache holds), else the one read, cached. Undefined for a deleted row.
   */
  take(stored: RowAt): Row | undefined {
    const key = streamKey(this.type, stored.id)
    const cached = this.access.cache.peek(key)
    if (cached !== undefined && cached.at >= stored.at) return cached.row
    if (stored.row === null) {
      this.access.cache.delete(key)
      return undefined
    }
    const row = servedRowAt(this.access.catalog, stored as RowAt & { readonly row: Row })
    this.access.cache.set(key, row, stored.at)
    return row
  }

  /**
   * Makes a durable change visible here: the count, and the cache as the header says. `followed`: another node's
   * commit (the tailer's): its create is not cached, since nothing on this node asked for the row.
   */
  apply(change: Change, followed = false): void {
    const { event, row, before } = change
    if (event.kind === "created") this.count++
    else if (event.kind === "deleted") this.count--
    const key = streamKey(this.type, event.id)
    const cached = this.access.cache.peek(key)
    if (cached !== undefined && cached.at >= event.seq) return
    // Nothing to drop either: ids are never given twice, so the cache holds no older row under this key.
    if (followed && event.kind === "created") return
    // A change folded from a row this node did not hold has no `before` (the tailer's, tailer.ts): its row is partial.
    if (row !== null && (event.kind === "created" || (before != null && before.version === event.version - 1))) {
      this.access.cache.set(key, row, event.seq)
    } else this.access.cache.delete(key)
  }

  page(after: number, limit: number): RowPage {
    const { rows, more } = this.access.store.pageSync(this.type, after, limit)
    const served: Array<Row> = []
    for (const r of rows) {
      const row = this.take(r)
      if (row !== undefined) served.push(row)
    }
    return { rows: served, more }
  }

  /** `page`, awaiting the store (MCP's resources/list: queries.ts). */
  fetchPage(after: number, limit: number): Effect.Effect<RowPage, StoreError> {
    return Effect.flatMap(this.access.store.page(this.type, after, limit), ({ rows, more }) =>
      this.served(() => {
        const served: Array<Row> = []
        for (const r of rows) {
          const row = this.take(r)
          if (row !== undefined) served.push(row)
        }
        return { rows: served, more }
      }))
  }

  read(query: RowQuery): Effect.Effect<RowPage, StoreError> {
    const { where, order, after, limit } = query
    return Effect.flatMap(
      this.access.store.list(this.type, { where, order, ...(after === undefined ? {} : { after }), limit }),
      (stored) =>
        this.served(() => {
          const rows: Array<Row> = []
          for (const r of stored.slice(0, limit)) {
            // The cached row may be more recent than the list's read: its filters are checked on the row served.
            const row = this.take(r)
            if (row !== undefined && matchesAll(where, row)) rows.push(row)
          }
          return { rows, more: stored.length > limit }
        })
    )
  }

  idsWhere(field: string, value: unknown): ReadonlyArray<number> {
    return this.access.store.idsWhereSync(this.type, field, value)
  }
}
