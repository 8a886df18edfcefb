/**
 * A bounded cache of decoded rows, by store key (`WO_ROW_CACHE` bytes), evicting the least recently used first
 * (second chance: a row read or written since it was last passed keeps its place once). A row's size is estimated
 * from its fields (strings by length, anything else a word), plus the cost of the entry itself: close enough to
 * hold the process's memory near the bound, without serialising a row to weigh it.
 *
 * Hand-tuned (bench/row-cache-ab.ts): a read marks its entry instead of moving it to the Map's end. Moving it
 * (delete, then set) left a dead entry in the key's hash chain each time, which V8 drops only when it rehashes the
 * Map: in a Map grown large by created rows (a lend creates one) a hot row's lookup walked hundreds of them, and a
 * get or set cost several µs, against 0.6.
 *
 * Kept over the `lru-cache` package bounded the same way (`maxSize`, `sizeCalculation: rowBytes`): in one process
 * (bench/row-cache-lru-ab.ts, three runs) the package took 1.14 to 1.34 times this cache's CPU per operation under
 * set_price's pattern (a hot row read and written back: 0.60-0.77 µs against 0.50-0.61, medians), the read path's
 * common case, and about the same under lend's (0.98 to 1.31 times).
 */
import type { Row } from "../../domain/catalog.ts"

/** The estimated bytes a cached row takes: the entry, the object, and its values. */
export const rowBytes = (row: Row): number => {
  let bytes = 160
  for (const key in row) {
    const v = row[key]
    bytes += 24 + key.length + (typeof v === "string" ? 2 * v.length + 16 : typeof v === "object" && v !== null ? 2 * JSON.stringify(v).length + 64 : 8)
  }
  return bytes
}

interface Entry {
  row: Row
  bytes: number
  /** Read or written since eviction last passed it: it keeps its place once (moved to the end). */
  used: boolean
  /** The seq the row is exact at, where the holder tracks it (a node caching PostgreSQL's rows: cache-rows.ts); else 0. */
  at: number
}

export class RowCache {
  /** Map order is eviction order: the first entry not used since it was passed is the one evicted. */
  private readonly entries = new Map<string, Entry>()
  private used = 0
  hits = 0
  misses = 0

  constructor(readonly maxBytes: number) {}

  get bytes() {
    return this.used
  }

  get size() {
    return this.entries.size
  }

  get(key: string): Row | undefined {
    const entry = this.entries.get(key)
    if (entry === undefined) {
      this.misses++
      return undefined
    }
    this.hits++
    entry.used = true
    return entry.row
  }

  /** The row and the seq it is exact at, without counting a hit or marking it used. */
  peek(key: string): { readonly row: Row; readonly at: number } | undefined {
    return this.entries.get(key)
  }

  set(key: string, row: Row, at = 0): void {
    const bytes = rowBytes(row)
    const entry = this.entries.get(key)
    if (bytes > this.maxBytes) {
      if (entry !== undefined) this.delete(key)
      return
    }
    if (entry === undefined) this.entries.set(key, { row, bytes, used: false, at })
    else {
      // In place: the entry keeps its slot (no dead entry left in the Map), marked as used.
      this.used -= entry.bytes
      entry.row = row
      entry.bytes = bytes
      entry.used = true
      entry.at = at
    }
    this.used += bytes
    if (this.used > this.maxBytes) this.evict()
  }

  delete(key: string): void {
    const entry = this.entries.get(key)
    if (entry === undefined) return
    this.entries.delete(key)
    this.used -= entry.bytes
  }

  /**
   * Under the bound, and at least 1/16 of the rows at once: each pass walks the Map from its front, over the dead
   * entries earlier passes left there (V8 drops them only when it rehashes), so a pass per row evicted would walk
   * them on every set once the cache is full of created rows (66 µs a set at 170,000 rows).
   */
  private evict(): void {
    const atLeast = this.entries.size >> 4
    let evicted = 0
    // Map iteration visits the entries moved to the end too, unmarked by then: the loop ends.
    for (const [key, entry] of this.entries) {
      this.entries.delete(key)
      if (entry.used) {
        entry.used = false
        this.entries.set(key, entry)
        continue
      }
      this.used -= entry.bytes
      if (this.used <= this.maxBytes && ++evicted >= atLeast) return
    }
  }
}
