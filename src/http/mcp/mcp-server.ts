/** Assembles the /mcp route from the catalog and the shared services: tools, resources, dispatch, transports. */
import { Effect } from "effect"
import { EventLog } from "../../log/event-log.ts"
import { Commands } from "../../commands/commands.ts"
import { WoConfig } from "../../config.ts"
import { Catalog } from "../../domain/app-catalog.ts"
import { Queries } from "../../projections/queries.ts"
import { Rows } from "../../projections/rows.ts"
import { Views } from "../../projections/views.ts"
import { OpenStreams } from "../open-streams.ts"
import { makeDispatcher } from "./dispatch.ts"
import { makeMcpEndpoint } from "./endpoint.ts"
import { eraOf } from "./era.ts"
import { makeLegacy } from "./legacy.ts"
import { makeModern } from "./modern.ts"
import { SubscriptionRegistry } from "../../projections/registry.ts"
import { makeResources } from "./resources.ts"
import { Sessions } from "./sessions.ts"
import { makeTools } from "./tools.ts"

export const makeMcpRoute = Effect.gen(function* () {
  const catalog = yield* Catalog
  const settings = yield* WoConfig
  const rows = yield* Rows
  const views = yield* Views
  const tools = makeTools(catalog, yield* Commands, yield* Queries, settings.maxPageSize, views)
  const dispatcher = makeDispatcher(tools, makeResources(catalog, { rows, queries: yield* Queries, views }, settings.defaultPageSize))
  const legacy = makeLegacy({
    catalog,
    dispatcher,
    sessions: yield* Sessions,
    log: yield* EventLog,
    rows,
    views,
    streams: yield* OpenStreams,
    settings
  })
  const modern = makeModern({ catalog, dispatcher, registry: yield* SubscriptionRegistry, rows, streams: yield* OpenStreams, settings })
  return makeMcpEndpoint({
    legacy: legacy.post,
    modern: modern.post,
    other: (request) =>
      eraOf(undefined, request.headers) === "modern"
        ? modern.other(request)
        : request.method === "GET" ? legacy.get(request) : legacy.del(request)
  }, settings.maxJsonDepth)
})
