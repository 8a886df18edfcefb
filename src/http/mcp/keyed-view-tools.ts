/**
 * A keyed view's MCP tools: `view_<name>` answers one entry by its key (the same JSON as
 * `GET /api/_views/<name>/<key>` and the resource `wo://views/<name>/<key>`), `view_<name>_list` a page of entries,
 * filtered and ordered as a row list's tool is (`where`, `order`, `cursor`, `limit`; the same JSON as
 * `GET /api/_views/<name>?...`). Both read through KeyedViews; a failed view or one being folded again answers an
 * isError result saying so, as a whole view's tool does.
 */
import { Effect, Either, Schema } from "effect"
import type { CompiledView } from "../../domain/compile-views.ts"
import { entryListable, entryListOptions } from "../../domain/keyed-list-request.ts"
import { fromArguments } from "../../domain/list-request.ts"
import type { StoreError, ValidationFailed } from "../../domain/errors.ts"
import type { KeyedViewsShape } from "../../projections/views/keyed-views.ts"
import { VIEW_META, ViewRefolding, type StaleMarker, type ViewFailed } from "../../projections/views/views.ts"
import { Op } from "../../access/grants.ts"
import { entryBody, entryPageBody } from "../rest/bodies.ts"
import { argumentError, errorResult, failure, success, type ToolResult } from "./tool-results.ts"
import { derived, listFilterSchemas, objectSchema, orderSentence, pageArgs } from "./tool-schemas.ts"
import type { Tool } from "./tool.ts"

const READS = { readOnlyHint: true, openWorldHint: false }

const KeyArgument = Schema.Struct({ key: Schema.String.pipe(Schema.minLength(1)).annotations({ description: "the entry's key" }) })
const decodeKey = Schema.decodeUnknownEither(KeyArgument, { onExcessProperty: "error" })

/** A failed or refolding view is said as a whole view's tool says it; anything else as a row tool's failure. */
const refused = (error: StoreError | ViewFailed | ViewRefolding | ValidationFailed): ToolResult =>
  error._tag === "ViewRefolding" || error._tag === "ViewFailed" ? errorResult(error.message) : failure(error)

/**
 * A result from the former declaration's entries, marked as a whole view's (`_meta["writeonce/view"]`); its
 * structuredContent must still fit the declared outputSchema (the current declaration's), else the view is said to
 * be folded again.
 */
const marked = (view: CompiledView, body: string, values: ReadonlyArray<unknown>, mark: StaleMarker): ToolResult => {
  if (values.some((v) => Either.isLeft(view.decode(v)))) {
    return errorResult(new ViewRefolding({ name: view.name, reason: `its declaration changed; the former entries, exact at seq ${mark.exactAt}, do not fit the new schema` }).message)
  }
  const result = success(body, JSON.parse(body))
  return { result: { ...result.result, _meta: { [VIEW_META]: mark } } }
}

/** `{name, key, seq, value}` with the entry's schema. */
const entrySchema = (view: CompiledView) => ({
  name: { type: "string" },
  key: { type: "string" },
  seq: { type: "integer", minimum: 0, description: "the log sequence of the entry's last change" },
  value: view.jsonSchema
})

const entryTool = (view: CompiledView, keyed: KeyedViewsShape): Tool => {
  const about = view.description ? `${view.description} ` : ""
  const input = derived(KeyArgument)
  return {
    definition: {
      name: `view_${view.name}`,
      title: `View ${view.name}: one entry`,
      description: `${about}One entry of the keyed view ${view.name}, by its key, maintained on every commit (the same JSON as ` +
        `GET /api/_views/${view.name}/<key>; subscribe to wo://views/${view.name}/<key> to hear when it changes). ` +
        `view_${view.name}_list pages through the entries.`,
      inputSchema: objectSchema(input.properties, input.required),
      outputSchema: objectSchema(entrySchema(view), ["name", "key", "seq", "value"], false),
      annotations: { title: `View ${view.name}: one entry`, ...READS }
    },
    operation: Op.view(view.name),
    call: (args) =>
      Either.match(decodeKey(args), {
        onLeft: (e) => Effect.succeed(argumentError(`view ${view.name}`, e)),
        onRight: ({ key }) =>
          keyed.get(view.name, key).pipe(Effect.match({
            onFailure: refused,
            onSuccess: (entry): ToolResult => {
              if (entry === undefined) return errorResult(`view ${view.name} has no entry under the key ${JSON.stringify(key)}: call view_${view.name}_list to see its keys`)
              const body = entryBody(view.name, entry)
              return entry.mark === undefined ? success(body, JSON.parse(body)) : marked(view, body, [JSON.parse(entry.json)], entry.mark)
            }
          }))
      })
  }
}

const listTool = (view: CompiledView, keyed: KeyedViewsShape, pageSizes: { readonly defaultPageSize: number; readonly maxPageSize: number }): Tool => {
  const listable = entryListable(view)
  const page = derived(pageArgs(pageSizes.maxPageSize))
  const decodePage = Schema.decodeUnknownEither(pageArgs(pageSizes.maxPageSize), { onExcessProperty: "error" })
  const filters = listFilterSchemas({ ...listable, fieldsJsonSchema: view.jsonSchema })
  const item = objectSchema({ key: entrySchema(view).key, seq: entrySchema(view).seq, value: view.jsonSchema }, ["key", "seq", "value"], false)
  return {
    definition: {
      name: `view_${view.name}_list`,
      title: `List view ${view.name}`,
      description: `${view.description ? `${view.description} ` : ""}The entries of the keyed view ${view.name}, a page at a time; pass the returned ` +
        `nextCursor to continue. Filter with where on the entry's fields (a value, a range {gte, lt, ...}, a set {in: [...]}, or null) ` +
        `and ${orderSentence(listable)}. The same JSON as GET /api/_views/${view.name}?<query>.`,
      inputSchema: objectSchema({ cursor: page.properties.cursor, limit: page.properties.limit, ...filters }, []),
      outputSchema: objectSchema({ name: { type: "string" }, items: { type: "array", items: item }, nextCursor: { type: "string" } }, ["name", "items"], false),
      annotations: { title: `List view ${view.name}`, ...READS }
    },
    operation: Op.view(view.name),
    call: (args) => {
      const request = Either.flatMap(Either.mapLeft(decodePage(args), (e) => argumentError(`view ${view.name}`, e)), (decoded) =>
        // `where` as parsed: the decoded copy has lost any own `__proto__` key (list-request.ts).
        Either.mapLeft(
          Either.flatMap(fromArguments(listable, { ...decoded, ...(decoded.where !== undefined ? { where: args.where as Readonly<Record<string, unknown>> } : {}) }),
            (list) => entryListOptions(view, list, pageSizes)),
          (e) => failure(e)
        ))
      return Either.match(request, {
        onLeft: (result) => Effect.succeed(result),
        onRight: (options) =>
          keyed.list(view.name, options).pipe(Effect.match({
            onFailure: refused,
            onSuccess: (p) => {
              const body = entryPageBody(view.name, p)
              return p.mark === undefined ? success(body, JSON.parse(body)) : marked(view, body, p.items.map((e) => JSON.parse(e.json)), p.mark)
            }
          }))
      })
    }
  }
}

/** A keyed view's two tools, entry then list. */
export const keyedViewTools = (view: CompiledView, keyed: KeyedViewsShape, pageSizes: { readonly defaultPageSize: number; readonly maxPageSize: number }): ReadonlyArray<Tool> =>
  [entryTool(view, keyed), listTool(view, keyed, pageSizes)]
