/** The HTTP server as a scoped service: the edge listening, with REST and MCP routed behind it. */
import { Context, Effect, Layer, Option } from "effect"
import type { EdgeRequest } from "./edge/edge-types.ts"
import { makeBackupControl } from "./routes/backup-route.ts"
import { StoreFiles } from "../log/store-files.ts"
import { Catalog } from "../domain/app-catalog.ts"
import { Commands } from "../commands/commands.ts"
import { WoConfig } from "../support/config.ts"
import { Queries } from "../projections/queries.ts"
import { makeConsoleRoutes } from "./routes/console-routes.ts"
import { makeMcpRoute } from "./mcp/mcp-server.ts"
import { isLoopback } from "./edge/auth.ts"
import { Access } from "../access/access.ts"
import { ListenError, startEdge, type RunningEdge } from "./edge/edge.ts"
import { OpenStreams } from "./streams/open-streams.ts"
import { recordTo } from "./recording/recorder.ts"
import { recordedRefs, recordingOverData } from "./recording/recording-setup.ts"
import { makeGuards } from "./edge/guards.ts"
import { makeRestRoutes } from "./rest/rest.ts"
import { makeDirectRouter, makeRouter } from "./router.ts"
import { makeViewRoutes, makeViewsDirect } from "./rest/view-routes.ts"
import { makeKeyedViewRoutes } from "./rest/keyed-view-routes.ts"
import { KeyedViews } from "../projections/views/keyed-views.ts"
import { makeOpenApiRoute } from "./rest/openapi.ts"
import { makeOAuthMetadataRoute } from "./routes/oauth-metadata-route.ts"
import { makeHealthRoutes } from "./routes/health.ts"
import { makeMetricsRoute } from "./routes/metrics-route.ts"
import { Views } from "../projections/views/views.ts"
import { Rows } from "../projections/rows/rows.ts"
import { EventLog } from "../log/event-log.ts"
import { makeHistory } from "../projections/history.ts"
import { CustomRoutes } from "./routes/custom-routes.ts"
import { BACKUP_PATH } from "../backup/control.ts"
import { METRICS_PATH } from "./routes/metrics-route.ts"

export class HttpServer extends Context.Tag("writeonce/HttpServer")<HttpServer, { readonly url: string }>() {}

/**
 * The app's routes as one edge handler, over the services in context, and what shutdown must do for them.
 * `wo run` serves it on its own edge; `wo dev` builds one per catalog behind one edge (src/dev/dev-server.ts).
 */
export const makeAppHandler = Effect.gen(function* () {
  const settings = yield* WoConfig
  const catalog = yield* Catalog
  const commands = yield* Commands
  const queries = yield* Queries
  const access = yield* Access
  if (!isLoopback(settings.host) && !access.required && !settings.insecure) {
    return yield* new ListenError({
      message: `refusing to listen on ${settings.host} without WO_AUTH_TOKEN or WO_ACCESS_FILE: anyone who can reach it could write. Set a token or an access file, or pass --insecure (WO_INSECURE=1) to do it anyway`
    })
  }
  const consoleRoutes = yield* makeConsoleRoutes
  const views = yield* Views
  const viewRoutes = makeViewRoutes(views, makeKeyedViewRoutes(catalog, yield* KeyedViews, settings))
  const openApi = makeOpenApiRoute(catalog, settings.maxPageSize, access)
  const metrics = yield* makeMetricsRoute
  // The embedded store's backup endpoint (`wo backup`); a PostgreSQL store is backed up with PostgreSQL's tools.
  const files = settings.store === undefined ? yield* Effect.serviceOption(StoreFiles) : Option.none()
  const control = Option.isSome(files) ? yield* makeBackupControl(files.value, settings.host) : undefined
  const guards = makeGuards(settings)
  const rest = makeRestRoutes(catalog, commands, queries, settings.maxJsonDepth, makeHistory(yield* EventLog, settings))
  const mcp = yield* makeMcpRoute
  // The embedding program's routes take every path the server leaves: never /api/..., /mcp, /metrics, the backup
  // endpoint or the console's pages (the health probes and OAuth's metadata are answered before).
  const custom = Option.map(yield* Effect.serviceOption(CustomRoutes), (routes) => ({
    handle: routes.handle,
    serves: (request: EdgeRequest) =>
      !request.path.startsWith("/api/") && request.path !== "/mcp" && request.path !== METRICS_PATH && request.path !== BACKUP_PATH &&
      consoleRoutes.handle(request) === undefined
  }))
  const router = makeRouter(guards, {
    rest,
    mcp,
    extra: (request) => openApi(request) ?? viewRoutes(request) ?? consoleRoutes.handle(request),
    health: yield* makeHealthRoutes,
    metrics: metrics.route,
    backup: control?.backup,
    oauthMetadata: yield* makeOAuthMetadataRoute,
    custom: Option.getOrUndefined(custom)
  }, access)
  const streams = yield* OpenStreams
  const handler = settings.recordFile === undefined ? router : recordTo(settings.recordFile, { app: catalog.name, refs: recordedRefs(catalog) })(router)
  // The REST row writes and reads, a whole view's read, and MCP's tool calls and resource reads, without a fiber per
  // request (edge.ts); a recorded server sends every exchange through the recorder, so it has none.
  const direct = settings.recordFile === undefined ? makeDirectRouter(guards, { rest: rest.direct, mcp: mcp.direct, views: makeViewsDirect(views) }, access) : undefined
  if (settings.recordFile !== undefined) {
    yield* Effect.logInfo(`recording every HTTP exchange to ${settings.recordFile}`)
    const { recovered } = yield* Rows
    if (recovered.events > 0) yield* Effect.logWarning(recordingOverData(settings, recovered.rows))
  }
  // At shutdown, streams end first (listen streams with their graceful result, event tails) so in-flight
  // requests can drain.
  const onShutdown = Effect.sync(() => streams.closeAll("shutdown"))
  /** Once the edge listens: its streams counted in the metrics, its address published for `wo backup`. */
  const served = (edge: RunningEdge) =>
    Effect.gen(function* () {
      metrics.observeStreams(edge.streams)
      if (control !== undefined) yield* control.publish(edge.url)
    })
  return { handler, direct, onShutdown, served }
})

export const HttpServerLive = Layer.scoped(
  HttpServer,
  Effect.gen(function* () {
    const settings = yield* WoConfig
    const app = yield* makeAppHandler
    const edge = yield* startEdge(app.handler, { ...settings, onShutdown: app.onShutdown, direct: app.direct })
    yield* app.served(edge)
    return { url: edge.url }
  })
)
