/**
 * The rows of one type served from the classic-level store: the row records the writer stores with every batch
 * (`r!<type>!<id:12>`, ids zero-padded so that key order is id order) are the read path, read through the shared
 * cache of decoded rows (row-cache.ts); nothing is loaded at start, and a page costs about the rows it returns.
 *
 * The projector applies each durable batch here (`apply`) before any caller is answered, so a client reads its own
 * writes and the writer decides against what it wrote. Filtered and ordered lists walk the store's secondary indexes
 * (log/classic-level/index-keys.ts; index-spans.ts says which index and which of its spans) once their backfill
 * (index-backfill.ts) is done, never a partial one; until then a list waits for the build or scans a bounded number
 * of rows (BUILD_FIRST_ROWS, SCAN_BUDGET_ROWS). The reference
 * checks of deletes (`idsWhere`) use in-memory equality indexes (row-indexes.ts), maintained by `apply`.
 */
import { Effect, Either } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import { DataCorrupt, isStoreError, StoreFailed, type StoreError } from "../../domain/errors.ts"
import type { Change } from "../../domain/events.ts"
import { isEquals, matchesAll } from "../../domain/list-request.ts"
import { isCanonicalId } from "../../domain/ids.ts"
import * as X from "../../log/classic-level/index-keys.ts"
import { decodeRow, READ_BATCH } from "../../log/classic-level/level-records.ts"
import { MergedKeys } from "../../log/classic-level/merged-keys.ts"
import type { Db } from "../../log/classic-level/level-db.ts"
import { forEachRecord, readBatches } from "../../log/classic-level/read-batches.ts"
import * as K from "../../log/classic-level/log-keys.ts"
import { RecordCorrupt } from "../../log/record.ts"
import { upcastRow } from "../../log/upcasting-log.ts"
import type { IndexBackfill } from "./index-backfill.ts"
import type { RowCache } from "./row-cache.ts"
import { indexFieldsFor, leadOf, spanRange, spansFor, type KeySpan } from "./index-spans.ts"
import { RowIndexes, type IndexSpec, type RowPage, type RowQuery } from "./row-indexes.ts"
import type { RowTableShape } from "./row-table.ts"
import { normaliseRow } from "./schema-check.ts"
import { indexAfter } from "./sorted-ids.ts"

export interface StoreAccess {
  /** The open database (throws StoreError while it is closed for a reopen). */
  readonly db: () => Db
  readonly cache: RowCache
  readonly catalog: CompiledApp
  /** The store's secondary indexes: their state, and their backfill. */
  readonly indexes: IndexBackfill
}

export { indexFieldsFor } from "./index-spans.ts"

/**
 * A table of at most this many rows builds a missing index before it answers a list that needs it, rather than
 * scanning: four 128-row chunks of backfill, for a whole page (bench/scan-budget.ts: a median of 12.5 ms for the
 * first page, build included, on 2 cores shared at load 10).
 */
export const BUILD_FIRST_ROWS = 500

/**
 * The most rows a filtered page reads while its index is being built: it reads from the cursor on until it holds
 * `limit` matches, then one more match (to tell whether more follow), or until it has read this many rows, and then
 * answers what it found, with a cursor after the last row read. A budget of rows, not of time, so that the same
 * request on the same rows gives the same page, whatever the load. Each row is checked on its stored fields, and only
 * the matching ones are decoded in full: a whole budget took a median of 20 ms on 2 cores shared at load 10, where
 * an unfiltered page from the row cache took 0.2 ms (bench/scan-budget.ts); it is paid only while an index is built.
 * A table of up to this many rows is never answered a partial page.
 */
export const SCAN_BUDGET_ROWS = 5_000

/**
 * A range filter's page in id order first scans this many pages' worth of rows: a range holding about a tenth of
 * the rows or more fills its page there, about as cheaply as an equality's index walk; a narrower one reads its index.
 */
const RANGE_PROBE_PAGES = 10

