/** What `wo run` (and every embedding of writeOnceLayer) logs once it listens, and again as it shuts down. */
import { Effect, Layer } from "effect"
import { Catalog } from "./domain/app-catalog.ts"
import { HttpServer } from "./http/server.ts"
import { Rows } from "./projections/rows.ts"
import { VERSION } from "./version.ts"

export const announce = Layer.scopedDiscard(
  Effect.gen(function* () {
    const { url } = yield* HttpServer
    const catalog = yield* Catalog
    const { recovered } = yield* Rows
    yield* Effect.logInfo(
      `writeonce ${VERSION} serving app "${catalog.name}" (${[...catalog.types.keys()].join(", ")}) at ${url}`
    )
    yield* Effect.logInfo(
      `recovered ${recovered.events} events (${recovered.rows} rows, ${recovered.tailEvents} tail events) in ${recovered.millis} ms`
    )
    yield* Effect.logInfo(`REST ${url}/api/<type>   MCP ${url}/mcp   console ${url}/`)
    yield* Effect.addFinalizer(() => Effect.logInfo("shutting down: flushing the last batch and closing the store"))
  })
)
