/**
 * The console's routes, behind the router's Host and Origin checks:
 *  - `/` and `/console/*`: the page (see src/console/page);
 *  - `GET /api/_catalog`, `/api/_rows`, `/api/_agents`: read-only JSON views (types in src/console/wire.ts);
 *  - `GET /api/_events?from=<seq>`: the event log as SSE, replayed then live (src/http/routes/event-tail.ts).
 * None of them writes: the page changes data only by the ordinary REST and MCP routes, like any client.
 */
import { Effect } from "effect"
import { EventLog } from "../../log/event-log.ts"
import { WoConfig } from "../../support/config.ts"
import { agentsView } from "../../console/agents-view.ts"
import { makeAssets, PAGE_HEADERS } from "../../console/assets.ts"
import { catalogView } from "../../console/catalog-view.ts"
import { rowsSnapshot } from "../../console/rows-view.ts"
import { Catalog } from "../../domain/app-catalog.ts"
import { ChangeFeed } from "../../subscriptions/change-feed.ts"
import { Rows } from "../../projections/rows/rows.ts"
import { VERSION } from "../../support/version.ts"
import { errorJson, json, jsonText, type EdgeRequest, type EdgeResponse } from "../edge/edge-types.ts"
import { makeEventTail } from "./event-tail.ts"
import { Sessions } from "../mcp/sessions.ts"
import { toolNames } from "../mcp/tools.ts"
import { OpenStreams } from "../streams/open-streams.ts"

/** Views are live data: never cached, never sniffed as anything but JSON (so no cross-origin `<script>` use). */
const VIEW_HEADERS = { "cache-control": "no-store", "x-content-type-options": "nosniff" }

export const makeConsoleRoutes = Effect.gen(function* () {
  const catalog = yield* Catalog
  const settings = yield* WoConfig
  const rows = yield* Rows
  const sessions = yield* Sessions
  const streams = yield* OpenStreams

  // Built once: the catalog does not change while the server runs. Tool names come from the tools' own table,
  // so they are exactly what tools/list answers.
  const catalogBody = JSON.stringify(catalogView(catalog, VERSION, toolNames))

  const tail = makeEventTail({
    log: yield* EventLog,
    feed: yield* ChangeFeed,
    rows,
    capacity: settings.streamBuffer,
    heartbeatMs: settings.heartbeatMs,
    streams,
    maxPerClient: settings.maxEventTailsPerClient,
    maxTotal: settings.maxEventTails
  })

  const assets = yield* makeAssets
  const asset = (path: string) =>
    assets.get(path)!.pipe(
      Effect.map((a): EdgeResponse => ({
        _tag: "Buffered",
        status: 200,
        headers: { "content-type": a.contentType, ...(path === "/" ? PAGE_HEADERS : { "x-content-type-options": "nosniff", "cache-control": "no-cache" }) },
        body: a.body
      })),
      Effect.catchTag("AssetError", (e) =>
        Effect.as(Effect.logError(e.message), errorJson(500, "ConsoleUnavailable", e.message)))
    )

  const views = new Map<string, (request: EdgeRequest) => Effect.Effect<EdgeResponse>>([
    ["/api/_catalog", () => Effect.succeed(jsonText(200, catalogBody, VIEW_HEADERS))],
    ["/api/_rows", () => Effect.sync(() => json(200, rowsSnapshot(catalog, rows), VIEW_HEADERS))],
    ["/api/_agents", () => Effect.sync(() => json(200, agentsView(sessions, streams), VIEW_HEADERS))],
    ["/api/_events", (request) => Effect.succeed(tail(request))]
  ])

  const handle = (request: EdgeRequest): Effect.Effect<EdgeResponse> | undefined => {
    const view = views.get(request.path)
    if (view === undefined && !assets.has(request.path)) return undefined
    if (request.method !== "GET") {
      return Effect.succeed(errorJson(405, "MethodNotAllowed", "the console is read-only: GET only", {}, { allow: "GET, HEAD" }))
    }
    return view === undefined ? asset(request.path) : view(request)
  }
  return { handle }
})
