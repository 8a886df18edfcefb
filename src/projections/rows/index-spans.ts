/**
 * Which stored index a list walks, and which key spans of it, for the filters and the order it asks for
 * (log/classic-level/index-keys.ts has the key layout). The lead filter narrows the walk; every filter is still
 * checked on each row served.
 *  - A value filter leads first (an equality, a set, a null test for absent): each of its values is a span of the
 *    index on the field (in id order) or on the field and the order (in that order); several spans are merged.
 *  - Else a range leads (a range, a null test for present): one span of the index on the field, in its order; in id
 *    order the span's distinct values are walked as a set, or its ids read (store-table.ts: `listWalk`); in another
 *    order the order's index is walked.
 */
import { isEquals, type Filter, type InRange, type NullTest, type Order } from "../../domain/list-request.ts"
import * as X from "../../log/classic-level/index-keys.ts"

/** A filter that names values: each one a span of the index. */
export interface PointLead {
  readonly kind: "points"
  readonly field: string
  readonly values: ReadonlyArray<unknown>
}

/** A filter that names one range of the field's order. */
export interface RangeLead {
  readonly kind: "range"
  readonly filter: InRange | NullTest
}

export type Lead = PointLead | RangeLead

/** The filter a store list leads with: the first value filter, else the first range, else none. */
export const leadOf = (where: ReadonlyArray<Filter>): Lead | undefined => {
  for (const f of where) {
    if (isEquals(f)) return { kind: "points", field: f.field, values: [f.value] }
    if (f.op === "in") return { kind: "points", field: f.field, values: f.values }
    if (f.op === "null" && f.isNull) return { kind: "points", field: f.field, values: [undefined] }
  }
  for (const f of where) if (f.op === "range" || f.op === "null") return { kind: "range", filter: f }
  return undefined
}

const leadField = (lead: Lead) => (lead.kind === "points" ? lead.field : lead.filter.field)

/**
 * The stored index a list walks: on its lead's field (in id order, or a range in the field's own order), on the
 * lead's field and the order's (a value filter in another order), or on the order's field (no lead, or a range in
 * another order). Undefined: an unfiltered list in id order walks the rows themselves.
 */
export const indexFieldsFor = ({ where, order }: { readonly where: ReadonlyArray<Filter>; readonly order: Order }): ReadonlyArray<string> | undefined => {
  const lead = leadOf(where)
  if (lead === undefined) return order.field === "id" ? undefined : [order.field]
  const field = leadField(lead)
  if (lead.kind === "points") return order.field === "id" ? [field] : [field, order.field]
  return order.field === "id" || order.field === field ? [field] : [order.field]
}

/**
 * Keys from `low` (inclusive) to `high` (exclusive). Each key is `base`, then its order suffix: the encoded order
 * value (unless the order is id) and the id, so that suffixes of several spans compare in the list's order.
 */
export interface KeySpan {
  readonly base: string
  readonly low: string
  readonly high: string
}

/** Just past every key of one value: its id digits all sort below. */
const past = (key: string) => `${key}\uffff`

/** The span of a range of the field's order within the index `prefix` (absent and null values never in it). */
const rangeSpan = (prefix: string, filter: InRange | NullTest): KeySpan => {
  const afterAbsent = past(prefix + X.encodeValue(undefined))
  if (filter.op === "null") return { base: prefix, low: afterAbsent, high: past(prefix) }
  const { lower, upper } = filter
  const low = lower === undefined ? afterAbsent : lower.inclusive ? prefix + X.encodeValue(lower.value) : past(prefix + X.encodeValue(lower.value))
  const high = upper === undefined ? past(prefix) : upper.inclusive ? past(prefix + X.encodeValue(upper.value)) : prefix + X.encodeValue(upper.value)
  return { base: prefix, low, high }
}

/** The spans a list walks in the index on `fields` (indexFieldsFor), ascending. */
export const spansFor = (type: string, fields: ReadonlyArray<string>, where: ReadonlyArray<Filter>): ReadonlyArray<KeySpan> => {
  const prefix = X.indexPrefix(type, fields)
  const lead = leadOf(where)
  if (lead !== undefined && leadField(lead) === fields[0]) {
    if (lead.kind === "points") return lead.values.map((v) => {
      const base = prefix + X.encodeValue(v)
      return { base, low: base, high: past(base) }
    })
    if (fields.length === 1) return [rangeSpan(prefix, lead.filter)]
  }
  return [{ base: prefix, low: prefix, high: past(prefix) }]
}

/** A level range over the span from the cursor's key on (exclusive), in the page's direction; undefined when empty. */
export const spanRange = (span: KeySpan, cursorSuffix: string | undefined, descending: boolean) => {
  const cursor = cursorSuffix === undefined ? undefined : span.base + cursorSuffix
  if (!descending) {
    if (cursor === undefined || cursor < span.low) return span.low < span.high ? { gte: span.low, lt: span.high } : undefined
    return cursor < span.high ? { gt: cursor, lt: span.high } : undefined
  }
  const high = cursor === undefined || cursor > span.high ? span.high : cursor
  return span.low < high ? { gte: span.low, lt: high, reverse: true } : undefined
}
