/**
 * Keyed views over REST: `GET /api/_views/<name>/<key>` answers one entry, `{"name","key","seq","value"}` (the same
 * bytes as the MCP resource `wo://views/<name>/<key>` and the tool `view_<name>`), 404 for a key the view holds no
 * entry under; `GET /api/_views/<name>` answers a page of entries, `{"name","items","nextCursor"}`, filtered and
 * ordered with the row lists' query syntax on the entry's scalar fields (`?out[gte]=2&order=-out&limit=&cursor=`),
 * in key order by default. A failed view answers 500 `ViewFailed`; one being folded from the log 503
 * `ViewRefolding` with Retry-After, as a whole view does (view-routes.ts), unless its former declaration's entries
 * serve meanwhile: 200, marked by the `WO-View-*` headers (stale-headers.ts).
 */
import { Effect, Either } from "effect"
import type { CompiledApp } from "../../domain/compile.ts"
import type { CompiledView } from "../../domain/compile-views.ts"
import { entryListable, entryListOptions } from "../../domain/keyed-list-request.ts"
import { fromQueryString } from "../../domain/list-request.ts"
import type { StoreError, ValidationFailed } from "../../domain/errors.ts"
import type { KeyedViewsShape } from "../../projections/views/keyed-views.ts"
import { REFOLD_RETRY_AFTER_SECONDS, ViewFailed, ViewRefolding } from "../../projections/views/views.ts"
import { errorJson, jsonText, safeDecode, type EdgeRequest, type EdgeResponse } from "../edge/edge-types.ts"
import { entryBody, entryPageBody } from "./bodies.ts"
import { errorResponse } from "./rest.ts"
import { staleHeaders, staleMarkHeaders } from "./stale-headers.ts"

const PREFIX = "/api/_views/"
/** Live data: never cached. */
const HEADERS = { "cache-control": "no-store" }

type ReadError = StoreError | ViewFailed | ViewRefolding | ValidationFailed

/** How a keyed view's read failed, as a whole view's would answer it. */
export const keyedErrorResponse = (error: ReadError): EdgeResponse => {
  switch (error._tag) {
    case "ViewRefolding":
      return errorJson(503, "ViewRefolding", error.message, {}, { "retry-after": String(REFOLD_RETRY_AFTER_SECONDS) })
    case "ViewFailed":
      return errorJson(500, "ViewFailed", error.message)
    default:
      return errorResponse(error)
  }
}

export interface KeyedViewRoutes {
  /** The answer to a request on a keyed view's path; undefined for any other path (a whole view's, the list of views). */
  readonly handle: (request: EdgeRequest) => Effect.Effect<EdgeResponse> | undefined
  /** What `GET /api/_views` says of each keyed view: its name and that it is keyed, or why it is not served. */
  readonly summaries: (mayRead: (name: string) => boolean) => ReadonlyArray<string>
}

export const makeKeyedViewRoutes = (
  catalog: CompiledApp,
  keyed: KeyedViewsShape,
  pageSizes: { readonly defaultPageSize: number; readonly maxPageSize: number }
): KeyedViewRoutes => {
  const views = new Map([...catalog.views.values()].filter((v) => v.keyed).map((v) => [v.name, { view: v, listable: entryListable(v) }]))

  const entry = (view: CompiledView, key: string): Effect.Effect<EdgeResponse> =>
    keyed.get(view.name, key).pipe(Effect.match({
      onFailure: keyedErrorResponse,
      onSuccess: (found) =>
        found === undefined
          ? errorJson(404, "NotFound", `view ${view.name} has no entry under the key ${JSON.stringify(key)}`)
          : jsonText(200, entryBody(view.name, found), { ...HEADERS, ...(found.mark === undefined ? { etag: `"${found.seq}"` } : staleHeaders(found.seq, found.mark)) })
    }))

  const page = (view: CompiledView, listable: ReturnType<typeof entryListable>, request: EdgeRequest): Effect.Effect<EdgeResponse> =>
    Either.match(Either.flatMap(fromQueryString(listable, request.search ?? request.query.toString()), (list) => entryListOptions(view, list, pageSizes)), {
      onLeft: (e) => Effect.succeed(errorResponse(e)),
      onRight: (options) =>
        keyed.list(view.name, options).pipe(Effect.match({ onFailure: keyedErrorResponse, onSuccess: (p) => jsonText(200, entryPageBody(view.name, p), p.mark === undefined ? HEADERS : { ...HEADERS, ...staleMarkHeaders(p.mark) }) }))
    })

  return {
    handle: (request) => {
      if (views.size === 0 || !request.path.startsWith(PREFIX)) return undefined
      const rest = request.path.slice(PREFIX.length)
      const slash = rest.indexOf("/")
      const found = views.get(slash === -1 ? rest : rest.slice(0, slash))
      if (found === undefined) return undefined
      if (slash === -1) return page(found.view, found.listable, request)
      const key = rest.slice(slash + 1)
      // One segment: a key holding `/` is sent as `%2F`.
      if (key === "" || key.includes("/")) return Effect.succeed(errorJson(404, "NotFound", `no route ${request.path}: an entry is /api/_views/${found.view.name}/<key>, the key percent-encoded`))
      return entry(found.view, safeDecode(key))
    },
    summaries: (mayRead) =>
      keyed.names.filter(mayRead).map((name) => {
        const status = keyed.status(name)
        if (status?.refolding !== undefined) return JSON.stringify({ name, keyed: true, refolding: new ViewRefolding({ name, reason: status.refolding }).message })
        if (status?.failed !== undefined) return JSON.stringify({ name, keyed: true, failed: new ViewFailed({ name, reason: status.failed }).message })
        return JSON.stringify({ name, keyed: true, entries: `/api/_views/${name}` })
      })
  }
}
