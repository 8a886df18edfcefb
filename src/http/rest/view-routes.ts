/**
 * The views over REST: `GET /api/_views/<name>` answers a view's value, `{"name", "seq", "value"}` (the same
 * bytes as the MCP resource `wo://views/<name>` and the tool `view_<name>`); `GET /api/_views` lists them all
 * (what the console shows). A failed view answers 500 `ViewFailed`, naming the view and the event; a view being
 * folded again in the background answers 503 `ViewRefolding` with Retry-After, unless an older declaration's value
 * serves it meanwhile: 200 with that value, marked by the `WO-View-*` headers (views.ts `StaleMarker`). A keyed
 * view's paths are answered by keyed-view-routes.ts; the list names it as keyed, without its entries.
 */
import { Effect } from "effect"
import type { ViewSnapshot, ViewsShape } from "../../projections/views/views.ts"
import { REFOLD_RETRY_AFTER_SECONDS, staleMarker, ViewFailed, ViewRefolding } from "../../projections/views/views.ts"
import { staleHeaders } from "./stale-headers.ts"
import { errorJson, jsonText, type EdgeRequest, type EdgeResponse } from "../edge/edge-types.ts"
import type { DirectRoute } from "../edge/edge.ts"
import { noCancel } from "../../support/no-cancel.ts"
import { viewBody } from "./bodies.ts"
import { Op } from "../../access/grants.ts"
import { may } from "../../access/principal.ts"
import type { KeyedViewRoutes } from "./keyed-view-routes.ts"

/** The views' path: their list, and each view under it. */
export const VIEWS_PATH = "/api/_views"
/** Live data: never cached. */
const HEADERS = { "cache-control": "no-store" }


/** A view as listed (what the console shows): its body, with the stale mark, if any, as `"stale"`. */
const listedBody = (v: ViewSnapshot) => {
  const mark = staleMarker(v)
  return mark === undefined ? viewBody(v) : `${viewBody(v).slice(0, -1)},"stale":${JSON.stringify(mark)}}`
}

export const makeViewRoutes = (views: ViewsShape, keyed?: KeyedViewRoutes) => (request: EdgeRequest): Effect.Effect<EdgeResponse> | undefined => {
  if (request.path !== VIEWS_PATH && !request.path.startsWith(`${VIEWS_PATH}/`)) return undefined
  if (request.method !== "GET") return Effect.succeed(errorJson(405, "MethodNotAllowed", "views are read-only: GET only", {}, { allow: "GET, HEAD" }))
  const keyedAnswer = keyed?.handle(request)
  if (keyedAnswer !== undefined) return keyedAnswer
  if (request.path === VIEWS_PATH) {
    return Effect.sync(() => {
      // Only the views the principal may read (the router checked `view:<name>` for one view's path).
      const all = views.all().filter((v) => may(request.principal, Op.view(v.name))).map((v) =>
        v.refolding !== undefined
          ? JSON.stringify({ name: v.name, seq: v.seq, refolding: new ViewRefolding({ name: v.name, reason: v.refolding }).message })
          : v.failed === undefined ? listedBody(v) : JSON.stringify({ name: v.name, seq: v.seq, failed: new ViewFailed({ name: v.name, reason: v.failed }).message }))
      const keyedViews = keyed === undefined ? [] : keyed.summaries((name) => may(request.principal, Op.view(name)))
      return jsonText(200, `{"views":[${[...all, ...keyedViews].join(",")}]}`, HEADERS)
    })
  }
  const name = request.path.slice(VIEWS_PATH.length + 1)
  return Effect.sync(() => viewAnswer(name, views.get(name)))
}

/** One whole view's answer: its value (marked stale while an older declaration's serves), or why there is none. */
const viewAnswer = (name: string, view: ViewSnapshot | undefined): EdgeResponse => {
  if (view === undefined) return errorJson(404, "NotFound", `no view named ${name}`)
  if (view.refolding !== undefined) {
    return errorJson(503, "ViewRefolding", new ViewRefolding({ name, reason: view.refolding }).message, {}, { "retry-after": String(REFOLD_RETRY_AFTER_SECONDS) })
  }
  if (view.failed !== undefined) return errorJson(500, "ViewFailed", new ViewFailed({ name, reason: view.failed }).message)
  const mark = staleMarker(view)
  // Object.assign, not a spread of HEADERS and more keys (a new hidden class per read: jsonText's comment).
  return jsonText(200, viewBody(view), Object.assign({}, HEADERS, mark === undefined ? { etag: `"${view.seq}"` } : staleHeaders(view.seq, mark)))
}

/**
 * `GET /api/_views/<name>` of a whole view without a fiber (edge.ts, DirectRoute), answered as `makeViewRoutes`
 * answers it. Hand-tuned (bench/scenarios/view-refold.ts): a fiber and its FiberRefs were a quarter of what a view
 * read allocates, and the collections that garbage brings on are what a read during a refold waits out. A keyed
 * view's paths, the list and any other name go the generic way (a keyed view first, then 404).
 */
export const makeViewsDirect = (views: ViewsShape): DirectRoute => (request, respond) => {
  if (request.method !== "GET" || !request.path.startsWith(`${VIEWS_PATH}/`)) return undefined
  const name = request.path.slice(VIEWS_PATH.length + 1)
  const view = views.get(name)
  if (view === undefined) return undefined
  respond.answer(viewAnswer(name, view))
  return noCancel
}
