/**
 * Resource URIs:
 *  - `wo://<type>/<id>`: one row;
 *  - `wo://schema/<type>`: a type's fields and JSON Schema;
 *  - `wo://views/<name>`: a view's value;
 *  - `wo://views/<name>/<key>`: one entry of a keyed view (the key percent-encoded);
 *  - `wo://<type>` and `wo://<type>?<query>`: a list, filtered and ordered as the query says (the REST list's
 *    query string: `wo://articles?status=published&order=-title`), read as its first page and subscribable as
 *    a live query;
 *  - `wo://<type>/<id>/history`: a row's events, oldest first (`?cursor=&limit=` reads a later page), subscribable
 *    without a query: it is updated whenever the row gets a new event.
 */

export const rowUri = (type: string, id: string) => `wo://${type}/${id}`
export const schemaUri = (type: string) => `wo://schema/${type}`
export const viewUri = (name: string) => `wo://views/${name}`
/** One entry of a keyed view; the key percent-encoded (a key may hold `/`, `?`, `#` or spaces). */
export const viewEntryUri = (name: string, key: string) => `wo://views/${name}/${encodeURIComponent(key)}`
/** The resource template of a keyed view's entries. */
export const viewEntryUriTemplate = (name: string) => `wo://views/${name}/{key}`
export const rowUriTemplate = (type: string) => `wo://${type}/{id}`
export const historyUri = (type: string, id: string) => `wo://${type}/${id}/history`
export const historyUriTemplate = (type: string) => `wo://${type}/{id}/history`
/** RFC 6570 form-style query expansion: every filter, the order and the page size are optional. */
export const listUriTemplate = (type: string, filterable: ReadonlyArray<string>) =>
  `wo://${type}{?${[...filterable, "order", "limit"].join(",")}}`

export type ParsedUri =
  | { readonly _tag: "Row"; readonly type: string; readonly id: string }
  | { readonly _tag: "Schema"; readonly type: string }
  | { readonly _tag: "View"; readonly name: string }
  /** `key` decoded; `canonical`: whether the URI writes it as `viewEntryUri` does (notices name that form only). */
  | { readonly _tag: "ViewEntry"; readonly name: string; readonly key: string; readonly canonical: boolean }
  /** `query`: the query string as written, its escapes not yet decoded (list-request.ts reads it, strictly). */
  | { readonly _tag: "List"; readonly type: string; readonly query: string }
  /** `query` as in List: empty for the first page (and for a subscription). */
  | { readonly _tag: "History"; readonly type: string; readonly id: string; readonly query: string }

const NAME = "[a-z][a-z0-9_]*"
const ITEM = new RegExp(`^wo://(${NAME})/([^/?#]+)$`)
const LIST = new RegExp(`^wo://(${NAME})(?:\\?([^#]*))?$`)
const VIEW_ENTRY = new RegExp(`^wo://views/(${NAME})/([^/?#]+)$`)
const HISTORY = new RegExp(`^wo://(${NAME})/([^/?#]+)/history(?:\\?([^#]*))?$`)

/** Parses a wo:// URI; anything else (including other schemes) is undefined. */
export const parseUri = (uri: string): ParsedUri | undefined => {
  const item = ITEM.exec(uri)
  if (item) {
    if (item[1] === "schema") return { _tag: "Schema", type: item[2] }
    if (item[1] === "views") return { _tag: "View", name: item[2] }
    return { _tag: "Row", type: item[1], id: item[2] }
  }
  const entry = VIEW_ENTRY.exec(uri)
  if (entry) {
    const key = decodedKey(entry[2])
    return key === undefined ? undefined : { _tag: "ViewEntry", name: entry[1], key, canonical: encodeURIComponent(key) === entry[2] }
  }
  const history = HISTORY.exec(uri)
  if (history && history[1] !== "schema" && history[1] !== "views") return { _tag: "History", type: history[1], id: history[2], query: history[3] ?? "" }
  const list = LIST.exec(uri)
  if (list && list[1] !== "schema" && list[1] !== "views") return { _tag: "List", type: list[1], query: list[2] ?? "" }
  return undefined
}

/** A percent-encoded key, decoded; undefined when an escape is malformed. */
const decodedKey = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

/** True for the URI of one row: the only kind a log event names directly (legacy SSE ids depend on it). */
export const isRowUri = (uri: string) => parseUri(uri)?._tag === "Row"
