/**
 * Opaque page cursors: base64url of `{"t":<type>,"a":<last id>}`, plus, for any order but ascending id, the
 * order `"o"` (`-title`) and the last row's value of that field `"k"` (null when absent). Decoded through
 * Schema like any wire input; a cursor is refused for another type or another order, never misread.
 */
import { Either, Schema } from "effect"
import type { SortKey } from "./ordered-index.ts"

const Scalar = Schema.Union(Schema.String, Schema.Number, Schema.Boolean, Schema.Null)
const CursorJson = Schema.parseJson(Schema.Struct({
  t: Schema.String,
  a: Schema.Int.pipe(Schema.nonNegative()),
  o: Schema.optional(Schema.String),
  k: Schema.optional(Scalar)
}))
const decodeCursorJson = Schema.decodeUnknownEither(CursorJson)

/** `order` is the order as written (`-title`, `-id`), absent for ascending id. */
export const encodeCursor = (type: string, last: SortKey, order?: string): string =>
  Buffer.from(JSON.stringify(order === undefined
    ? { t: type, a: last.id }
    : { t: type, a: last.id, o: order, k: last.value === undefined ? null : last.value })).toString("base64url")

/**
 * Where to continue, or undefined when the cursor is not one this server issued for `type` and `order`.
 * `null` in a cursor is an absent value (it sorts first either way).
 */
export const decodeCursor = (type: string, cursor: string, order?: string): SortKey | undefined => {
  const decoded = decodeCursorJson(Buffer.from(cursor, "base64url").toString("utf8"))
  if (Either.isLeft(decoded) || decoded.right.t !== type || decoded.right.o !== order) return undefined
  return { id: decoded.right.a, value: decoded.right.k ?? undefined }
}
