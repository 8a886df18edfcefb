/**
 * The views over REST: `GET /api/_views/<name>` answers a view's value, `{"name", "seq", "value"}` (the same
 * bytes as the MCP resource `wo://views/<name>` and the tool `view_<name>`); `GET /api/_views` lists them all
 * (what the console shows). A failed view answers 500 `ViewFailed`, naming the view and the event.
 */
import { Effect } from "effect"
import type { ViewsShape } from "../projections/views.ts"
import { ViewFailed } from "../projections/views.ts"
import { errorJson, jsonText, type EdgeRequest, type EdgeResponse } from "./edge-types.ts"
import { viewBody } from "./bodies.ts"

const PREFIX = "/api/_views"
/** Live data: never cached. */
const HEADERS = { "cache-control": "no-store" }

export const makeViewRoutes = (views: ViewsShape) => (request: EdgeRequest): Effect.Effect<EdgeResponse> | undefined => {
  if (request.path !== PREFIX && !request.path.startsWith(`${PREFIX}/`)) return undefined
  if (request.method !== "GET") return Effect.succeed(errorJson(405, "MethodNotAllowed", "views are read-only: GET only", {}, { allow: "GET, HEAD" }))
  if (request.path === PREFIX) {
    return Effect.sync(() => {
      const all = views.all().map((v) =>
        v.failed === undefined ? viewBody(v) : JSON.stringify({ name: v.name, seq: v.seq, failed: new ViewFailed({ name: v.name, reason: v.failed }).message }))
      return jsonText(200, `{"views":[${all.join(",")}]}`, HEADERS)
    })
  }
  const name = request.path.slice(PREFIX.length + 1)
  return Effect.sync(() => {
    const view = views.get(name)
    if (view === undefined) return errorJson(404, "NotFound", `no view named ${name}`)
    if (view.failed !== undefined) return errorJson(500, "ViewFailed", new ViewFailed({ name, reason: view.failed }).message)
    return jsonText(200, viewBody(view), { ...HEADERS, etag: `"${view.seq}"` })
  })
}
