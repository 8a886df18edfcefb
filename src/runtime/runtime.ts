/**
 * The whole runtime as one Layer: catalog, store, projections, writer and HTTP server. `wo run` is a thin shell
 * over it; an Effect program can compose it with its own app and settings.
 */
import { Effect, Layer } from "effect"
import type { AppDef } from "../domain/catalog.ts"
import { Catalog } from "../domain/app-catalog.ts"
import { ClassicLevelLog } from "../log/classic-level/classic-level-log.ts"
import { levelDbLayer, StoreFilesLive, type LevelDb } from "../log/classic-level/level-db.ts"
import type { EventLog } from "../log/event-log.ts"
import type { StoreError } from "../domain/errors.ts"
import { CommandsLive } from "../commands/commands.ts"
import { logAuditLayer } from "../log/log-audit.ts"
import { GroupCommitLive } from "../commands/group-commit.ts"
import { CommitMode, LocalCommit, SharedCommit } from "../commands/commit-mode.ts"
import { WoConfig, type Settings } from "../support/config.ts"
import { ChangeFeed, ChangeFeedLive } from "../subscriptions/change-feed.ts"
import { QueriesLive } from "../projections/queries.ts"
import { Rows, RowsLive } from "../projections/rows/rows.ts"
import { StoreRowsLive } from "../projections/rows/store-rows.ts"
import { PinnedLog } from "../log/pinned-log.ts"
import { Views, ViewsLive } from "../projections/views/views.ts"
import { appModuleOf, LoadedApp } from "../app-loading/app-worker.ts"
import { KeyedViewsSharedLive, KeyedViewsStoreLive } from "../projections/views/keyed-views.ts"
import { UpcastingLog } from "../log/upcasting-log.ts"
import { HttpServerLive } from "../http/server.ts"
import { announce } from "./announce.ts"
import { LoggerOnlyLive } from "./logger.ts"
import { customRoutesLayer, type RoutesOf } from "../embedding/custom-routes.ts"
import { stopOnSignals } from "./stop-on-signals.ts"
import { ClassicLevelSessionStore } from "../log/classic-level/classic-level-session-store.ts"
import { SessionsLive } from "../http/mcp/sessions.ts"
import { OpenStreamsLive, StreamRevocationLive } from "../http/streams/open-streams.ts"
import { AccessLive } from "../access/access.ts"
import { OAuthVerifier } from "../access/oauth/verifier.ts"
import { RegistryLive } from "../subscriptions/registry.ts"
import { metricsLayer } from "../metrics/metrics.ts"
import { observedLog, WriteHealthLive } from "../metrics/observed-log.ts"

/**
 * The event log for these settings: embedded classic-level in the data dir, or PostgreSQL with `--store` (legacy
 * MCP sessions then live in PostgreSQL too, so that any node serves any session).
 */
export const storeLogLayer = (settings: Settings): Layer.Layer<EventLog, StoreError, LevelDb> =>
  settings.store === undefined
    ? ClassicLevelLog
    : onPostgres(() => import("../log/postgres/postgres-log.ts"), (m, url) => m.postgresLogLayer(url, pgOptions(settings)), settings.store)

/**
 * The PostgreSQL connection's options, the same for the log and the session store (one connection between them):
 * the node keeps what it has seen of the store in its data dir, so that its fencing survives a restart.
 */
const pgOptions = (settings: Settings) => ({ timeoutMs: settings.storeTimeoutMs, memoryDir: settings.dataDir })

/** Where legacy MCP sessions live: the data dir, or with `--store` the PostgreSQL store every node shares. */
const sessionStoreLayer = (settings: Settings) =>
  settings.store === undefined
    ? ClassicLevelSessionStore
    : onPostgres(() => import("../log/postgres/session-store.ts"), (m, url) => m.postgresSessionStoreLayer(url, pgOptions(settings)), settings.store)

/**
 * A layer of the PostgreSQL store, its module loaded only when a node uses one: `pg` is a tenth of an embedded
 * node's start. The log and the session store still share one connection (`pgConnectionLayer`, memoised by URL).
 */
const onPostgres = <M, A, E, R>(module: () => Promise<M>, layer: (m: M, url: string) => Layer.Layer<A, E, R>, url: string) =>
  Layer.unwrapEffect(Effect.promise(module).pipe(Effect.map((m) => layer(m, url))))

export interface CoreOptions {
  /** The event log (default: `storeLogLayer(settings)`); a layer that decorates it (metrics, test faults) goes here. */
  readonly log?: Layer.Layer<EventLog, StoreError, LevelDb>
}