/**
 * A range in id order with at most this many distinct values is walked as a set of them (one seek each to find
 * them); one with more is read as `rangeById` says.
 */
const RANGE_VALUES = 32

/** Bytes a scan's iterator buffers per read of the store: a few hundred rows, so that a scan takes a few turns. */
const SCAN_READ_BYTES = 256 * 1024

const specKey = (spec: IndexSpec) => spec.kind === "composite" ? `c\u0000${spec.filter}\u0000${spec.order}` : `${spec.kind[0]}\u0000${spec.field}`

const unavailable = (what: string) => (e: unknown) =>
  isStoreError(e) ? e : e instanceof RecordCorrupt ? new DataCorrupt({ reason: e.message }) : new StoreFailed({ reason: `${what}: ${e instanceof Error ? e.message : String(e)}` })

/** A stored row record as served: verified, upcast to the current schema version, normalised (defaults applied). */
export const servedRow = (catalog: CompiledApp, type: string, key: string, raw: string): Row => {
  try {
    const stored = upcastRow(catalog, decodeRow(key, raw))
    const compiled = catalog.types.get(type)
    const normalised = compiled === undefined ? undefined : normaliseRow(compiled.normalise, stored.row)
    return normalised !== undefined && Either.isRight(normalised) ? normalised.right : stored.row
  } catch (e) {
    throw unavailable(`cannot read the stored row ${key}`)(e)
  }
}

/**
 * A stored row record with its values of `fields` as served: the record as stored when it was written under the
 * type's current version and holds every one of them (upcasting and defaults change nothing then; the common case,
 * and several times cheaper), else the row as served.
 */
export const servedFields = (catalog: CompiledApp, type: string, key: string, raw: string, fields: ReadonlyArray<string>): Row => {
  const compiled = catalog.types.get(type)
  if (compiled !== undefined) {
    let stored
    try {
      stored = decodeRow(key, raw)
    } catch (e) {
      throw unavailable(`cannot read the stored row ${key}`)(e)
    }
    if ((stored.schema ?? 1) === compiled.version && fields.every((f) => stored.row[f] !== undefined)) return stored.row
  }
  return servedRow(catalog, type, key, raw)
}

export class StoreTable extends RowIndexes implements RowTableShape {
  private count: number
  /** The highest id this type may hold: the synchronous page probes ids up to it. */
  private highest: number
  private readonly start: string
  private readonly end: string
  /** Index builds in flight, by spec: the changes applied since each began. */
  private readonly building = new Map<string, { readonly changes: Array<Change>; readonly done: Promise<void> }>()

  constructor(private readonly type: string, private readonly access: StoreAccess, count: number, highest: number) {
    super()
    this.count = count
    this.highest = highest
    this.start = `${K.ROWS_START}${type}!`
    this.end = `${K.ROWS_START}${type}!~`
  }

  get size() {
    return this.count
  }

  get(id: string): Row | undefined {
    // Any other spelling of an id ("01", "+1") names no row, decided here for every surface's read before a key is
    // built: the store keys rows by the canonical spelling only.
    if (!isCanonicalId(id)) return undefined
    const key = K.rowKey(this.type, id)
    const cached = this.access.cache.get(key)
    if (cached !== undefined) return cached
    let raw: string | undefined
    try {
      raw = this.access.db().getSync(key)
    } catch (e) {
      throw unavailable(`cannot read row ${this.type}/${id}`)(e)
    }
    if (raw === undefined) return undefined
    const row = this.decode(key, raw)
    this.access.cache.set(key, row)
    return row
  }

  /** A stored record as served: verified, upcast to the current schema version, normalised (defaults applied). */
  private decode(key: string, raw: string): Row {
    return servedRow(this.access.catalog, this.type, key, raw)
  }

