/**
 * The whole runtime as one Layer: catalog, store, projections, writer and HTTP server. `wo run` is a thin shell
 * over it; an Effect program can compose it with its own app and settings.
 */
import { Layer } from "effect"
import type { AppDef } from "./domain/catalog.ts"
import { Catalog } from "./domain/app-catalog.ts"
import { ClassicLevelLog } from "./commands/classic-level-log.ts"
import { levelDbLayer } from "./commands/level-db.ts"
import { CommandsLive } from "./commands/commands.ts"
import { GroupCommitLive } from "./commands/group-commit.ts"
import { WoConfig, type Settings } from "./config.ts"
import { ChangeFeedLive } from "./projections/change-feed.ts"
import { QueriesLive } from "./projections/queries.ts"
import { RowsLive } from "./projections/rows.ts"
import { HttpServerLive } from "./http/server.ts"
import { ClassicLevelSessionStore } from "./http/mcp/session-store.ts"
import { SessionsLive } from "./http/mcp/sessions.ts"
import { OpenStreamsLive } from "./http/open-streams.ts"
import { RegistryLive } from "./projections/registry.ts"

/** Everything but the HTTP server: the store and the command and query services over it. */
export const coreLayer = (app: AppDef, settings: Settings) => {
  const config = Layer.succeed(WoConfig, settings)
  const store = RowsLive.pipe(Layer.provideMerge(ClassicLevelLog), Layer.provideMerge(levelDbLayer(settings.dataDir)))
  const writer = GroupCommitLive.pipe(Layer.provideMerge(Layer.mergeAll(store, ChangeFeedLive)))
  const services = Layer.mergeAll(CommandsLive, QueriesLive).pipe(Layer.provideMerge(writer))
  const sessions = SessionsLive.pipe(
    Layer.provideMerge(Layer.mergeAll(RegistryLive, ClassicLevelSessionStore, OpenStreamsLive)),
    Layer.provideMerge(services)
  )
  return sessions.pipe(Layer.provideMerge(Catalog.layer(app)), Layer.provideMerge(config))
}

/** The runtime serving HTTP on `settings.host:port`. */
export const writeOnceLayer = (app: AppDef, settings: Settings) =>
  HttpServerLive.pipe(Layer.provideMerge(coreLayer(app, settings)))
