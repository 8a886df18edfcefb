/**
 * MCP resources generated from the catalog: `wo://schema/<type>` (fields and JSON Schema) and
 * `wo://<type>/<id>` (one row, the same bytes as the REST GET). Listing walks schemas, then each type's rows
 * in id order, with opaque cursors; rows created during a walk appear later in it, and nothing repeats.
 */
import { Either, Schema } from "effect"
import type { CompiledApp, CompiledType } from "../../domain/compile.ts"
import { parseUri, rowUri, rowUriTemplate, schemaUri } from "../../domain/uri.ts"
import type { RowsShape } from "../../projections/rows.ts"

export interface ResourceEntry {
  readonly uri: string
  readonly name: string
  readonly title?: string
  readonly description?: string
  readonly mimeType: "application/json"
}

export interface ResourceContents {
  readonly uri: string
  readonly mimeType: "application/json"
  readonly text: string
}

/** Where a listing continues: a phase (-1: schemas; n: the n-th readable type) and the last item in it. */
const Position = Schema.parseJson(Schema.Struct({ p: Schema.Int, a: Schema.Int }))
const decodePosition = Schema.decodeUnknownEither(Position)
const encodePosition = (p: number, a: number) => Buffer.from(JSON.stringify({ p, a })).toString("base64url")

export interface Resources {
  /** undefined when the cursor is not one this server issued. */
  readonly list: (cursor: string | undefined) => { readonly resources: ReadonlyArray<ResourceEntry>; readonly nextCursor?: string } | undefined
  readonly templates: ReadonlyArray<{ uriTemplate: string; name: string; title: string; description: string; mimeType: "application/json" }>
  /** undefined when no such resource exists. */
  readonly read: (uri: string) => ResourceContents | undefined
}

export const makeResources = (catalog: CompiledApp, rows: RowsShape, pageSize: number): Resources => {
  const exposed = [...catalog.types.values()].filter((t) => t.mcp.size > 0)
  const readable = exposed.filter((t) => t.mcp.has("get"))

  const schemaEntry = (t: CompiledType): ResourceEntry => ({
    uri: schemaUri(t.name),
    name: `schema/${t.name}`,
    title: `${t.name} schema`,
    description: `Fields and JSON Schema of ${t.name}`,
    mimeType: "application/json"
  })
  const schemaText = (t: CompiledType) =>
    JSON.stringify({
      type: t.name,
      description: t.description,
      fields: t.fieldNames,
      methods: [...t.methods.keys()],
      mcp: [...t.mcp],
      rest: [...t.rest],
      jsonSchema: t.fieldsJsonSchema
    })

  /** Every entry after position (p0, a0), in listing order. */
  function* entriesAfter(p0: number, a0: number): Generator<readonly [{ p: number; a: number }, ResourceEntry]> {
    if (p0 === -1) for (let i = a0 + 1; i < exposed.length; i++) yield [{ p: -1, a: i }, schemaEntry(exposed[i])]
    for (let p = Math.max(p0, 0); p < readable.length; p++) {
      const t = readable[p]
      let after = p === p0 ? a0 : 0
      for (;;) {
        const page = rows.table(t.name).page(after, 64)
        for (const row of page.rows) {
          after = Number(row.id)
          yield [{ p, a: after }, { uri: rowUri(t.name, row.id), name: `${t.name}/${row.id}`, mimeType: "application/json" }]
        }
        if (!page.more) break
      }
    }
  }

  const list: Resources["list"] = (cursor) => {
    let start = { p: -1, a: -1 }
    if (cursor !== undefined) {
      const pos = decodePosition(Buffer.from(cursor, "base64url").toString("utf8"))
      if (Either.isLeft(pos) || pos.right.p < -1 || pos.right.p >= Math.max(readable.length, 1)) return undefined
      start = pos.right
    }
    const resources: Array<ResourceEntry> = []
    let last = start
    for (const [position, entry] of entriesAfter(start.p, start.a)) {
      if (resources.length === pageSize) return { resources, nextCursor: encodePosition(last.p, last.a) }
      resources.push(entry)
      last = position
    }
    return { resources }
  }

  const read: Resources["read"] = (uri) => {
    const parsed = parseUri(uri)
    if (parsed === undefined) return undefined
    const type = catalog.types.get(parsed.type)
    if (type === undefined || type.mcp.size === 0) return undefined
    if (parsed._tag === "Schema") return { uri, mimeType: "application/json", text: schemaText(type) }
    if (!type.mcp.has("get")) return undefined
    const row = rows.get(type.name, parsed.id)
    return row === undefined ? undefined : { uri, mimeType: "application/json", text: JSON.stringify(row) }
  }

  return {
    list,
    templates: readable.map((t) => ({
      uriTemplate: rowUriTemplate(t.name),
      name: t.name,
      title: `One ${t.name} row`,
      description: `A ${t.name} row by id: {id, version, ...fields}`,
      mimeType: "application/json" as const
    })),
    read
  }
}