  /** Makes a durable change visible: the cache, the count, the built indexes (and those being built). */
  apply(change: Change): void {
    const { event, row, before } = change
    const key = K.rowKey(this.type, event.id)
    const n = Number(event.id)
    if (row === null) {
      this.access.cache.delete(key)
      if (before !== null) this.count--
    } else {
      this.access.cache.set(key, row)
      if (before === null) this.count++
      if (n > this.highest) this.highest = n
    }
    this.reindex(n, before ?? undefined, row ?? undefined)
    // Builds share one change list per scan: pushed once per scan.
    if (this.building.size > 0) for (const changes of new Set([...this.building.values()].map((b) => b.changes))) changes.push(change)
  }

  /** Up to `limit` rows with ids after `after`, read synchronously: each id in turn, up to the highest one. */
  page(after: number, limit: number): RowPage {
    const rows: Array<Row> = []
    for (let n = after + 1; n <= this.highest; n++) {
      const row = this.get(String(n))
      if (row === undefined) continue
      if (rows.length === limit) return { rows, more: true }
      rows.push(row)
    }
    return { rows, more: false }
  }

  read(query: RowQuery): Effect.Effect<RowPage, StoreError> {
    const fields = indexFieldsFor(query)
    if (fields === undefined) return this.walk(query)
    const { indexes } = this.access
    if (indexes.isReady(this.type, fields)) return this.listWalk(fields, query)
    // An order needs every row before its first page, and a small table is built at once: that list waits for the index.
    if (query.order.field !== "id" || this.count <= BUILD_FIRST_ROWS) {
      return Effect.zipRight(indexes.ready(this.type, fields), this.listWalk(fields, query))
    }
    // The backfill starts once this page is read: the first page does not share the thread with its first chunk.
    return Effect.zipLeft(this.scan(query), indexes.start(this.type, fields))
  }

  /**
   * A filtered page in id order while its index is being built: the type's rows from the cursor on, each checked
   * against every filter, until the page is full (and one more match is found) or `SCAN_BUDGET_ROWS` rows were read.
   * The rows and their order are the index's (it holds the rows whose values equal the lead filter's, by id, checked
   * the same way). A scan that stops at its budget answers the rows found so far and continues after the last row it
   * read; with fewer than `limit` rows (maybe none), the page is `partial`.
   */
  private scan({ where, order, after, limit }: RowQuery, rowBudget = SCAN_BUDGET_ROWS): Effect.Effect<RowPage, StoreError> {
    const fields = where.map((f) => f.field)
    const { cache, catalog } = this.access
    return Effect.tryPromise({
      try: async () => {
        // Each read of the store is a turn that the backfill's chunks and other requests may take.
        const budget = Math.max(rowBudget, limit + 1)
        const it = this.access.db().iterator(Object.assign(this.rangeAfter(order.descending, after?.id), { limit: budget + 1, highWaterMarkBytes: SCAN_READ_BYTES }))
        const rows: Array<Row> = []
        let scanned = 0
        let last = ""
        const page = await readBatches(it, (entries): RowPage | undefined => {
          for (const [key, raw] of entries) {
            if (scanned === budget) {
              const resume = { id: K.idOfRowKey(last), value: undefined }
              return rows.length < limit ? { rows, more: true, resume, partial: true } : { rows, more: true, resume }
            }
            scanned++
            last = key
            // The applied row when it is cached (as the index path serves it), else the stored one, decoded in
            // full only when it matches.
            let row = cache.get(key)
            if (row === undefined) {
              if (!matchesAll(where, servedFields(catalog, this.type, key, raw, fields))) continue
              row = this.decode(key, raw)
              cache.set(key, row)
            }
            if (!matchesAll(where, row)) continue
            if (rows.length === limit) return { rows, more: true }
            rows.push(row)
          }
          return undefined
        }, { closeQuietly: true })
        return page ?? { rows, more: false }
      },
      catch: unavailable(`cannot read the rows of ${this.type}`)
    })
  }

  /**
   * The key range of the rows after the cursor's id, in the page's direction: a fresh object per call, which a read
   * adds its options to with Object.assign (a spread of it followed by more keys makes a new hidden class per call
   * on Node 20: edge-types.ts `jsonText`).
   */
  private rangeAfter(descending: boolean, id: number | undefined) {
    return descending
      ? { gte: this.start, lt: id === undefined ? this.end : K.rowKey(this.type, String(id)), reverse: true }
      : { gt: id === undefined ? this.start : K.rowKey(this.type, String(id)), lt: this.end }
  }

