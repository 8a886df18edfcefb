/**
 * The rows of one type, in memory: a Map for O(1) reads and the sorted ids for cursor pages (the tables of a node
 * on PostgreSQL, and of `wo test` specs; a classic-level node serves its rows from the store: store-table.ts).
 * Ids only grow, so a new row always sorts last and a page walk never loses or repeats one while rows are being
 * created. Filtered and ordered pages use indexes built on first use (row-indexes.ts); tables that are never
 * filtered or ordered pay nothing.
 */
import { Effect } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { StoreError } from "../../domain/errors.ts"
import { RowIndexes, type IndexSpec, type RowPage, type RowQuery } from "./row-indexes.ts"
import { indexAfter } from "./sorted-ids.ts"

export type { RowPage, RowQuery } from "./row-indexes.ts"

/** One type's rows as every reader sees them, in memory or in the store. */
export interface RowTableShape {
  readonly size: number
  /** The row, read synchronously (the store's through its cache). */
  get(id: string): Row | undefined
  /** Up to `limit` rows with ids after `after`, and whether more follow, read synchronously. */
  page(after: number, limit: number): RowPage
  /** A page of a list: filtered, ordered, after a cursor (it may read the store, and build an index first). */
  read(query: RowQuery): Effect.Effect<RowPage, StoreError>
  /** The ids of the rows whose `field` equals `value`, ascending (the store's index must be built: Rows.decisionsReady). */
  idsWhere(field: string, value: unknown): ReadonlyArray<number>
}

export class RowTable extends RowIndexes implements RowTableShape {
  private readonly byId = new Map<string, Row>()
  private readonly ids: Array<number> = []

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
    this.reindex(n, old, row)
  }

  delete(id: string): void {
    const old = this.byId.get(id)
    if (old === undefined) return
    this.byId.delete(id)
    const n = Number(id)
    const at = indexAfter(this.ids, n - 1)
    if (this.ids[at] === n) this.ids.splice(at, 1)
    this.reindex(n, old, undefined)
  }

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

  /** A page of the rows matching every filter, in `order`, after the cursor. */
  query(query: RowQuery): RowPage {
    return this.indexedPage(query) ?? this.idWalk(this.ids, query.where, query.order.descending, query.after?.id, query.limit)
  }

  read(query: RowQuery): Effect.Effect<RowPage> {
    return Effect.sync(() => this.query(query))
  }

  protected rowAt(id: number): Row | undefined {
    return this.byId.get(String(id))
  }

  protected build(spec: IndexSpec): void {
    const build = this.indexBuild(spec)
    for (const row of this.all()) build.add(row)
    build.install()
  }
}
