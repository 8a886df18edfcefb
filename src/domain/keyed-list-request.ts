/**
 * A list of a keyed view's entries, as every surface spells it: the row lists' syntax (list-request.ts), checked
 * against the entry's scalar fields, ordered by `key` unless a field is named, and a page size within the
 * configured bounds.
 */
import { Either } from "effect"
import type { CompiledView } from "./compile-views.ts"
import { ValidationFailed } from "./errors.ts"
import type { Filter, ListRequest, Listable, Order } from "./list-request.ts"

/** A page request of a keyed view's entries (KeyedViews.list). */
export interface KeyedListOptions {
  /** The cursor a previous page answered (`next`); absent: the first page. Opaque: it names a position, not an offset. */
  readonly after?: string
  /** Entries per page, at most. */
  readonly limit: number
  /** Filters on the entry's filterable fields (`CompiledView.filterable`), checked as rows' are. */
  readonly where?: ReadonlyArray<Filter>
  /**
   * Absent (or the field `key`): key order (the cursor is the last key served). With a filterable field of the
   * entries (`CompiledView.filterable`): that field's order, ties by key; the
   * cursor holds the last entry's value and key, so a page stays where it was whatever is written meanwhile.
   */
  readonly order?: Order
}

/** What a keyed view's list requests are checked against (its errors name `_views/<name>`). */
export const entryListable = (view: CompiledView): Listable => ({
  name: `_views/${view.name}`,
  filterable: view.filterable,
  fieldNames: Object.keys((view.jsonSchema as { readonly properties?: object }).properties ?? {}),
  keyedBy: "key"
})

/** The request as KeyedViews.list takes it; Left when its page size is out of bounds. */
export const entryListOptions = (
  view: CompiledView,
  request: ListRequest,
  pageSizes: { readonly defaultPageSize: number; readonly maxPageSize: number }
): Either.Either<KeyedListOptions, ValidationFailed> => {
  const limit = request.limit ?? pageSizes.defaultPageSize
  if (!Number.isInteger(limit) || limit < 1 || limit > pageSizes.maxPageSize) {
    return Either.left(new ValidationFailed({ type: `_views/${view.name}`, issues: [{ path: ["limit"], message: `must be an integer from 1 to ${pageSizes.maxPageSize}` }] }))
  }
  return Either.right({
    limit,
    ...(request.cursor === undefined ? {} : { after: request.cursor }),
    ...(request.where === undefined ? {} : { where: request.where }),
    ...(request.order === undefined ? {} : { order: request.order })
  })
}
