/**
 * The rows projection of the embedded store: rows served from classic-level through a bounded cache
 * (store-table.ts), so the data may be larger than memory and a start costs the same at any size. Startup reads
 * the head (format, checkpoint, counters, row counts), folds the tail past the checkpoint if there is one (and
 * stores it), and serves.
 *
 * Secondary indexes (log/classic-level/index-keys.ts) live in the store: the declared ones (`indexes` on an entity) are
 * registered at start and built in the background (index-backfill.ts), as are those a stop left half built;
 * an index whose type's declaration changed since it was built is cleared and built again.
 *
 * The startup schema check (every stored row decoded through its type's schema, schema-check.ts) reads every row,
 * so it runs only when the app's types differ from the ones the store was last checked against: the digest of
 * their declarations is stored (`m!schema`) once a check passes. Rows written since were written by that app.
 */
import { Effect, Layer, Stream } from "effect"
import { createHash } from "node:crypto"
import { Catalog } from "../../domain/app-catalog.ts"
import type { Row } from "../../domain/catalog.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import { StoreFailed } from "../../domain/errors.ts"
import { WoConfig } from "../../support/config.ts"
import { readFullHead, type FullHead } from "../../log/classic-level/classic-level-log.ts"
import { rowPayload } from "../../log/classic-level/level-records.ts"
import { EventLog, type EventLogShape } from "../../log/event-log.ts"
import { LevelDb, type LevelDbShape } from "../../log/classic-level/level-db.ts"
import * as K from "../../log/classic-level/log-keys.ts"
import { seal, unseal } from "../../log/record.ts"
import { checkStoredRows, schemaGate } from "./recovery.ts"
import { RowCache } from "./row-cache.ts"
import { Rows, type RowsShape } from "./rows.ts"
import { SchemaMismatch } from "./schema-check.ts"
import * as X from "../../log/classic-level/index-keys.ts"
import { encodeIndexState, storeIndexes, type StoreIndexes } from "../../log/classic-level/store-indexes.ts"
import { IndexBackfill } from "./index-backfill.ts"
import { servedFields, StoreTable, type StoreAccess } from "./store-table.ts"
import { rowAfter } from "../views/fold-rows.ts"

/** The digest of what the stored rows must fit: each type's name, schema version and fields, and the retired types. */
export const schemaDigest = (catalog: CompiledApp) =>
  createHash("sha256")
    .update(JSON.stringify([[...catalog.types.values()].map((t) => [t.name, t.version, t.fieldsJsonSchema]), [...catalog.retired].sort()]))
    .digest("hex")
    .slice(0, 32)

/** The digest of one type's declaration: its index records are computed from its rows as served under it. */
export const typeDigest = (catalog: CompiledApp, type: string) => {
  const t = catalog.types.get(type)
  return createHash("sha256").update(JSON.stringify(t === undefined ? null : [t.version, t.fieldsJsonSchema])).digest("hex").slice(0, 16)
}

/** Clears the indexes of declared types built under another declaration of their type: they are built again. */
const resetStaleIndexes = (h: LevelDbShape, catalog: CompiledApp, registry: StoreIndexes) =>
  Effect.forEach(registry.all().filter((s) => catalog.types.has(s.type) && s.schema !== typeDigest(catalog, s.type)), (s) =>
    h.write(`cannot reset the index on ${X.indexName(s.fields)} of ${s.type}`, async (db) => {
      const prefix = X.indexPrefix(s.type, s.fields)
      await db.clear({ gte: prefix, lt: X.prefixEnd(prefix) })
      const fresh = { ...s, state: "building" as const, after: 0, schema: typeDigest(catalog, s.type) }
      await db.put(X.indexMetaKey(s.type, s.fields), encodeIndexState(fresh), { sync: true })
      registry.set(fresh)
    }), { discard: true })

/** Runs the full schema check unless the store was last checked against this app's types; then records them. */
const checkSchemaOnce = (h: LevelDbShape, log: EventLogShape, catalog: CompiledApp, head: FullHead) =>
  Effect.gen(function* () {
    const digest = schemaDigest(catalog)
    const checked = yield* h.read("cannot read the schema record", async (db) => {
      const value = await db.get(K.SCHEMA_CHECKED_KEY)
      return value === undefined ? undefined : unseal(K.SCHEMA_CHECKED_KEY, value)
    })
    // Types gone from the app show in the counters: refused whatever the digest says.
    const gone = schemaGate(catalog, head.counters.keys()).refused()
    if (gone.length > 0) return yield* new SchemaMismatch({ problems: gone })
    if (checked === digest) return
    const rows = yield* checkStoredRows(log, catalog, head.counters.keys())
    if (rows > 0) yield* Effect.logInfo(`schema check: ${rows} stored rows fit the app's types (checked once per change of them)`)
    yield* h.write("cannot record the schema check", (db) => db.put(K.SCHEMA_CHECKED_KEY, seal(K.SCHEMA_CHECKED_KEY, digest), { sync: true }))
  })

/**
 * Folds the events past the checkpoint onto the stored rows and stores the result with the new checkpoint, in
 * one write (a store left that way by a tool; the server writes rows with their events). Answers how many.
 */
