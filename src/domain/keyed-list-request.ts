/**
 * A list of a keyed view's entries, as every surface spells it: the row lists' syntax (list-request.ts), checked
 * against the entry's scalar fields, ordered by `key` unless a field is named, and a page size within the
 * configured bounds.
 */
import { Either } from "effect"
import type { CompiledView } from "./compile-views.ts"
import { ValidationFailed } from "./errors.ts"
import type { ListRequest, Listable } from "./list-request.ts"
import type { KeyedListOptions } from "../projections/views/keyed-views.ts"

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
