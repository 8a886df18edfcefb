/**
 * The /mcp route for unit tests, over stand-ins: the real transport, era policies and (unless a test gives
 * its own) dispatcher and sessions, with no tools, no resources and (by default) no sessions. `post` sends one
 * JSON-RPC message as the body of a POST, as a client would.
 */
import { ConfigProvider, Effect, Layer } from "effect"
import { loadSettings, type Settings, WoConfig } from "../../src/support/config.ts"
import type { CompiledApp } from "../../src/domain/compile.ts"
import type { EdgeRequest, EdgeResponse } from "../../src/http/edge/edge-types.ts"
import { makeDispatcher, type Dispatcher } from "../../src/http/mcp/dispatcher.ts"
import { makeLegacyPolicy } from "../../src/http/mcp/legacy-era.ts"
import { makeListenStreams } from "../../src/http/mcp/listen-stream.ts"
import { makeModernPolicy } from "../../src/http/mcp/modern-era.ts"
import { META, type RpcMessage } from "../../src/http/mcp/protocol.ts"
import type { Resources } from "../../src/http/mcp/resources.ts"
import { describeServer } from "../../src/http/mcp/server-info.ts"
import { SessionsFull, SubscriptionsFull } from "../../src/http/mcp/session-caps.ts"
import type { SessionsShape } from "../../src/http/mcp/sessions.ts"
import { makeMcpTransport } from "../../src/http/mcp/transport.ts"
import { OpenStreamsLive, type OpenStreamsShape } from "../../src/http/streams/open-streams.ts"
import type { RegistryShape } from "../../src/subscriptions/registry.ts"
import type { RowsShape } from "../../src/projections/rows/rows.ts"

/** Open streams with the default caps (the settings' defaults). */
export const OpenStreamsDefault = OpenStreamsLive.pipe(
  Layer.provide(Layer.effect(WoConfig, loadSettings({ dataDir: "/nonexistent" }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))))
)

export interface RouteDeps {
  readonly catalog: CompiledApp
  readonly settings: Settings
  readonly registry: RegistryShape
  readonly rows: RowsShape
  readonly streams: OpenStreamsShape
  /** Default: the real dispatcher over no tools and no resources. */
  readonly dispatcher?: Dispatcher
  /** Default: sessions that never exist. */
  readonly sessions?: SessionsShape
}

const noResources: Resources = { list: () => Effect.succeed({ resources: [] }), templates: () => [], read: () => Effect.fail({ _tag: "NotFound" }) }

/** Sessions that never exist: every legacy request but initialize is refused with 404. */
const noSessions: SessionsShape = {
  create: () => Effect.succeed(new SessionsFull()),
  get: () => Effect.succeed(undefined),
  subscribe: () => Effect.succeed(new SubscriptionsFull()),
  unsubscribe: () => Effect.void,
  stream: () => Effect.void,
  terminate: () => Effect.succeed(false),
  snapshot: (s) => ({ ...s, lastSeen: 0, streaming: false, subscriptions: new Map(), topics: new Map() }),
  list: () => [],
  count: () => 0
}

export const makeRoute = ({ catalog, settings, registry, rows, streams, dispatcher, sessions = noSessions }: RouteDeps) => {
  const server = describeServer(catalog, [])
  return makeMcpTransport({
    dispatcher: dispatcher ??
      makeDispatcher({ catalog, tools: [], resources: noResources, sessions, server, checkpoint: rows.checkpoint, settings }),
    legacy: makeLegacyPolicy(sessions),
    modern: makeModernPolicy(server),
    sessions,
    openListen: makeListenStreams({ registry, rows, streams, settings, resultMeta: { [META.serverInfo]: server.info } }),
    openSessionStream: () => {
      throw new Error("no sessions here")
    },
    maxJsonDepth: settings.maxJsonDepth
  })
}

/** What a client sends with every POST, plus `headers`. */
const POST_HEADERS = { accept: "application/json, text/event-stream", "content-type": "application/json" }

const bodyOf = (message: RpcMessage) =>
  message._tag === "Request"
    ? { jsonrpc: "2.0", id: message.id, method: message.method, params: message.params }
    : message._tag === "Notification"
    ? { jsonrpc: "2.0", method: message.method, params: message.params }
    : { jsonrpc: "2.0", id: 1, result: {} }

/** The route with the old era-module shape: `post(message, request)` and `other(request)` (GET, DELETE). */
export const makeModern = (deps: RouteDeps) => {
  const route = makeRoute(deps)
  return {
    post: (message: RpcMessage, request: EdgeRequest): Effect.Effect<EdgeResponse> =>
      route({
        ...request,
        method: "POST",
        headers: { ...POST_HEADERS, ...request.headers },
        body: Buffer.from(JSON.stringify(bodyOf(message)))
      }),
    other: (request: EdgeRequest) => route(request)
  }
}
