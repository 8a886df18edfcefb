/**
 * The rows of one type, in memory: a Map for O(1) reads and the sorted ids for cursor pages. Ids only grow, so
 * a new row always sorts last and a page walk never loses or repeats one while rows are being created.
 */
import type { Row } from "../domain/catalog.ts"

export class RowTable {
  private readonly byId = new Map<string, Row>()
  private readonly ids: Array<number> = []

  get size() {
    return this.ids.length
  }

  get(id: string): Row | undefined {
    return this.byId.get(id)
  }

  set(row: Row): void {
    if (!this.byId.has(row.id)) {
      const n = Number(row.id)
      const at = this.ids.length === 0 || this.ids[this.ids.length - 1] < n ? this.ids.length : this.indexAfter(n - 1)
      this.ids.splice(at, 0, n)
    }
    this.byId.set(row.id, row)
  }

  delete(id: string): void {
    if (!this.byId.delete(id)) return
    const at = this.indexAfter(Number(id) - 1)
    if (this.ids[at] === Number(id)) this.ids.splice(at, 1)
  }

  /** Up to `limit` rows with ids after `after`, and whether more follow. */
  page(after: number, limit: number): { readonly rows: ReadonlyArray<Row>; readonly more: boolean } {
    const start = this.indexAfter(after)
    const end = Math.min(this.ids.length, start + limit)
    const rows: Array<Row> = []
    for (let i = start; i < end; i++) rows.push(this.byId.get(String(this.ids[i]))!)
    return { rows, more: end < this.ids.length }
  }

  *all(): IterableIterator<Row> {
    for (const id of this.ids) yield this.byId.get(String(id))!
  }

  /** Index of the first id greater than `after` (binary search). */
  private indexAfter(after: number): number {
    let lo = 0
    let hi = this.ids.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.ids[mid] <= after) lo = mid + 1
      else hi = mid
    }
    return lo
  }
}