  /** A filtered or ordered page from the index on `fields` (index-spans.ts says which index and which spans). */
  private listWalk(fields: ReadonlyArray<string>, query: RowQuery): Effect.Effect<RowPage, StoreError> {
    const lead = leadOf(query.where)
    if (lead?.kind !== "range" || query.order.field !== "id") return this.indexWalk(fields, query)
    // A range of few distinct values is a set of them: each value's keys are in id order, merged as a set's are.
    return Effect.flatMap(this.rangeValues(fields, query), (spans) => spans === undefined ? this.rangeById(fields, query) : this.indexWalk(fields, query, spans))
  }

  /**
   * The spans of the distinct values in a range's span of the index on `fields` (one seek each), ascending;
   * undefined when it holds more than RANGE_VALUES of them.
   */
  private rangeValues(fields: ReadonlyArray<string>, { where }: RowQuery): Effect.Effect<ReadonlyArray<KeySpan> | undefined, StoreError> {
    return Effect.tryPromise({
      try: async () => {
        const range = spanRange(spansFor(this.type, fields, where)[0], undefined, false)
        if (range === undefined) return []
        const it = this.access.db().keys(range)
        try {
          const spans: Array<KeySpan> = []
          for (;;) {
            const [key] = await it.nextv(1)
            if (key === undefined) return spans
            if (spans.length === RANGE_VALUES) return undefined
            const base = X.baseOfIndexKey(key)
            spans.push({ base, low: base, high: X.prefixEnd(base) })
            it.seek(X.prefixEnd(base))
          }
        } finally {
          await it.close().catch(() => undefined)
        }
      },
      catch: unavailable(`cannot read the rows of ${this.type}`)
    })
  }

  /**
   * A filtered or ordered page: the spans of the index on `fields` (one per value of a set, merged in the list's
   * order), from the cursor on, each entry's row read through the cache and checked against every filter.
   */
  private indexWalk(
    fields: ReadonlyArray<string>,
    { where, order, after, limit }: RowQuery,
    spans: ReadonlyArray<KeySpan> = spansFor(this.type, fields, where)
  ): Effect.Effect<RowPage, StoreError> {
    const cursor = after === undefined ? undefined : (order.field === "id" ? "" : X.encodeValue(after.value)) + X.idPart(after.id)
    // A walk checking a range, set or null test row by row may read many entries per match (a range in another
    // field's order reads that order's whole index): it stops at SCAN_BUDGET_ROWS entries, as a scan does, and the
    // next page goes on after the last entry read. Equality alone narrows its walk to its matches: unbounded, as ever.
    const budget = where.every(isEquals) ? Infinity : Math.max(SCAN_BUDGET_ROWS, limit + 1)
    const prefixLength = X.indexPrefix(this.type, fields).length
    /** Where a walk stopped at its budget resumes: after this entry, in the list's order (its last field). */
    const resumeAt = (key: string) => {
      let at = prefixLength
      for (let i = 1; i < fields.length; i++) at = X.decodeValueAt(key, at).end
      return { id: X.idOfIndexKey(key), value: order.field === "id" ? undefined : X.decodeValueAt(key, at).value }
    }
    return Effect.tryPromise({
      try: async () => {
        const db = this.access.db()
        const sources = spans.flatMap((span) => {
          const range = spanRange(span, cursor, order.descending)
          return range === undefined ? [] : [{ it: db.keys(range), skip: span.base.length }]
        })
        if (sources.length === 0) return { rows: [], more: false }
        const keys = sources.length === 1 ? sources[0].it : new MergedKeys(sources, order.descending)
        const rows: Array<Row> = []
        let read = 0
        let last = ""
        const page = await readBatches(keys, async (batch): Promise<RowPage | undefined> => {
          const found = await this.rowsOf(batch.map(X.idOfIndexKey))
          for (let i = 0; i < batch.length; i++) {
            if (read === budget) {
              const resume = resumeAt(last)
              return rows.length < limit ? { rows, more: true, resume, partial: true } : { rows, more: true, resume }
            }
            read++
            last = batch[i]
            const row = found[i]
            // A row not applied yet may still be cached as it was: the filters are checked on the row served.
            if (row === undefined || !matchesAll(where, row)) continue
            if (rows.length === limit) return { rows, more: true }
            rows.push(row)
          }
          return undefined
        }, { size: () => Math.min(READ_BATCH, Math.max(32, limit + 1 - rows.length)), closeQuietly: true })
        return page ?? { rows, more: false }
      },
      catch: unavailable(`cannot read the rows of ${this.type}`)
    })
  }

