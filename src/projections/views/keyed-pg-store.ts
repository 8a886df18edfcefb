/**
 * A PostgreSQL node's keyed view entries: stored in the `view_entries` table as snapshots (log/postgres/view-entries.ts),
 * so that a start folds only the events after the last snapshot and memory does not grow with the number of keys.
 *
 * Per generation (a view's name and definition) the node holds:
 *  - the entries it changed since its last stored snapshot (`dirty`: the tailer folds every commit into them);
 *  - `upTo`: the seq the table's entries are exact at for this node (its last stored snapshot, or the watermark it
 *    started from; 0 while the view is folded from the whole log: then every entry is in memory);
 * and, for every generation, a bounded cache of entries read from the table (clean: evictable).
 *
 * A view folded again from the log serves meanwhile its former declaration's generation, begun at the seq of its
 * last snapshot: nothing folds into it, so it reads the table as it stood then (keyed-recovery.ts).
 *
 * A read looks in that order: dirty, cache, then the table at `upTo`. The tailer folds synchronously, so
 * the keys a batch touches are read ahead in one statement (`readAhead`); a key still missing then (a race with a
 * snapshot, or an eviction) is read synchronously (sync-reads.ts), a last resort. Serving reads (`readAsync`, `range`)
 * never block the event loop.
 *
 * The snapshot (`snapshot`, called by the tailer every WO_VIEW_SNAPSHOT_EVERY events and at shutdown) copies the
 * dirty entries at the seq the node applied and stores them with the views' records in one statement; then those
 * not changed since are clean (evictable). A failed snapshot leaves them dirty.
 */
import { Effect } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { StoreError } from "../../domain/errors.ts"
import type { SnapshotEntry, ViewEntryStore, ViewEntryWrite, ViewRecord } from "../../log/event-log.ts"
import { RecordCorrupt, readFailed } from "../../log/record.ts"
import { parseViewEntry, viewEntryJson, type StoredEntry } from "../../log/view-entry-record.ts"
import { RowCache } from "../rows/row-cache.ts"
import type { KeyedRecord, KeyedSnapshots, KeyedStore } from "./keyed-store.ts"

/** An entry read as absent (never stored, or removed), cached as such: a new key's read is not sent again. */
const ABSENT: StoredEntry = { json: "", seq: -1 }
const asCached = (entry: StoredEntry): Row => entry as unknown as Row
const ofCached = (row: Row): StoredEntry => row as unknown as StoredEntry

/** Keys read per statement of a range (the table's rows, before the node's own changes are laid over them). */
const RANGE_BATCH = 256

/** How many snapshot intervals an entry's older versions are kept: a node whose last snapshot lags this far behind another's still reads its own. */
const KEEP_INTERVALS = 8

interface Generation {
  readonly name: string
  readonly definition: string
  /** Unique per generation object: its cache keys (a generation cleared and begun again shares none). */
  readonly id: number
  /** Changed since the last stored snapshot: the entry, or undefined once removed. */
  dirty: Map<string, StoredEntry | undefined>
  /** The dirty keys in order, for the pages; dropped when a key joins or leaves `dirty`. */
  sorted: Array<string> | undefined
  upTo: number
  /** Moved on at each stored snapshot: a table read sent before it may be older than what the node evicted since. */
  epoch: number
}

/** What the node holds in memory for a key: the entry, `ABSENT`, or undefined when the table must be read. */
const held = (g: Generation, cache: RowCache, key: string): StoredEntry | undefined => {
  if (g.dirty.has(key)) return g.dirty.get(key) ?? ABSENT
  if (g.upTo === 0) return ABSENT
  const cached = cache.get(`${g.id}\u0000${key}`)
  return cached === undefined ? undefined : ofCached(cached)
}

/** The index of the first key after `after` in sorted `keys`. */
const firstAfter = (keys: ReadonlyArray<string>, after: string) => {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (keys[mid] <= after) lo = mid + 1
    else hi = mid
  }
  return lo
}

const present = (entry: StoredEntry): StoredEntry | undefined => (entry === ABSENT ? undefined : entry)

