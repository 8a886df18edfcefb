/**
 * An equality index on one field of a row table: each value to the ids holding it, sorted. A filtered page
 * then reads one bucket from the cursor on (binary search) instead of scanning every row. Ids mostly grow, so
 * an insert is usually an append; a row that changes value moves between buckets in O(log n) plus a splice.
 */
import { indexAfter } from "./sorted-ids.ts"

const isIndexable = (v: unknown): v is string | number | boolean =>
  typeof v === "string" || typeof v === "number" || typeof v === "boolean"

const EMPTY: ReadonlyArray<number> = []

export class EqualityIndex {
  private readonly buckets = new Map<unknown, Array<number>>()

  /** The ids whose field equals `value`, ascending. */
  bucket(value: unknown): ReadonlyArray<number> {
    return this.buckets.get(value) ?? EMPTY
  }

  add(value: unknown, id: number): void {
    if (!isIndexable(value)) return
    let ids = this.buckets.get(value)
    if (ids === undefined) this.buckets.set(value, (ids = []))
    if (ids.length === 0 || ids[ids.length - 1] < id) ids.push(id)
    else {
      const at = indexAfter(ids, id - 1)
      if (ids[at] !== id) ids.splice(at, 0, id)
    }
  }

  remove(value: unknown, id: number): void {
    if (!isIndexable(value)) return
    const ids = this.buckets.get(value)
    if (ids === undefined) return
    const at = indexAfter(ids, id - 1)
    if (ids[at] === id) ids.splice(at, 1)
    if (ids.length === 0) this.buckets.delete(value)
  }
}