  /**
   * A page in id order of the rows in a range of a field (its index on `fields` ready). A dense range fills its page
   * from a short scan of the rows in id order; else the range's span of the index is read, up to SCAN_BUDGET_ROWS
   * ids, and when it ends within them its ids are sorted and served exactly; a range wider than that is dense enough
   * for the bounded scan (SCAN_BUDGET_ROWS rows, then a partial page that goes on after the last row read).
   */
  private rangeById(fields: ReadonlyArray<string>, query: RowQuery): Effect.Effect<RowPage, StoreError> {
    return Effect.flatMap(this.scan(query, RANGE_PROBE_PAGES * (query.limit + 1)), (probe) => {
      if (probe.resume === undefined) return Effect.succeed(probe)
      return Effect.flatMap(this.rangeIds(fields, query), (ids) => (ids === undefined ? this.scan(query) : this.idsPage(ids, query)))
    })
  }

  /** The ids of the range's span, ascending; undefined when it holds more than SCAN_BUDGET_ROWS. */
  private rangeIds(fields: ReadonlyArray<string>, { where }: RowQuery): Effect.Effect<Array<number> | undefined, StoreError> {
    return Effect.tryPromise({
      try: async () => {
        const range = spanRange(spansFor(this.type, fields, where)[0], undefined, false)
        if (range === undefined) return []
        const ids: Array<number> = []
        const over = await readBatches(this.access.db().keys({ ...range, limit: SCAN_BUDGET_ROWS + 1 }), (keys) => {
          for (const key of keys) ids.push(X.idOfIndexKey(key))
          return ids.length > SCAN_BUDGET_ROWS ? true : undefined
        }, { closeQuietly: true })
        return over === true ? undefined : ids.sort((a, b) => a - b)
      },
      catch: unavailable(`cannot read the rows of ${this.type}`)
    })
  }

  /** A page of the rows with these ids (ascending), after the cursor in the page's direction, checked against every filter. */
  private idsPage(ids: ReadonlyArray<number>, { where, order, after, limit }: RowQuery): Effect.Effect<RowPage, StoreError> {
    return Effect.tryPromise({
      try: async () => {
        // The ids still to read: [from, to), taken from the front ascending, from the back descending.
        let from = after === undefined || order.descending ? 0 : indexAfter(ids, after.id)
        let to = after === undefined || !order.descending ? ids.length : indexAfter(ids, after.id - 1)
        const next = (n: number) => {
          if (!order.descending) return ids.slice(from, (from = Math.min(to, from + n)))
          const start = Math.max(from, to - n)
          const chunk = ids.slice(start, to).reverse()
          to = start
          return chunk
        }
        const rows: Array<Row> = []
        for (;;) {
          const chunk = next(Math.max(32, limit + 1 - rows.length))
          if (chunk.length === 0) return { rows, more: false }
          for (const row of await this.rowsOf(chunk)) {
            if (row === undefined || !matchesAll(where, row)) continue
            if (rows.length === limit) return { rows, more: true }
            rows.push(row)
          }
        }
      },
      catch: unavailable(`cannot read the rows of ${this.type}`)
    })
  }

