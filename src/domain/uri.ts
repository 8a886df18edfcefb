/** Resource URIs: `wo://<type>/<id>` for a row, `wo://schema/<type>` for a type's schema. */

export const rowUri = (type: string, id: string) => `wo://${type}/${id}`
export const schemaUri = (type: string) => `wo://schema/${type}`
export const rowUriTemplate = (type: string) => `wo://${type}/{id}`

export type ParsedUri =
  | { readonly _tag: "Row"; readonly type: string; readonly id: string }
  | { readonly _tag: "Schema"; readonly type: string }

/** Parses a wo:// URI; anything else (including other schemes) is undefined. */
export const parseUri = (uri: string): ParsedUri | undefined => {
  const m = /^wo:\/\/([a-z][a-z0-9_]*)\/([^/]+)$/.exec(uri)
  if (!m) return undefined
  return m[1] === "schema" ? { _tag: "Schema", type: m[2] } : { _tag: "Row", type: m[1], id: m[2] }
}
