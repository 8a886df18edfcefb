/**
 * Where keyed views' entries live, per view and definition (the generation: see log-keys.ts `w!`):
 *  - on classic-level, in the store, each entry a record of its own, read synchronously through a bounded cache (as
 *    rows are: row-cache.ts), written by the writer's batches (`AppendBatch.viewEntries`) and, for a view folded
 *    again in the background, by the fold itself;
 *  - on a PostgreSQL log, in the store's `view_entries` table, written by the node's snapshots and read through a
 *    bounded cache, the entries changed since the last snapshot held in memory (keyed-pg-store.ts);
 *  - in memory (a shared log that stores no entries: a test's), folded from the log at every start.
 */
import { Effect } from "effect"
import type { StoreError } from "../../domain/errors.ts"
import { StoreFailed } from "../../domain/errors.ts"
import type { ViewEntryWrite, ViewRecord } from "../../log/event-log.ts"
import type { LevelDbShape } from "../../log/classic-level/level-db.ts"
import * as K from "../../log/classic-level/log-keys.ts"
import { readBatches } from "../../log/classic-level/read-batches.ts"
import { readFailed, RecordCorrupt, seal, unseal } from "../../log/record.ts"
import { parseViewEntry, type StoredEntry } from "../../log/view-entry-record.ts"
import { RowCache } from "../rows/row-cache.ts"
import type { Row } from "../../domain/catalog.ts"

/** One entry and its key, as a range answers it. */
export interface KeyedRecord extends StoredEntry {
  readonly key: string
}

export interface KeyedStore {
  /** Whether entries outlive the process (classic-level); in memory they are folded again at every start. */
  readonly durable: boolean
  /** An entry, read synchronously (the embedded store, like a row); throws a StoreError it cannot be read. */
  readonly read: (name: string, definition: string, key: string) => StoredEntry | undefined
  /** A batch holding these entries is durable: what later reads see (the cache; in memory, the entries themselves). */
  readonly committed: (writes: ReadonlyArray<ViewEntryWrite>) => void
  /** Up to `limit` entries with a key after `after` (all when absent), in key order. */
  readonly range: (name: string, definition: string, after: string | undefined, limit: number) => Effect.Effect<ReadonlyArray<KeyedRecord>, StoreError>
  /** Writes entries outside the writer's batches: a view folded again in the background, before it serves. */
  readonly write: (writes: ReadonlyArray<ViewEntryWrite>) => Effect.Effect<void, StoreError>
  /** Forgets every cached entry: the store holds entries written by a batch this process did not see commit. */
  readonly forget: () => void
  /** Removes every entry of a generation (a partial fold, or the generation a new declaration replaced). */
  readonly clear: (name: string, definition: string) => Effect.Effect<void, StoreError>
  /** Present where entries are stored as snapshots of this node's fold (PostgreSQL: keyed-pg-store.ts). */
  readonly snapshots?: KeyedSnapshots
}

/** The snapshots' part of a keyed store: see keyed-pg-store.ts. */
export interface KeyedSnapshots {
  /** Starts a generation whose table entries are exact at `at` for this node (0: none; it is folded from the log). */
  readonly begin: (name: string, definition: string, at: number) => void
  /** Reads the keys this node does not hold, in one statement, ahead of a synchronous fold that needs them. */
  readonly readAhead: (name: string, definition: string, keys: Iterable<string>) => Effect.Effect<void, StoreError>
  /** An entry, read without blocking the event loop. */
  readonly readAsync: (name: string, definition: string, key: string) => Effect.Effect<StoredEntry | undefined, StoreError>
  /**
   * Copies the generations' changed entries now (exact at `at`, the seq the node applied) and answers the write that
   * stores them with `records`; once it succeeds, those not changed since are clean and the table serves them from `at`.
   */
  readonly snapshot: (generations: ReadonlyArray<{ readonly name: string; readonly definition: string }>, records: ReadonlyArray<ViewRecord>, at: number) => Effect.Effect<void, StoreError>
  /** Reads that found a key neither held nor read ahead, and waited for the table (the fold's last resort). */
  readonly syncReads: () => number
}


/** Entries read per native call of a range. */
const RANGE_BATCH = 256

const corruptEntry = (key: string) => new RecordCorrupt(`corrupt record at key ${key}: not a view entry`)

/** The entry in a stored record (checksum verified); throws RecordCorrupt. */
const decodeEntry = (storeKey: string, raw: string): StoredEntry => {
  const entry = parseViewEntry(unseal(storeKey, raw))
  if (entry === undefined) throw corruptEntry(storeKey)
  return entry
}

/** A stored entry weighed as the row cache weighs rows: its text, its seq, the entry itself. */
const asCached = (entry: StoredEntry): Row => entry as unknown as Row
const ofCached = (row: Row): StoredEntry | undefined => (row === ABSENT ? undefined : row as unknown as StoredEntry)

/**
 * Cached for a key known to have no entry (removed by a committed batch, or read and not found): the next change of
 * that key, common when entries come and go (a member's loans returned, then lent again), reads no store. Without
 * it each such change cost a native read that finds nothing: 10-16 µs a lend in bench/keyed-cpu-ab.ts's profile.
 */
