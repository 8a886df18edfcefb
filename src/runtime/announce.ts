/** What `wo run` (and every embedding of writeOnceLayer) logs once it listens, and again as it shuts down. */
import { type Context, Effect, Layer } from "effect"
import { WoConfig, type Settings } from "../support/config.ts"
import { Catalog } from "../domain/app-catalog.ts"
import { fdLimit } from "../support/fd-limit.ts"
import { HttpServer } from "../http/server.ts"
import { Rows } from "../projections/rows/rows.ts"
import { VERSION } from "../support/version.ts"

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

/** The connection caps in effect, and the open-file limit they were derived from (src/http/edge/connection-caps.ts). */
export const connectionsLine = (settings: Pick<Settings, "maxConnections" | "maxConnectionsPerClient">) => {
  const files = fdLimit()
  return `connections: at most ${settings.maxConnectionsPerClient} per client address (WO_MAX_CONNECTIONS_PER_CLIENT), ${settings.maxConnections} in all (WO_MAX_CONNECTIONS); open-file limit ${files.limit} (${files.source})`
}

/** A warning when WO_MAX_CONNECTIONS leaves no room below the open-file limit for the store and the rest. */
export const connectionsWarning = (settings: Pick<Settings, "maxConnections">) => {
  const files = fdLimit()
  return settings.maxConnections < files.limit ? undefined
    : `WO_MAX_CONNECTIONS=${settings.maxConnections} is not below the open-file limit ${files.limit}: once the files run out, new connections are reset with nothing logged, and the store may fail to open a file. Lower it, or raise the limit (ulimit -n)`
}

export const SHUTTING_DOWN = "shutting down: flushing the last batch and closing the store"

export const announce = Layer.scopedDiscard(
  Effect.gen(function* () {
    const { url } = yield* HttpServer
    yield* announceServing(url, yield* Catalog, (yield* Rows).recovered)
    const settings = yield* WoConfig
    yield* Effect.logInfo(connectionsLine(settings))
    const warning = connectionsWarning(settings)
    if (warning !== undefined) yield* Effect.logWarning(warning)
    yield* Effect.addFinalizer(() => Effect.logInfo(SHUTTING_DOWN))
  })
)
