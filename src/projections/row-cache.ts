/**
 * A bounded LRU cache of decoded rows, by store key (`WO_ROW_CACHE` bytes). A row's size is estimated from its
 * fields (strings by length, anything else a word), plus the cost of the entry itself: close enough to hold
 * the process's memory near the bound, without serialising a row to weigh it.
 */
import type { Row } from "../domain/catalog.ts"

/** The estimated bytes a cached row takes: the entry, the object, and its values. */
export const rowBytes = (row: Row): number => {
  let bytes = 160
  for (const key in row) {
    const v = row[key]
    bytes += 24 + key.length + (typeof v === "string" ? 2 * v.length + 16 : typeof v === "object" && v !== null ? 2 * JSON.stringify(v).length + 64 : 8)
  }
  return bytes
}

export class RowCache {
  /** Map order is recency: the first entry is the least recently used. */
  private readonly entries = new Map<string, { readonly row: Row; readonly bytes: number }>()
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
    this.entries.delete(key)
    this.entries.set(key, entry)
    return entry.row
  }

  set(key: string, row: Row): void {
    this.delete(key)
    const bytes = rowBytes(row)
    if (bytes > this.maxBytes) return
    this.entries.set(key, { row, bytes })
    this.used += bytes
    if (this.used <= this.maxBytes) return
    for (const [oldest, entry] of this.entries) {
      this.entries.delete(oldest)
      this.used -= entry.bytes
      if (this.used <= this.maxBytes) return
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key)
    if (entry === undefined) return
    this.entries.delete(key)
    this.used -= entry.bytes
  }
}
