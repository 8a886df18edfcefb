/**
 * Opaque cursors, one encoding for every paginated read: base64url of a small JSON object (or number), decoded
 * through a Schema like any wire input, so that a cursor this server did not issue for that list is refused,
 * never misread. Each list names its position with its own Schema:
 *  - row pages (REST `GET /api/<type>`, the `<type>_list` tools, `wo://<type>?...`): `{"t":<type>,"a":<last id>}`,
 *    plus, for any order but ascending id, the order `"o"` (`-title`) and the last row's value of it `"k"`;
 *  - `resources/list`: `{"p":<phase>,"a":<last item>}` (see http/mcp/resources.ts);
 *  - `tools/list`: the index of the next tool, a bare number.
 */
import { Option, Schema } from "effect"
import { MAX_ID } from "../domain/ids.ts"
import type { SortKey } from "./rows/ordered-index.ts"

/** A cursor codec for positions of one Schema. */
export interface CursorCodec<A> {
  readonly encode: (position: A) => string
  /** None when the text is not a cursor of this kind. */
  readonly decode: (cursor: string) => Option.Option<A>
}

export const makeCursor = <A, I>(position: Schema.Schema<A, I>): CursorCodec<A> => {
  const json = Schema.parseJson(position)
  const encode = Schema.encodeSync(json)
  const decode = Schema.decodeUnknownOption(json)
  return {
    encode: (a) => Buffer.from(encode(a)).toString("base64url"),
    decode: (cursor) => decode(Buffer.from(cursor, "base64url").toString("utf8"))
  }
}

// Finite: `1e400` parses to Infinity, which no row holds.
const Scalar = Schema.Union(Schema.String, Schema.Finite, Schema.Boolean, Schema.Null)

/**
 * A row id a cursor carries: within the ids the store assigns (0: before the first), so that its decimal string
 * is canonical (domain/ids.ts) and a row key can be built from it; a larger number is no cursor this server issued.
 */
const CursorId = Schema.Int.pipe(Schema.between(0, MAX_ID))

/** Where a page of rows continues. */
const RowPosition = makeCursor(Schema.Struct({
  t: Schema.String,
  a: CursorId,
  o: Schema.optional(Schema.String),
  k: Schema.optional(Scalar)
}))

/** A page of rows: `order` is the order as written (`-title`, `-id`), absent for ascending id. */
export const encodeCursor = (type: string, last: SortKey, order?: string): string =>
  RowPosition.encode(order === undefined
    ? { t: type, a: last.id }
    : { t: type, a: last.id, o: order, k: last.value === undefined ? null : (last.value as string | number | boolean | null) })

/**
 * Where a page of rows continues, or undefined when the cursor is not one this server issued for `type` and
 * `order`: another type or order, a key where none is written (ascending id) or none where one is, or a key
 * the order's field could not hold (`holds`, from the catalog: list-request.ts). `null` in a cursor is an
 * absent value (it sorts first either way).
 */
export const decodeCursor = (
  type: string,
  cursor: string,
  order?: string,
  holds: (value: string | number | boolean | undefined) => boolean = () => true
): SortKey | undefined => {
  const decoded = RowPosition.decode(cursor)
  if (Option.isNone(decoded)) return undefined
  const { t, a, o, k } = decoded.value
  if (t !== type || o !== order || (order === undefined ? k !== undefined : k === undefined)) return undefined
  const value = k ?? undefined
  return order === undefined || holds(value) ? { id: a, value } : undefined
}

/** `resources/list`: a phase (-1: the catalog's fixed entries; n: the n-th readable type's rows) and the last item in it. */
export const ResourceCursor = makeCursor(Schema.Struct({ p: Schema.Int, a: Schema.Int.pipe(Schema.between(-1, MAX_ID)) }))

/** `tools/list`: the index of the first tool of the next page. */
export const ToolsCursor = makeCursor(Schema.Int.pipe(Schema.nonNegative()))
