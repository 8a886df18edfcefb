/**
 * The rows projection of a node on PostgreSQL: a bounded cache of the store's rows (`WO_ROW_CACHE` bytes, the
 * embedded store's cache: row-cache.ts), not a replica. A start reads the head and each type's row count and
 * highest id (log/postgres/row-reads.ts), not the rows: it costs the same with a million rows as with none, and the
 * memory held is the cache's bound. Rows are read from the store when first asked for (cache-table.ts); the writer
 * applies this node's commits to the cache, the tailer the other nodes' commits to the rows the cache holds (and
 * to the rows it read for a view's fold), and drops the others it touches; another node's create is not cached
 * (tailer.ts): a node holds the rows it reads and writes, not every row the cluster writes.
 *
 * The start checks the stored types against the app (a type gone from it is refused), not every stored row: that
 * would read them all.
 */
import { Effect, Option } from "effect"
import type { CompiledApp } from "../../domain/compile.ts"
import type { Row } from "../../domain/catalog.ts"
import { StoreFailed, isStoreError } from "../../domain/errors.ts"
import { streamKey } from "../../domain/events.ts"
import { isCanonicalId } from "../../domain/ids.ts"
import type { RowStore } from "../../log/event-log.ts"
import { WoConfig } from "../../support/config.ts"
import { CacheTable, servedRowAt } from "./cache-table.ts"
import { schemaGate } from "./recovery.ts"
import { RowCache } from "./row-cache.ts"
import type { RowsShape } from "./rows-shape.ts"
import { SchemaMismatch } from "./schema-check.ts"

/** The cache's bound when no settings are composed (a runtime built by a test). */
const DEFAULT_CACHE_BYTES = 64 * 1024 * 1024

export const makeCacheRows = (store: RowStore, catalog: CompiledApp) =>
  Effect.gen(function* () {
    const started = Date.now()
    const { head, rowCounts } = yield* store.start
    const refused = schemaGate(catalog, head.counters.keys()).refused()
    if (refused.length > 0) return yield* new SchemaMismatch({ problems: refused })
    const settings = yield* Effect.serviceOption(WoConfig)
    const cache = new RowCache(Option.match(settings, { onNone: () => DEFAULT_CACHE_BYTES, onSome: (s) => s.rowCache }))
    const access = { store, cache, catalog }
    const tables = new Map<string, CacheTable>()
    const table = (type: string) => {
      let t = tables.get(type)
      if (t === undefined) tables.set(type, (t = new CacheTable(type, access, rowCounts.get(type) ?? 0)))
      return t
    }
    let seq = head.lastSeq
    const rows: RowsShape = {
      get: (type, id) => (catalog.types.has(type) ? table(type).get(id) : undefined),
      table,
      apply: (changes, followed = false) => {
        for (const change of changes) {
          table(change.event.type).apply(change, followed)
          seq = change.event.seq
        }
      },
      checkpoint: () => seq,
      decisionsReady: Effect.void,
      cached: {
        peek: (type, id) => cache.peek(streamKey(type, id)),
        hit: (type, id) => (catalog.types.has(type) ? table(type).hit(id) : undefined),
        fetch: (keys) => {
          // Only canonical ids of the app's types name a stored row: any other key is answered as none, unread.
          const wanted = keys.filter((k) => catalog.types.has(k.type) && isCanonicalId(k.id))
          const none = () => new Map(keys.map((k) => [streamKey(k.type, k.id), null] as const))
          if (wanted.length === 0) return Effect.sync(none)
          return Effect.flatMap(store.rowsNow(wanted), (found) =>
            Effect.try({
              try: () => {
                const out = new Map<string, Row | null>(none())
                for (const r of found) out.set(streamKey(r.type, r.id), table(r.type).take(r) ?? null)
                return out
              },
              catch: (e) => (isStoreError(e) ? e : new StoreFailed({ reason: `cannot read the rows: ${String(e)}` }))
            }))
        },
        fetchIdsWhere: (type, field, value) => (catalog.types.has(type) ? table(type).fetchIdsWhere(field, value) : Effect.succeed([])),
        fetchPage: (type, after, limit) => (catalog.types.has(type) ? table(type).fetchPage(after, limit) : Effect.succeed({ rows: [], more: false })),
        syncReads: store.syncReads,
        held: () => ({ rows: cache.size, bytes: cache.bytes }),
        readNow: (keys) =>
          Effect.map(store.rowsNow(keys), (found) => {
            const out = new Map<string, { readonly row: Row | null; readonly at: number }>()
            for (const r of found) out.set(streamKey(r.type, r.id), { row: r.row === null ? null : servedRowAt(catalog, r as typeof r & { readonly row: Row }), at: r.at })
            return out
          })
      },
      recovered: {
        rows: [...rowCounts.values()].reduce((a, b) => a + b, 0),
        events: head.lastSeq,
        tailEvents: 0,
        millis: Date.now() - started
      }
    }
    return rows
  })
