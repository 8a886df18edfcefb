/**
 * The rows of one type, in memory: a Map for O(1) reads and the sorted ids for cursor pages. Ids only grow, so
 * a new row always sorts last and a page walk never loses or repeats one while rows are being created.
 *
 * Filtered and ordered pages (`query`) use indexes, each built on its first use and maintained on every write
 * after that: an equality index (value -> sorted ids) per filtered field, an ordered index ((value, id) sorted)
 * per field a list is ordered by, and for a filter ordered by a field, an ordered index per value of the
 * filtered field. A page then reads about as many rows as it returns, however big the table. Tables that are
 * never filtered or ordered pay nothing.
 */
import type { Row } from "../domain/catalog.ts"
import { matchesAll, type Filter, type Order } from "../domain/list-request.ts"
import { EqualityIndex } from "./equality-index.ts"
import { OrderedIndex, type SortKey } from "./ordered-index.ts"
import { indexAfter } from "./sorted-ids.ts"

export interface RowQuery {
  readonly where: ReadonlyArray<Filter>
  readonly order: Order
  /** The last row of the previous page: its id and its value of the order field. */
  readonly after?: SortKey
  readonly limit: number
}

export interface RowPage {
  readonly rows: ReadonlyArray<Row>
  readonly more: boolean
}

const EMPTY_ORDER = OrderedIndex.empty()

const isIndexable = (v: unknown) => typeof v === "string" || typeof v === "number" || typeof v === "boolean"

/** The ordered index of one value of a composite index, made on first use; undefined for a value no filter can name. */
const compositeBucket = (byValue: Map<unknown, OrderedIndex>, value: unknown): OrderedIndex | undefined => {
  if (!isIndexable(value)) return undefined
  let index = byValue.get(value)
  if (index === undefined) byValue.set(value, (index = OrderedIndex.empty()))
  return index
}

export class RowTable {
  private readonly byId = new Map<string, Row>()
  private readonly ids: Array<number> = []
  private readonly equality = new Map<string, EqualityIndex>()
  private readonly ordered = new Map<string, OrderedIndex>()
  /** `<filtered field>\u0000<order field>` -> the filtered field's value -> that value's rows in the order. */
  private readonly composite = new Map<string, { readonly filter: string; readonly order: string; readonly byValue: Map<unknown, OrderedIndex> }>()

  get size() {
    return this.ids.length
  }

  get(id: string): Row | undefined {
    return this.byId.get(id)
  }

  set(row: Row): void {
    const old = this.byId.get(row.id)
    const n = Number(row.id)
    if (old === undefined) {
      const at = this.ids.length === 0 || this.ids[this.ids.length - 1] < n ? this.ids.length : indexAfter(this.ids, n - 1)
      this.ids.splice(at, 0, n)
    }
    this.byId.set(row.id, row)
    for (const [field, index] of this.equality) {
      if (old !== undefined && old[field] === row[field]) continue
      if (old !== undefined) index.remove(old[field], n)
      index.add(row[field], n)
    }
    for (const [field, index] of this.ordered) {
      if (old !== undefined && old[field] === row[field]) continue
      if (old !== undefined) index.remove(old[field], n)
      index.add(row[field], n)
    }
    for (const c of this.composite.values()) {
      if (old !== undefined && old[c.filter] === row[c.filter] && old[c.order] === row[c.order]) continue
      if (old !== undefined) c.byValue.get(old[c.filter])?.remove(old[c.order], n)
      compositeBucket(c.byValue, row[c.filter])?.add(row[c.order], n)
    }
  }

  delete(id: string): void {
    const old = this.byId.get(id)
    if (old === undefined) return
    this.byId.delete(id)
    const n = Number(id)
    const at = indexAfter(this.ids, n - 1)
    if (this.ids[at] === n) this.ids.splice(at, 1)
    for (const [field, index] of this.equality) index.remove(old[field], n)
    for (const [field, index] of this.ordered) index.remove(old[field], n)
    for (const c of this.composite.values()) c.byValue.get(old[c.filter])?.remove(old[c.order], n)
  }

  /** Up to `limit` rows with ids after `after`, and whether more follow. */
  page(after: number, limit: number): RowPage {
    const start = indexAfter(this.ids, after)
    const end = Math.min(this.ids.length, start + limit)
    const rows: Array<Row> = []
    for (let i = start; i < end; i++) rows.push(this.byId.get(String(this.ids[i]))!)
    return { rows, more: end < this.ids.length }
  }

