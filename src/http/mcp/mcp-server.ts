/**
 * Assembles the /mcp route from the catalog and the shared services: the tools and resources, the server's
 * description (built once), the dispatcher, the two era policies, the stream factories and the transport.
 *
 *   protocol.ts      messages, classify, error codes, versions, the era predicate (no HTTP)
 *   dispatcher.ts    one table: method -> handler, for both eras; answers are results or streams
 *   era-policy.ts    what differs per era; legacy-era.ts and modern-era.ts implement it
 *   transport.ts     HTTP: headers, statuses, SSE shapes, session ids; GET and DELETE
 *   tools.ts, resources.ts, server-info.ts, progress-stream.ts   what the handlers use
 *   session-stream.ts, listen-stream.ts                            the long-lived notification streams
 */
import { Effect, Option } from "effect"
import { Access } from "../../access/access.ts"
import { EventLog } from "../../log/event-log.ts"
import { Commands } from "../../commands/commands.ts"
import { WoConfig } from "../../support/config.ts"
import { Catalog } from "../../domain/app-catalog.ts"
import { Queries } from "../../projections/queries.ts"
import { Rows } from "../../projections/rows/rows.ts"
import { Views } from "../../projections/views/views.ts"
import { KeyedViews } from "../../projections/views/keyed-views.ts"
import { SubscriptionRegistry } from "../../subscriptions/registry.ts"
import { OpenStreams } from "../streams/open-streams.ts"
import { makeDispatcher } from "./dispatcher.ts"
import { makeLegacyPolicy } from "./legacy-era.ts"
import { makeListenStreams } from "./listen-stream.ts"
import { makeModernPolicy } from "./modern-era.ts"
import { META } from "./protocol.ts"
import { makeResources } from "./resources.ts"
import { describeServer } from "./server-info.ts"
import { makeSessionStream } from "./session-stream.ts"
import { Sessions } from "./sessions.ts"
import { makeHistory } from "../../projections/history.ts"
import { makeCommandTools, makeTools } from "./tools.ts"
import { makeMcpTransport } from "./transport.ts"

export const makeMcpRoute = Effect.gen(function* () {
  const catalog = yield* Catalog
  const settings = yield* WoConfig
  const rows = yield* Rows
  const views = yield* Views
  const queries = yield* Queries
  const sessions = yield* Sessions
  const streams = yield* OpenStreams
  const commands = yield* Commands
  const access = Option.getOrUndefined(yield* Effect.serviceOption(Access))
  const challenges = access?.challenges
  const keyed = yield* KeyedViews
  const tools = [
    ...makeTools(catalog, commands, queries, settings.maxPageSize, views, { views: keyed, defaultPageSize: settings.defaultPageSize }),
    ...makeCommandTools(catalog, commands)
  ]
  const server = describeServer(catalog, tools.map((t) => t.definition.name), settings.catalogReloads)
  const dispatcher = makeDispatcher({
    catalog,
    tools,
    resources: makeResources(catalog, { queries, views, keyed, history: makeHistory(yield* EventLog, settings) }, settings.defaultPageSize),
    sessions,
    server,
    checkpoint: rows.checkpoint,
    settings,
    streamsOf: streams.streamsOf
  })
  return makeMcpTransport({
    dispatcher,
    legacy: makeLegacyPolicy(sessions),
    modern: makeModernPolicy(server),
    sessions,
    openListen: makeListenStreams({ registry: yield* SubscriptionRegistry, rows, streams, settings, resultMeta: { [META.serverInfo]: server.info } }),
    openSessionStream: makeSessionStream({ catalog, sessions, log: yield* EventLog, rows, views, keyed, streams, settings }),
    maxJsonDepth: settings.maxJsonDepth,
    streamsOf: streams.streamsOf,
    ...(challenges === undefined ? {} : { forbiddenChallenge: challenges.forbidden }),
    ...(access?.activity === undefined ? {} : { activity: access.activity })
  })
})