/** Everything but the HTTP server: the store and the command and query services over it. */
export const coreLayer = (app: AppDef, settings: Settings, options: CoreOptions = {}) => {
  const config = Layer.succeed(WoConfig, settings)
  // Every reader of the log gets it upcast to the app's schema versions (log/upcasting-log.ts).
  // Observed: whether the last durable write failed (readiness), and with metrics on, each write's size and time.
  const log = UpcastingLog.pipe(Layer.provide(observedLog(options.log ?? storeLogLayer(settings))))
  // The commit mode, chosen here once: this process is the log's only writer (Local), or several nodes share a
  // PostgreSQL log (Shared: the tailer applies every node's commits; the writer answers once it has applied its own).
  const shared = settings.store !== undefined
  // The projections recovered from the store: rows, and the declared views. On a shared log both are recovered
  // up to one seq, from which the tailer follows (log/pinned-log.ts).
  // The embedded store serves its rows from disk (store-rows.ts); a PostgreSQL node holds them in memory.
  // Keyed views keep their entries in the embedded store, and in memory on a PostgreSQL node (keyed-views.ts).
  const recovered = shared
    ? Layer.mergeAll(RowsLive, ViewsLive, KeyedViewsSharedLive).pipe(Layer.provide(PinnedLog))
    : Layer.mergeAll(StoreRowsLive, ViewsLive, KeyedViewsStoreLive)
  // The change feed comes with them: the views announce on it a view folded again going live.
  const store = recovered.pipe(
    Layer.provideMerge(ChangeFeedLive),
    Layer.provideMerge(log),
    Layer.provideMerge(StoreFilesLive),
    Layer.provideMerge(levelDbLayer(settings.dataDir, { acceptDataLoss: settings.acceptDataLoss }))
  )
  const mode: Layer.Layer<CommitMode, never, EventLog | Rows | ChangeFeed | Catalog> = shared ? SharedCommit : LocalCommit
  const writer = GroupCommitLive.pipe(Layer.provideMerge(mode), Layer.provideMerge(store))
  // The log audit leaves to the views folded again from seq 1 (which check every event they read) what they read.
  const audit = logAuditLayer(Effect.flatMap(Views, (views) => views.checked))
  const services = Layer.mergeAll(CommandsLive, QueriesLive, audit).pipe(Layer.provideMerge(writer))
  // Access (principals, the access file's reloads) ends the streams of revoked principals: it needs OpenStreams.
  const sessions = Layer.mergeAll(SessionsLive, AccessLive.pipe(Layer.provide(StreamRevocationLive))).pipe(
    Layer.provideMerge(Layer.mergeAll(RegistryLive, sessionStoreLayer(settings), OpenStreamsLive, OAuthVerifier.layer)),
    Layer.provideMerge(services)
  )
  // One metrics registry per runtime (several servers in one process count apart).
  const observing = Layer.mergeAll(metricsLayer(settings.metrics), WriteHealthLive)
  // Where the app was loaded from, if it was: a long view refold loads it again in a worker thread.
  const loaded = Layer.succeed(LoadedApp, appModuleOf(app))
  return sessions.pipe(Layer.provideMerge(Catalog.layer(app)), Layer.provideMerge(Layer.merge(config, loaded)), Layer.provideMerge(observing))
}

export interface ServeOptions<A extends AppDef = AppDef> extends CoreOptions {
  /**
   * Log as `wo run` does: one line per message, `WO_LOG_LEVEL` its floor (default true), in place of Effect's
   * loggers (`NodeRuntime.runMain`'s pretty one too). false: the program's own logger gets the same messages.
   */
  readonly logger?: boolean
  /**
   * On SIGINT or SIGTERM that nothing else in the process handles, shut down as `wo run` does and exit 0
   * (default true; stop-on-signals.ts).
   */
  readonly signals?: boolean
  /**
   * The program's own routes on the same port: an HttpRouter made from the app's typed API, served at every path
   * the server does not serve itself, behind the same edge (embedding/custom-routes.ts).
   */
  readonly routes?: RoutesOf<A>
}

/** The runtime serving HTTP on `settings.host:port`, announcing itself as `wo run` does (announce.ts). */
export const writeOnceLayer = <A extends AppDef>(app: A, settings: Settings, options: ServeOptions<A> = {}) => {
  const custom = options.routes === undefined ? Layer.empty : customRoutesLayer(app, options.routes)
  const served = announce.pipe(Layer.provideMerge(HttpServerLive), Layer.provideMerge(custom), Layer.provideMerge(coreLayer(app, settings, options)))
  const stopping = options.signals === false ? served : stopOnSignals(served)
  return options.logger === false ? stopping : stopping.pipe(Layer.provide(LoggerOnlyLive))
}
