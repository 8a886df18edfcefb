/**
 * The filtered and ordered pages of one type's rows, over in-memory indexes: a PostgreSQL node's tables
 * (row-table.ts); the embedded store's tables use them only for the reference checks of deletes (`idsWhere`), and
 * serve lists from indexes on disk (store-table.ts). Each index is built from every row on its first use and maintained
 * on every write after that: an equality index (value -> sorted ids) per filtered field, an ordered index
 * ((value, id) sorted) per field a list is ordered by, and for a filter ordered by a field, an ordered index per
 * value of the filtered field. A page then reads about as many rows as it returns, however big the table.
 */
import type { Row } from "../../domain/catalog.ts"
import { isEquals, matchesAll, type Equals, type Filter, type Order } from "../../domain/list-request.ts"
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
  /** Where the next page starts when not after the last row: a scan that stopped at its budget (store-table.ts). */
  readonly resume?: SortKey
  /** The page holds fewer rows than its limit (maybe none) only because its scan stopped at its budget: more may follow. */
  readonly partial?: boolean
}

/** An index to build: what a query needs before it can walk. */
export type IndexSpec =
  | { readonly kind: "equality"; readonly field: string }
  | { readonly kind: "ordered"; readonly field: string }
  | { readonly kind: "composite"; readonly filter: string; readonly order: string }

interface Composite {
  readonly filter: string
  readonly order: string
  readonly byValue: Map<unknown, OrderedIndex>
}

/** Builds one index from the rows fed to it (in any order), then installs it. */
export interface IndexBuild {
  readonly add: (row: Row) => void
  readonly install: () => void
}

const EMPTY_ORDER = OrderedIndex.empty()

const isIndexable = (v: unknown) => typeof v === "string" || typeof v === "number" || typeof v === "boolean"

const compositeKey = (filter: string, order: string) => `${filter}\u0000${order}`

/** The ordered index of one value of a composite index, made on first use; undefined for a value no filter can name. */
const compositeBucket = (byValue: Map<unknown, OrderedIndex>, value: unknown): OrderedIndex | undefined => {
  if (!isIndexable(value)) return undefined
  let index = byValue.get(value)
  if (index === undefined) byValue.set(value, (index = OrderedIndex.empty()))
  return index
}

export abstract class RowIndexes {
  private readonly equality = new Map<string, EqualityIndex>()
  private readonly ordered = new Map<string, OrderedIndex>()
  /** `<filtered field>\u0000<order field>` -> the filtered field's value -> that value's rows in the order. */
  private readonly composite = new Map<string, Composite>()

  /** The row with this id as served now. */
  protected abstract rowAt(id: number): Row | undefined
  /** Builds the index `spec` names, at once (memory) or refusing when it was not built first (the store). */
  protected abstract build(spec: IndexSpec): void

  /** Whether the index `spec` names is built. */
  protected has(spec: IndexSpec): boolean {
    return spec.kind === "equality" ? this.equality.has(spec.field)
      : spec.kind === "ordered" ? this.ordered.has(spec.field)
      : this.composite.has(compositeKey(spec.filter, spec.order))
  }

  /** A build of the index `spec` names, fed every row, then installed (maintained from then on). */
  protected indexBuild(spec: IndexSpec): IndexBuild {
    switch (spec.kind) {
      case "equality": {
        const index = new EqualityIndex()
        return { add: (row) => index.add(row[spec.field], Number(row.id)), install: () => void this.equality.set(spec.field, index) }
      }
      case "ordered": {
        const keys: Array<SortKey> = []
        return {
          add: (row) => void keys.push({ value: row[spec.field], id: Number(row.id) }),
          install: () => void this.ordered.set(spec.field, OrderedIndex.of(keys))
        }
      }
      case "composite": {
        const keys = new Map<unknown, Array<SortKey>>()
        return {
          add: (row) => {
            const value = row[spec.filter]
            if (!isIndexable(value)) return
            let list = keys.get(value)
            if (list === undefined) keys.set(value, (list = []))
            list.push({ value: row[spec.order], id: Number(row.id) })
          },
          install: () => {
            const byValue = new Map([...keys].map(([value, list]) => [value, OrderedIndex.of(list)]))
            this.composite.set(compositeKey(spec.filter, spec.order), { filter: spec.filter, order: spec.order, byValue })
          }
        }
      }
    }
  }

  /** Keeps the built indexes right as row `n` goes from `old` to `row` (undefined: absent). */
  protected reindex(n: number, old: Row | undefined, row: Row | undefined): void {
    for (const [field, index] of this.equality) {
      if (old !== undefined && row !== undefined && old[field] === row[field]) continue
      if (old !== undefined) index.remove(old[field], n)
      if (row !== undefined) index.add(row[field], n)
    }
    for (const [field, index] of this.ordered) {
      if (old !== undefined && row !== undefined && old[field] === row[field]) continue
      if (old !== undefined) index.remove(old[field], n)
      if (row !== undefined) index.add(row[field], n)
    }
    for (const c of this.composite.values()) {
      if (old !== undefined && row !== undefined && old[c.filter] === row[c.filter] && old[c.order] === row[c.order]) continue
      if (old !== undefined) c.byValue.get(old[c.filter])?.remove(old[c.order], n)
      if (row !== undefined) compositeBucket(c.byValue, row[c.filter])?.add(row[c.order], n)
    }
  }