  *all(): IterableIterator<Row> {
    for (const id of this.ids) yield this.byId.get(String(id))!
  }

  /**
   * A page of the rows matching every filter, in `order`, after the cursor. With filters, the most selective
   * one (the smallest bucket of its equality index) leads: in id order its bucket is walked, in another order
   * that value's rows in that order; the other filters are checked row by row.
   */
  query({ where, order, after, limit }: RowQuery): RowPage {
    const lead = where.length === 0 ? undefined : this.mostSelective(where)
    if (order.field === "id") {
      const ids = lead === undefined ? this.ids : this.equalityOn(lead.field).bucket(lead.value)
      return this.idWalk(ids, where, order.descending, after?.id, limit)
    }
    const index = lead === undefined ? this.orderedOn(order.field) : this.compositeOn(lead.field, order.field).get(lead.value) ?? EMPTY_ORDER
    return this.orderedWalk(index, where, order.descending, after, limit)
  }

  /**
   * The ids of the rows whose `field` equals `value`, ascending, from the field's equality index (built on the
   * first call, maintained on every write after it): how a delete finds the rows that still reference it.
   */
  idsWhere(field: string, value: unknown): ReadonlyArray<number> {
    return this.equalityOn(field).bucket(value)
  }

  private equalityOn(field: string): EqualityIndex {
    let index = this.equality.get(field)
    if (index === undefined) {
      index = new EqualityIndex()
      for (const id of this.ids) index.add(this.byId.get(String(id))![field], id)
      this.equality.set(field, index)
    }
    return index
  }

  private orderedOn(field: string): OrderedIndex {
    let index = this.ordered.get(field)
    if (index === undefined) {
      index = OrderedIndex.of(this.ids.map((id) => ({ value: this.byId.get(String(id))![field], id })))
      this.ordered.set(field, index)
    }
    return index
  }

  private compositeOn(filter: string, order: string): Map<unknown, OrderedIndex> {
    const key = `${filter}\u0000${order}`
    let c = this.composite.get(key)
    if (c === undefined) {
      const keys = new Map<unknown, Array<SortKey>>()
      for (const id of this.ids) {
        const row = this.byId.get(String(id))!
        if (!isIndexable(row[filter])) continue
        let list = keys.get(row[filter])
        if (list === undefined) keys.set(row[filter], (list = []))
        list.push({ value: row[order], id })
      }
      c = { filter, order, byValue: new Map([...keys].map(([value, list]) => [value, OrderedIndex.of(list)])) }
      this.composite.set(key, c)
    }
    return c.byValue
  }

  /** The filter whose value the fewest rows hold. */
  private mostSelective(where: ReadonlyArray<Filter>): Filter {
    let best = where[0]
    let size = this.equalityOn(best.field).bucket(best.value).length
    for (let i = 1; i < where.length && size > 0; i++) {
      const n = this.equalityOn(where[i].field).bucket(where[i].value).length
      if (n < size) {
        best = where[i]
        size = n
      }
    }
    return best
  }

  /** Collects up to `limit` matches from `next()`, then looks for one more to tell whether more follow. */
  private collect(next: () => Row | undefined | null, where: ReadonlyArray<Filter>, limit: number): RowPage {
    const rows: Array<Row> = []
    for (;;) {
      const row = next()
      if (row === null) return { rows, more: false }
      if (row === undefined || !matchesAll(where, row)) continue
      if (rows.length === limit) return { rows, more: true }
      rows.push(row)
    }
  }

  private idWalk(ids: ReadonlyArray<number>, where: ReadonlyArray<Filter>, descending: boolean, afterId: number | undefined, limit: number) {
    if (!descending) {
      let i = afterId === undefined ? 0 : indexAfter(ids, afterId)
      return this.collect(() => (i < ids.length ? this.byId.get(String(ids[i++])) : null), where, limit)
    }
    let i = afterId === undefined ? ids.length - 1 : indexAfter(ids, afterId - 1) - 1
    return this.collect(() => (i >= 0 ? this.byId.get(String(ids[i--])) : null), where, limit)
  }

  private orderedWalk(index: OrderedIndex, where: ReadonlyArray<Filter>, descending: boolean, after: SortKey | undefined, limit: number) {
    if (!descending) {
      let i = index.indexAfter(after)
      return this.collect(() => (i < index.size ? this.byId.get(String(index.at(i++).id)) : null), where, limit)
    }
    let i = index.indexBefore(after)
    return this.collect(() => (i >= 0 ? this.byId.get(String(index.at(i--).id)) : null), where, limit)
  }
}