  /** The rows with these ids as served: the cached ones, the others in one read of the store. */
  private async rowsOf(ids: ReadonlyArray<number>): Promise<Array<Row | undefined>> {
    const { cache } = this.access
    const keys = ids.map((id) => K.rowKey(this.type, String(id)))
    const rows: Array<Row | undefined> = keys.map((key) => cache.get(key))
    const missing = keys.filter((_, i) => rows[i] === undefined)
    if (missing.length === 0) return rows
    const stored = new Map<string, string | undefined>()
    ;(await this.access.db().getMany(missing)).forEach((raw, i) => stored.set(missing[i], raw))
    return rows.map((row, i) => {
      if (row !== undefined) return row
      const raw = stored.get(keys[i])
      if (raw === undefined) return undefined
      const decoded = this.decode(keys[i], raw)
      cache.set(keys[i], decoded)
      return decoded
    })
  }

  /** Builds the indexes not built yet, in one scan of the type's rows (a caller asking for one being built waits for it). */
  ensure(specs: ReadonlyArray<IndexSpec>): Effect.Effect<void, StoreError> {
    return Effect.tryPromise({
      try: () => {
        const missing = specs.filter((spec) => !this.has(spec))
        const waits = missing.flatMap((spec) => this.building.get(specKey(spec))?.done ?? [])
        const fresh = missing.filter((spec) => !this.building.has(specKey(spec)))
        return Promise.all([...waits, ...(fresh.length === 0 ? [] : [this.scanInto(fresh)])])
      },
      catch: unavailable(`cannot build an index of ${this.type}`)
    }).pipe(Effect.asVoid)
  }

  private scanInto(specs: ReadonlyArray<IndexSpec>): Promise<void> {
    const changes: Array<Change> = []
    const done = (async () => {
      const builds = specs.map((spec) => this.indexBuild(spec))
      await forEachRecord(this.access.db().iterator({ gte: this.start, lt: this.end }), ([k, raw]) => {
        const row = this.decode(k, raw)
        for (const b of builds) b.add(row)
      }, { closeQuietly: true })
      specs.forEach((spec, i) => {
        builds[i].install()
        for (const c of changes) this.replay(spec, Number(c.event.id), c.before ?? undefined, c.row ?? undefined)
      })
    })().finally(() => specs.forEach((spec) => this.building.delete(specKey(spec))))
    for (const spec of specs) this.building.set(specKey(spec), { changes, done })
    return done
  }

  /** An unfiltered page in id order: the key range from the cursor on, one read of `limit + 1` records. */
  private walk({ order, after, limit }: RowQuery): Effect.Effect<RowPage, StoreError> {
    return Effect.tryPromise({
      try: async () => {
        // nextv answers what it has buffered, maybe fewer than asked: read until the range or the limit ends.
        const entries: Array<[string, string]> = []
        await readBatches(this.access.db().iterator(Object.assign(this.rangeAfter(order.descending, after?.id), { limit: limit + 1 })), (more) => {
          entries.push(...more)
          return entries.length > limit ? true : undefined
        }, { size: () => limit + 1 - entries.length, closeQuietly: true })
        return entries
      },
      catch: unavailable(`cannot read the rows of ${this.type}`)
    }).pipe(Effect.flatMap((entries) =>
      Effect.try({
        try: () => {
          const rows = entries.slice(0, limit).map(([key, raw]) => {
            const cached = this.access.cache.get(key)
            if (cached !== undefined) return cached
            const row = this.decode(key, raw)
            this.access.cache.set(key, row)
            return row
          })
          return { rows, more: entries.length > limit }
        },
        catch: unavailable(`cannot read the rows of ${this.type}`)
      })))
  }

  protected rowAt(id: number): Row | undefined {
    return this.get(String(id))
  }

  protected build(spec: IndexSpec): void {
    throw new StoreFailed({ reason: `the ${specKey(spec).replace(/\u0000/g, " ")} index of ${this.type} is read before it was built` })
  }
}
