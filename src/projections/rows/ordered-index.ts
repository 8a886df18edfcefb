/**
 * An ordered index on one field of a row table: every row's (value, id), sorted, so a page ordered by the field
 * starts at the cursor by binary search. The order is total and the same on every surface: absent values
 * first, then booleans, numbers and strings (by UTF-16 code units, not locale), ties broken by id. A cursor is
 * the last (value, id) served, so rows created during a walk never make it repeat or skip a row it already
 * passed; a row whose value changes during a walk moves, as it would in any ordered listing.
 */
import { compareValues } from "../../domain/value-order.ts"

export { compareValues }

export interface SortKey {
  readonly value: unknown
  readonly id: number
}

export const compareKeys = (a: SortKey, b: SortKey): number => compareValues(a.value, b.value) || a.id - b.id

export class OrderedIndex {
  private constructor(private readonly entries: Array<SortKey>) {}

  static empty(): OrderedIndex {
    return new OrderedIndex([])
  }

  get size() {
    return this.entries.length
  }

  at(i: number): SortKey {
    return this.entries[i]
  }

  /** Index of the first entry after `key` (0 when `key` is undefined). */
  indexAfter(key: SortKey | undefined): number {
    if (key === undefined) return 0
    let lo = 0
    let hi = this.entries.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compareKeys(this.entries[mid], key) <= 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** Index of the last entry before `key` (the last one when `key` is undefined), -1 when there is none. */
  indexBefore(key: SortKey | undefined): number {
    if (key === undefined) return this.entries.length - 1
    let lo = 0
    let hi = this.entries.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (compareKeys(this.entries[mid], key) < 0) lo = mid + 1
      else hi = mid
    }
    return lo - 1
  }

  add(value: unknown, id: number): void {
    const key = { value, id }
    this.entries.splice(this.indexAfter(key), 0, key)
  }

  remove(value: unknown, id: number): void {
    const at = this.indexBefore({ value, id }) + 1
    if (at < this.entries.length && this.entries[at].id === id) this.entries.splice(at, 1)
  }

  /** Built in one sort, for a table that already holds rows (takes ownership of `keys`). */
  static of(keys: Array<SortKey>): OrderedIndex {
    return new OrderedIndex(keys.sort(compareKeys))
  }
}
