/** What `wo run` (and every embedding of writeOnceLayer) logs once it listens, and again as it shuts down. */
import { type Context, Effect, Layer } from "effect"
import { WoConfig, type Settings } from "./config.ts"
import { Catalog } from "./domain/app-catalog.ts"
import { fdLimit } from "./fd-limit.ts"
import { HttpServer } from "./http/server.ts"
import { Rows } from "./projections/rows.ts"
import { VERSION } from "./version.ts"

/** The lines saying what serves where and what was recovered (`wo dev` logs them again after each reload). */
export const announceServing = (url: string, catalog: Context.Tag.Service<Catalog>, recovered: Context.Tag.Service<Rows>["recovered"]) =>
  Effect.gen(function* () {
    yield* Effect.logInfo(
      `writeonce ${VERSION} serving app "${catalog.name}" (${[...catalog.types.keys()].join(", ")}) at ${url}`
    )
    yield* Effect.logInfo(
      `recovered ${recovered.events} events (${recovered.rows} rows, ${recovered.tailEvents} tail events) in ${recovered.millis} ms`
    )
    yield* Effect.logInfo(`REST ${url}/api/<type>   MCP ${url}/mcp   console ${url}/`)
  })

/** The connection caps in effect, and the open-file limit they were derived from (src/http/connection-caps.ts). */
export const connectionsLine = (settings: Pick<Settings, "maxConnections" | "maxConnectionsPerClient">) => {
  const files = fdLimit()
  return `connections: at most ${settings.maxConnectionsPerClient} per client address (WO_MAX_CONNECTIONS_PER_CLIENT), ${settings.maxConnections} in all (WO_MAX_CONNECTIONS); open-file limit ${files.limit} (${files.source})`
}

export const SHUTTING_DOWN = "shutting down: flushing the last batch and closing the store"

export const announce = Layer.scopedDiscard(
  Effect.gen(function* () {
    const { url } = yield* HttpServer
    yield* announceServing(url, yield* Catalog, (yield* Rows).recovered)
    yield* Effect.logInfo(connectionsLine(yield* WoConfig))
    yield* Effect.addFinalizer(() => Effect.logInfo(SHUTTING_DOWN))
  })
)