const ABSENT: Row = Object.freeze({ id: "", version: 0 })

/** The entries on classic-level, through a cache of `cacheBytes`. */
export const levelKeyedStore = (h: LevelDbShape, cacheBytes: number): KeyedStore => {
  let cache = new RowCache(cacheBytes)
  const db = () => {
    const current = h.current?.()
    if (current === undefined) throw new StoreFailed({ reason: "the store is closed while it reopens after a failed write" })
    return current
  }
  return {
    durable: true,
    read: (name, definition, key) => {
      const storeKey = K.viewEntryKey(name, definition, key)
      const cached = cache.get(storeKey)
      if (cached !== undefined) return ofCached(cached)
      let raw: string | undefined
      try {
        raw = db().getSync(storeKey)
        if (raw === undefined) {
          cache.set(storeKey, ABSENT)
          return undefined
        }
        const entry = decodeEntry(storeKey, raw)
        cache.set(storeKey, asCached(entry))
        return entry
      } catch (e) {
        throw e instanceof StoreFailed ? e : readFailed(e)
      }
    },
    forget: () => {
      cache = new RowCache(cacheBytes)
    },
    committed: (writes) => {
      for (const w of writes) {
        const storeKey = K.viewEntryKey(w.name, w.definition, w.key)
        const entry = w.json === undefined ? undefined : parseViewEntry(w.json)
        cache.set(storeKey, entry === undefined ? ABSENT : asCached(entry))
      }
    },
    range: (name, definition, after, limit) =>
      h.read(`cannot read the entries of view ${name}`, async (d) => {
        const prefix = K.viewEntriesPrefix(name, definition)
        const out: Array<KeyedRecord> = []
        const it = d.iterator({ ...(after === undefined ? { gte: prefix } : { gt: prefix + after }), lt: K.viewEntriesEnd(name, definition), limit })
        await readBatches(it, (batch) => {
          for (const [storeKey, raw] of batch) out.push({ key: K.entryKeyOfViewEntryKey(storeKey, prefix), ...decodeEntry(storeKey, raw) })
          return undefined
        }, { size: () => Math.min(RANGE_BATCH, Math.max(1, limit - out.length)) })
        return out
      }),
    write: (writes) =>
      h.write("cannot store the entries of a view folded again", (d) => {
        const chained = d.batch()
        for (const w of writes) {
          const storeKey = K.viewEntryKey(w.name, w.definition, w.key)
          cache.delete(storeKey)
          if (w.json === undefined) chained.del(storeKey)
          else chained.put(storeKey, seal(storeKey, w.json))
        }
        return chained.write()
      }),
    clear: (name, definition) =>
      h.write(`cannot clear the entries of view ${name}`, (d) => d.clear({ gte: K.viewEntriesPrefix(name, definition), lt: K.viewEntriesEnd(name, definition) })).pipe(
        // Nothing cached of the cleared generation may answer after it (rare: a fold started again).
        Effect.ensuring(Effect.sync(() => void (cache = new RowCache(cacheBytes))))
      )
  }
}

/** The entries in memory (a PostgreSQL log): each generation a map, sorted for a range when it changed. */
export const memoryKeyedStore = (): KeyedStore => {
  const generations = new Map<string, { readonly entries: Map<string, StoredEntry>; sorted: Array<string> | undefined }>()
  const generation = (name: string, definition: string) => {
    const id = `${name}\u0000${definition}`
    let g = generations.get(id)
    if (g === undefined) generations.set(id, (g = { entries: new Map(), sorted: undefined }))
    return g
  }
  const apply = (writes: ReadonlyArray<ViewEntryWrite>) => {
    for (const w of writes) {
      const g = generation(w.name, w.definition)
      const entry = w.json === undefined ? undefined : parseViewEntry(w.json)
      const had = g.entries.has(w.key)
      if (entry === undefined) g.entries.delete(w.key)
      else g.entries.set(w.key, entry)
      if (had !== (entry !== undefined)) g.sorted = undefined
    }
  }
  return {
    durable: false,
    read: (name, definition, key) => generation(name, definition).entries.get(key),
    committed: apply,
    forget: () => undefined,
    range: (name, definition, after, limit) =>
      Effect.sync(() => {
        const g = generation(name, definition)
        const sorted = g.sorted ?? (g.sorted = [...g.entries.keys()].sort())
        let lo = 0
        let hi = sorted.length
        if (after !== undefined) {
          // The first key after `after`.
          while (lo < hi) {
            const mid = (lo + hi) >> 1
            if (sorted[mid] <= after) lo = mid + 1
            else hi = mid
          }
        }
        return sorted.slice(lo, lo + limit).map((key) => ({ key, ...g.entries.get(key)! }))
      }),
    write: (writes) => Effect.sync(() => apply(writes)),
    clear: (name, definition) => Effect.sync(() => void generations.delete(`${name}\u0000${definition}`))
  }
}