const foldTail = (h: LevelDbShape, log: EventLogShape, catalog: CompiledApp, head: FullHead, get: (type: string, id: string) => Row | undefined, indexes: StoreIndexes) =>
  Effect.gen(function* () {
    if (head.checkpoint >= head.lastSeq) return 0
    const { served } = schemaGate(catalog, [])
    const after = new Map<string, { readonly type: string; readonly id: string; readonly schema: number; readonly row: Row | null; readonly stored: Row | null }>()
    const counts = new Map(head.rowCounts)
    let events = 0
    yield* log.readFrom(head.checkpoint + 1).pipe(
      Stream.runForEach((event) =>
        Effect.sync(() => {
          events++
          if (!served(event.type, event.schema)) return
          const key = K.rowKey(event.type, event.id)
          const stored = after.has(key) ? after.get(key)!.stored : get(event.type, event.id) ?? null
          const before = after.has(key) ? after.get(key)!.row : stored
          const row = rowAfter(catalog, before, event)
          if (before === null && row !== null) counts.set(event.type, (counts.get(event.type) ?? 0) + 1)
          if (before !== null && row === null) counts.set(event.type, (counts.get(event.type) ?? 0) - 1)
          after.set(key, { type: event.type, id: event.id, schema: event.schema ?? 1, row, stored })
        }))
    )
    yield* h.write("cannot store the rows folded from the log tail", (db) => {
      const batch = db.batch()
      for (const [key, { type, schema, row, stored }] of after) {
        if (row === null) batch.del(key)
        else batch.put(key, seal(key, rowPayload(schema, JSON.stringify(row))))
        indexes.write(batch, type, stored, row)
      }
      for (const [type, n] of counts) batch.put(K.rowCountKey(type), seal(K.rowCountKey(type), String(n)))
      batch.put(K.CHECKPOINT_KEY, seal(K.CHECKPOINT_KEY, String(head.lastSeq)))
      return batch.write({ sync: true })
    })
    return events
  })

export const StoreRowsLive = Layer.scoped(
  Rows,
  Effect.gen(function* () {
    const started = Date.now()
    const h = yield* LevelDb
    const log = yield* EventLog
    const catalog = yield* Catalog
    const { rowCache } = yield* WoConfig
    const head = yield* h.read("cannot read the log head", readFullHead)
    yield* checkSchemaOnce(h, log, catalog, head)
    const registry = yield* storeIndexes(h)
    yield* resetStaleIndexes(h, catalog, registry)
    const db = () => {
      const current = h.current?.()
      if (current === undefined) throw new StoreFailed({ reason: "the store is closed while it reopens after a failed write" })
      return current
    }
    const indexes = new IndexBackfill({
      store: h,
      registry,
      decode: (type, key, raw, fields) => servedFields(catalog, type, key, raw, fields),
      schemaOf: (type) => typeDigest(catalog, type)
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => indexes.stop()))
    const access: StoreAccess = { db, cache: new RowCache(rowCache), catalog, indexes }
    const tables = new Map<string, StoreTable>()
    const table = (type: string) => {
      let t = tables.get(type)
      if (t === undefined) tables.set(type, (t = new StoreTable(type, access, head.rowCounts.get(type) ?? 0, head.counters.get(type) ?? 0)))
      return t
    }
    const tailEvents = yield* foldTail(h, log, catalog, head, (type, id) => table(type).get(id), registry)
    if (tailEvents > 0) {
      // The stored counts moved with the tail: start over from what is stored now.
      tables.clear()
      const counts = yield* h.read("cannot read the log head", readFullHead)
      for (const [type, n] of counts.rowCounts) tables.set(type, new StoreTable(type, access, n, counts.counters.get(type) ?? 0))
    }
    // The equality indexes a delete's reference check walks, built once before the first decision that needs them.
    const referenced = [...catalog.types.values()].flatMap((t) => t.rules.referencedBy)
    let ready = referenced.length === 0
    const decisionsReady = Effect.suspend(() =>
      ready ? Effect.void : Effect.forEach(referenced, ({ type, field }) => table(type).ensure([{ kind: "equality", field }]), { discard: true }).pipe(
        Effect.tap(() => (ready = true))
      ))
    // Declared indexes not built yet, and those a stop left half built: built in the background, writes go on.
    const pending = [
      ...[...catalog.types.values()].flatMap((t) => t.indexes.map((fields) => ({ type: t.name, fields }))),
      ...registry.all().filter((s) => s.state === "building" && catalog.types.has(s.type))
    ].filter(({ type, fields }, i, all) => !indexes.isReady(type, fields) && all.findIndex((o) => o.type === type && X.indexName(o.fields) === X.indexName(fields)) === i)
    if (pending.length > 0) {
      yield* Effect.forkScoped(Effect.forEach(pending, ({ type, fields }) => indexes.logged(type, fields), { discard: true }))
    }
    let seq = head.lastSeq
    const rows: RowsShape = {
      get: (type, id) => catalog.types.has(type) ? table(type).get(id) : undefined,
      table,
      apply: (changes) => {
        for (const change of changes) {
          table(change.event.type).apply(change)
          seq = change.event.seq
        }
      },
      checkpoint: () => seq,
      decisionsReady,
      recovered: {
        rows: [...catalog.types.keys()].reduce((n, type) => n + table(type).size, 0),
        events: head.lastSeq,
        tailEvents,
        millis: Date.now() - started
      }
    }
    return rows
  })
)