  /**
   * Applies a change to the index `spec` names when the index may already hold it (it was built from a snapshot
   * taken while the change was in flight): both states are removed, then the new one added.
   */
  protected replay(spec: IndexSpec, n: number, old: Row | undefined, row: Row | undefined): void {
    if (spec.kind === "equality") {
      const index = this.equality.get(spec.field)!
      if (old !== undefined) index.remove(old[spec.field], n)
      if (row !== undefined) index.add(row[spec.field], n)
      return
    }
    if (spec.kind === "ordered") {
      const index = this.ordered.get(spec.field)!
      for (const state of [old, row]) if (state !== undefined) index.remove(state[spec.field], n)
      if (row !== undefined) index.add(row[spec.field], n)
      return
    }
    const c = this.composite.get(compositeKey(spec.filter, spec.order))!
    for (const state of [old, row]) if (state !== undefined) c.byValue.get(state[c.filter])?.remove(state[c.order], n)
    if (row !== undefined) compositeBucket(c.byValue, row[c.filter])?.add(row[c.order], n)
  }

  /**
   * The ids of the rows whose `field` equals `value`, ascending, from the field's equality index: how a delete
   * finds the rows that still reference it.
   */
  idsWhere(field: string, value: unknown): ReadonlyArray<number> {
    return this.equalityOn(field).bucket(value)
  }

  /**
   * A page of the rows matching every filter, in `order`, after the cursor, over the indexes; undefined for an
   * unfiltered list in id order (the holder walks its ids). With filters, the most selective one (the smallest
   * bucket of its equality index) leads: in id order its bucket is walked, in another order that value's rows in
   * that order; the other filters (ranges, sets and null tests too) are checked row by row.
   */
  protected indexedPage({ where, order, after, limit }: RowQuery): RowPage | undefined {
    // Only an equality filter leads; ranges, sets and null tests are checked row by row (a filtered walk).
    const equalities = where.filter(isEquals)
    const lead = equalities.length === 0 ? undefined : this.mostSelective(equalities)
    if (order.field === "id") {
      return lead === undefined ? undefined : this.idWalk(this.equalityOn(lead.field).bucket(lead.value), where, order.descending, after?.id, limit)
    }
    const index = lead === undefined ? this.orderedOn(order.field) : this.compositeOn(lead.field, order.field).get(lead.value) ?? EMPTY_ORDER
    return this.orderedWalk(index, where, order.descending, after, limit)
  }

  private equalityOn(field: string): EqualityIndex {
    if (!this.equality.has(field)) this.build({ kind: "equality", field })
    return this.equality.get(field)!
  }

  private orderedOn(field: string): OrderedIndex {
    if (!this.ordered.has(field)) this.build({ kind: "ordered", field })
    return this.ordered.get(field)!
  }

  private compositeOn(filter: string, order: string): Map<unknown, OrderedIndex> {
    const key = compositeKey(filter, order)
    if (!this.composite.has(key)) this.build({ kind: "composite", filter, order })
    return this.composite.get(key)!.byValue
  }

  /** The filter whose value the fewest rows hold. */
  private mostSelective(where: ReadonlyArray<Equals>): Equals {
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
  protected collect(next: () => Row | undefined | null, where: ReadonlyArray<Filter>, limit: number): RowPage {
    const rows: Array<Row> = []
    for (;;) {
      const row = next()
      if (row === null) return { rows, more: false }
      if (row === undefined || !matchesAll(where, row)) continue
      if (rows.length === limit) return { rows, more: true }
      rows.push(row)
    }
  }

  protected idWalk(ids: ReadonlyArray<number>, where: ReadonlyArray<Filter>, descending: boolean, afterId: number | undefined, limit: number) {
    if (!descending) {
      let i = afterId === undefined ? 0 : indexAfter(ids, afterId)
      return this.collect(() => (i < ids.length ? this.rowAt(ids[i++]) : null), where, limit)
    }
    let i = afterId === undefined ? ids.length - 1 : indexAfter(ids, afterId - 1) - 1
    return this.collect(() => (i >= 0 ? this.rowAt(ids[i--]) : null), where, limit)
  }

  private orderedWalk(index: OrderedIndex, where: ReadonlyArray<Filter>, descending: boolean, after: SortKey | undefined, limit: number) {
    if (!descending) {
      let i = index.indexAfter(after)
      return this.collect(() => (i < index.size ? this.rowAt(index.at(i++).id) : null), where, limit)
    }
    let i = index.indexBefore(after)
    return this.collect(() => (i >= 0 ? this.rowAt(index.at(i--).id) : null), where, limit)
  }
}