/** A table text as an entry; throws RecordCorrupt. */
const entryOf = (name: string, key: string, text: string | null | undefined): StoredEntry => {
  if (text === null || text === undefined) return ABSENT
  const entry = parseViewEntry(text)
  if (entry === undefined) throw new RecordCorrupt(`corrupt record at key ${name}/${key}: not a view entry`)
  return entry
}

/** The entries of a PostgreSQL node, through a cache of `cacheBytes`; snapshots every `snapshotEvery` events. */
export const pgKeyedStore = (entries: ViewEntryStore, cacheBytes: number, snapshotEvery: number): KeyedStore & { readonly snapshots: KeyedSnapshots } => {
  const cache = new RowCache(cacheBytes)
  const generations = new Map<string, Generation>()
  let ids = 0
  let syncReads = 0
  const idOf = (name: string, definition: string) => `${name}\u0000${definition}`
  const generation = (name: string, definition: string) => {
    const id = idOf(name, definition)
    let g = generations.get(id)
    if (g === undefined) generations.set(id, (g = { name, definition, id: ++ids, dirty: new Map(), sorted: undefined, upTo: 0, epoch: 0 }))
    return g
  }
  const cacheKey = (g: Generation, key: string) => `${g.id}\u0000${key}`

  const apply = (writes: ReadonlyArray<ViewEntryWrite>) => {
    for (const w of writes) {
      const g = generation(w.name, w.definition)
      const entry = w.json === undefined ? undefined : parseViewEntry(w.json)
      if (!g.dirty.has(w.key)) g.sorted = undefined
      g.dirty.set(w.key, entry)
      cache.delete(cacheKey(g, w.key))
    }
  }

  /** Keeps what a table read sent at `epoch` found, unless a snapshot landed since or the node holds the key now. */
  const keep = (g: Generation, epoch: number, key: string, entry: StoredEntry) => {
    if (generations.get(idOf(g.name, g.definition)) !== g || g.epoch !== epoch || held(g, cache, key) !== undefined) return
    cache.set(cacheKey(g, key), asCached(entry))
  }

  const read = (name: string, definition: string, key: string): StoredEntry | undefined => {
    const g = generation(name, definition)
    const found = held(g, cache, key)
    if (found !== undefined) return present(found)
    syncReads++
    let entry: StoredEntry
    try {
      entry = entryOf(name, key, entries.readNow(name, definition, key, g.upTo))
    } catch (e) {
      throw e instanceof RecordCorrupt ? readFailed(e) : e
    }
    cache.set(cacheKey(g, key), asCached(entry))
    return present(entry)
  }

  const readAhead = (name: string, definition: string, keys: Iterable<string>) =>
    Effect.suspend(() => {
      const g = generation(name, definition)
      const wanted = new Set<string>()
      for (const key of keys) if (held(g, cache, key) === undefined) wanted.add(key)
      if (wanted.size === 0) return Effect.void
      const epoch = g.epoch
      return Effect.flatMap(entries.read(name, definition, [...wanted], g.upTo), (found) =>
        Effect.try({
          try: () => {
            for (const key of wanted) keep(g, epoch, key, entryOf(name, key, found.get(key)))
          },
          catch: readFailed
        }))
    })

  const readAsync = (name: string, definition: string, key: string) =>
    Effect.suspend(() => {
      const g = generation(name, definition)
      const found = held(g, cache, key)
      if (found !== undefined) return Effect.succeed(present(found))
      const epoch = g.epoch
      return Effect.flatMap(entries.read(name, definition, [key], g.upTo), (stored) =>
        Effect.try({
          try: () => {
            const entry = entryOf(name, key, stored.get(key))
            keep(g, epoch, key, entry)
            return present(entry)
          },
          catch: readFailed
        }))
    })

  /**
   * Up to `limit` entries after `after`: the table's keys at `upTo` with the node's own changes laid over them (a
   * removed entry hides the table's). Both are taken when the page is asked for, so the page is exact at one seq.
   */
  const range = (name: string, definition: string, after: string | undefined, limit: number) =>
    Effect.suspend(() => {
      const g = generation(name, definition)
      // Copied: a snapshot stored while the table is read must not take an entry out from under this page.
      const overlay = new Map(g.dirty)
      const sorted = g.sorted ?? (g.sorted = [...g.dirty.keys()].sort())
      const laid = after === undefined ? sorted : sorted.slice(firstAfter(sorted, after))
      const upTo = g.upTo
      const out: Array<KeyedRecord> = []
      let next = 0
      const push = (key: string, entry: StoredEntry | undefined) => {
        if (entry !== undefined && entry !== ABSENT) out.push({ key, ...entry })
      }
      /** The node's own changes up to `bound` (all when undefined); answers whether the page is full. */
      const layUpTo = (bound: string | undefined) => {
        while (next < laid.length && out.length < limit && (bound === undefined || laid[next] < bound)) {
          push(laid[next], overlay.get(laid[next]))
          next++
        }
        return out.length >= limit
      }
      const page = (cursor: string | undefined): Effect.Effect<ReadonlyArray<KeyedRecord>, StoreError> => {
        if (upTo === 0) {
          layUpTo(undefined)
          return Effect.succeed(out)
        }
        const batch = Math.max(RANGE_BATCH, limit)
        return Effect.flatMap(entries.range(name, definition, cursor, batch, upTo), (rows) =>
          Effect.suspend(() => {
            try {
              for (const row of rows) {
                if (layUpTo(row.key)) return Effect.succeed(out)
                if (overlay.has(row.key)) {
                  // The node's change of this key: laid in order by `layUpTo` (the key is in `laid`).
                  continue
                }
                push(row.key, entryOf(name, row.key, row.text))
                if (out.length >= limit) return Effect.succeed(out)
              }
            } catch (e) {
              return Effect.fail(readFailed(e))
            }
            if (rows.length < batch) {
              layUpTo(undefined)
              return Effect.succeed(out)
            }
            // The table's keys up to the last one read are merged; the overlay's keys up to it too.
            const last = rows[rows.length - 1].key
            while (next < laid.length && laid[next] <= last && out.length < limit) {
              push(laid[next], overlay.get(laid[next]))
              next++
            }
            return out.length >= limit ? Effect.succeed(out) : page(last)
          }))
      }
      return page(after)
    })

  const snapshot = (gens: ReadonlyArray<{ readonly name: string; readonly definition: string }>, records: ReadonlyArray<ViewRecord>, at: number) => {
    // Copied, not taken: should the write fail or never run (an interrupted fiber), nothing is lost.
    const taken: Array<{ readonly g: Generation; readonly entries: ReadonlyMap<string, StoredEntry | undefined> }> = []
    const writes: Array<SnapshotEntry> = []
    for (const { name, definition } of gens) {
      const g = generation(name, definition)
      const entries = new Map(g.dirty)
      taken.push({ g, entries })
      for (const [key, entry] of entries) writes.push({ name, definition, key, text: entry === undefined ? undefined : viewEntryJson(entry.seq, entry.json) })
    }
    // Stored: the table serves each generation from `at`, and an entry not changed since it was copied is clean.
    const stored = Effect.sync(() => {
      for (const { g, entries } of taken) {
        if (at <= g.upTo) continue
        g.upTo = at
        g.epoch++
        for (const [key, entry] of entries) {
          // Every change makes a new entry object: the same one means no change since (a removal stays a removal).
          if (g.dirty.get(key) !== entry) continue
          g.dirty.delete(key)
          g.sorted = undefined
          cache.set(cacheKey(g, key), asCached(entry ?? ABSENT))
        }
      }
    })
    return Effect.zipRight(entries.store(writes, records, at, Math.max(0, at - KEEP_INTERVALS * snapshotEvery)), stored)
  }

  return {
    // Entries are not written with the log's batches: the tailer folds each commit (`committed`), the snapshot stores them.
    durable: false,
    read,
    committed: apply,
    range,
    write: (writes) => Effect.sync(() => apply(writes)),
    forget: () => undefined,
    // Only this node's memory: another node may serve the generation from the table (a fold from the whole log
    // starts at `upTo` 0 and never reads it).
    clear: (name, definition) => Effect.sync(() => void generations.delete(idOf(name, definition))),
    snapshots: {
      begin: (name, definition, at) => {
        generations.delete(idOf(name, definition))
        generation(name, definition).upTo = at
      },
      readAhead,
      readAsync,
      snapshot,
      syncReads: () => syncReads
    }
  }
}
