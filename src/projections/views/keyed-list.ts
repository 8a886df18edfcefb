/**
 * A page of a keyed view's entries, read from the store:
 *  - in key order (the default), a range read from the cursor (the last key served) on: a page costs its entries;
 *    with filters, at most `SCAN_BUDGET_ENTRIES` entries are read per page, and a page may then hold fewer entries
 *    than its limit and still continue (as a row list scanning while its index is built), so that the same request
 *    over the same entries gives the same page;
 *  - in a field's order, every entry of the view is read and sorted (there is no index on an entry's fields yet):
 *    the cursor holds the last entry's value and key, so the next page starts where that entry sorts, whatever was
 *    written meanwhile.
 * Cursors are opaque (projections/cursor.ts): `{"v":<view>,"a":<last key>}`, plus the order `"o"` and the last
 * entry's value of it `"k"`; a cursor of another view or order is refused.
 */
import { Effect, Option, Schema } from "effect"
import type { CompiledView } from "../../domain/compile-views.ts"
import { ValidationFailed, type StoreError } from "../../domain/errors.ts"
import { matchesAll, orderText, type Filter, type Order } from "../../domain/list-request.ts"
import { compareValues } from "../../domain/value-order.ts"
import { makeCursor } from "../cursor.ts"
import type { KeyedStore, KeyedRecord } from "./keyed-store.ts"
import type { KeyedEntry, KeyedListOptions, KeyedPage } from "./keyed-views.ts"

/** The most entries a filtered page in key order reads before it answers what it found. */
export const SCAN_BUDGET_ENTRIES = 5_000

/** Entries read per range read of a scan. */
const SCAN_SLICE = 512

const EntryPosition = makeCursor(Schema.Struct({
  v: Schema.String,
  a: Schema.String,
  o: Schema.optional(Schema.String),
  k: Schema.optional(Schema.Union(Schema.String, Schema.Finite, Schema.Boolean, Schema.Null))
}))

const invalid = (name: string, path: string, message: string) => new ValidationFailed({ type: `_views/${name}`, issues: [{ path: [path], message }] })

const served = (r: KeyedRecord): KeyedEntry => ({ key: r.key, json: r.json, seq: r.seq })

type Fields = Readonly<Record<string, unknown>>

const fieldsOf = (r: KeyedRecord): Fields | undefined => {
  const value: unknown = JSON.parse(r.json)
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Fields) : undefined
}

export const listEntries = (
  store: KeyedStore,
  view: CompiledView,
  definition: string,
  { after, limit, where = [], order }: KeyedListOptions
): Effect.Effect<KeyedPage, StoreError | ValidationFailed> =>
  Effect.suspend((): Effect.Effect<KeyedPage, StoreError | ValidationFailed> => {
    const name = view.name
    if (!Number.isInteger(limit) || limit < 1) return Effect.fail(invalid(name, "limit", "must be a positive integer"))
    for (const f of where) if (!view.filterable.has(f.field)) return Effect.fail(invalid(name, f.field, "is not a filterable field of the view's entries"))
    const ordered = order !== undefined && order.field !== "key" ? order : undefined
    if (ordered !== undefined && !view.filterable.has(ordered.field)) return Effect.fail(invalid(name, "order", `${ordered.field} is not a filterable field of the view's entries`))
    const written = ordered === undefined ? undefined : orderText(ordered)
    let position: { readonly key: string; readonly value: unknown } | undefined
    if (after !== undefined) {
      const decoded = Option.getOrUndefined(EntryPosition.decode(after))
      if (decoded === undefined || decoded.v !== name || decoded.o !== written || (written === undefined) !== (decoded.k === undefined)) {
        return Effect.fail(invalid(name, "cursor", `is not a cursor this server issued for this list${written === undefined ? "" : ` (order ${written})`}`))
      }
      position = { key: decoded.a, value: decoded.k ?? undefined }
    }
    return ordered === undefined
      ? byKey(store, name, definition, position?.key, limit, where)
      : byField(store, name, definition, ordered, position, limit, where)
  })

const byKey = (store: KeyedStore, name: string, definition: string, after: string | undefined, limit: number, where: ReadonlyArray<Filter>) => {
  if (where.length === 0) {
    return Effect.map(store.range(name, definition, after, limit + 1), (records): KeyedPage => {
      const items = records.slice(0, limit).map(served)
      return records.length > limit ? { items, next: EntryPosition.encode({ v: name, a: items[items.length - 1].key }) } : { items }
    })
  }
  // Filtered: read slices from the cursor on, until the page and one more match are found or the budget is spent.
  const items: Array<KeyedEntry> = []
  let read = 0
  let last = after
  const slice: Effect.Effect<KeyedPage, StoreError> = Effect.flatMap(
    Effect.suspend(() => store.range(name, definition, last, Math.min(SCAN_SLICE, SCAN_BUDGET_ENTRIES - read))),
    (records) => {
      for (const r of records) {
        read++
        if (matchesAll(where, fieldsOf(r))) {
          if (items.length === limit) return Effect.succeed({ items, next: EntryPosition.encode({ v: name, a: last! }) })
          items.push(served(r))
        }
        last = r.key
      }
      if (records.length === 0 || last === undefined) return Effect.succeed({ items })
      // The budget is spent: what was found, and a cursor after the last entry read.
      if (read >= SCAN_BUDGET_ENTRIES) return Effect.succeed({ items, next: EntryPosition.encode({ v: name, a: last }) })
      return slice
    }
  )
  return slice
}

const byField = (
  store: KeyedStore,
  name: string,
  definition: string,
  order: Order,
  position: { readonly key: string; readonly value: unknown } | undefined,
  limit: number,
  where: ReadonlyArray<Filter>
) => {
  const sign = order.descending ? -1 : 1
  const compare = (a: { readonly key: string; readonly value: unknown }, b: { readonly key: string; readonly value: unknown }) =>
    sign * compareValues(a.value, b.value) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
  const matching: Array<{ readonly key: string; readonly value: unknown; readonly entry: KeyedEntry }> = []
  let last: string | undefined
  const slice: Effect.Effect<KeyedPage, StoreError> = Effect.flatMap(Effect.suspend(() => store.range(name, definition, last, SCAN_SLICE)), (records) => {
    for (const r of records) {
      last = r.key
      const fields = fieldsOf(r)
      if (where.length > 0 && !matchesAll(where, fields)) continue
      const sortKey = { key: r.key, value: fields?.[order.field] }
      if (position !== undefined && compare(sortKey, position) <= 0) continue
      matching.push({ ...sortKey, entry: served(r) })
    }
    if (records.length === SCAN_SLICE) return slice
    matching.sort(compare)
    const items = matching.slice(0, limit)
    if (matching.length <= limit) return Effect.succeed({ items: items.map((m) => m.entry) })
    const end = items[items.length - 1]
    const value = end.value === undefined ? null : (end.value as string | number | boolean | null)
    return Effect.succeed({ items: items.map((m) => m.entry), next: EntryPosition.encode({ v: name, a: end.key, o: orderText(order), k: value }) })
  })
  return slice
}
