/**
 * The legacy era (2025-03-26 .. 2025-11-25), with sessions.
 *  - POST: `initialize` mints a session (L1, L2); every later message must carry it (400 missing, 404 unknown)
 *    and MCP-Protocol-Version (absent: 2025-03-26; unsupported: 400; another supported one: served as the
 *    session's version, L3). A tools/call with a progressToken is answered as SSE with real progress (C4).
 *  - GET: the session's notification stream (L5), resumable from the durable log with Last-Event-ID (L7).
 *  - DELETE: ends the session and frees what it held.
 */
import { Effect, Either, Schema } from "effect"
import type { CompiledApp } from "../../domain/compile.ts"
import { parseLiveQuery } from "../../projections/live-queries.ts"
import type { ViewsShape } from "../../projections/views.ts"
import type { EventLogShape } from "../../log/event-log.ts"
import type { Settings } from "../../config.ts"
import type { RowsShape } from "../../projections/rows.ts"
import { empty, type EdgeRequest, type EdgeResponse } from "../edge-types.ts"
import { accepts } from "./accept.ts"
import type { OpenStreamsShape } from "../open-streams.ts"
import { SSE_HEADERS } from "../sse.ts"
import type { Dispatcher } from "./dispatch.ts"
import { progressStream } from "./progress-stream.ts"
import { headerValue, metaOf } from "./era.ts"
import { DEFAULT_LEGACY_HEADER_VERSION, ErrorCode, isLegacyVersion, LATEST_LEGACY, LEGACY_VERSIONS } from "./protocol.ts"
import { errorMessage, invalidParams, resultMessage, RpcError, type RpcId, type RpcMessage, type RpcRequest } from "./rpc.ts"
import { instructions, serverInfo } from "./server-info.ts"
import type { Session, SessionsShape } from "./sessions.ts"
import { makeSessionStream, SESSION_HEADER } from "./session-stream.ts"
import { accepted, httpError, rpcError, rpcResult } from "./wire.ts"

const InitializeParams = Schema.Struct({
  protocolVersion: Schema.String,
  capabilities: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  clientInfo: Schema.optional(Schema.Struct({ name: Schema.String, version: Schema.optional(Schema.String) }))
})
const decodeInitialize = Schema.decodeUnknownEither(InitializeParams)
const UriParams = Schema.decodeUnknownEither(Schema.Struct({ uri: Schema.String }))

/** L1: the client's version when we support it, else the newest legacy version. */
export const negotiate = (requested: string) => (isLegacyVersion(requested) ? requested : LATEST_LEGACY)


export interface LegacyDeps {
  readonly catalog: CompiledApp
  readonly dispatcher: Dispatcher
  readonly sessions: SessionsShape
  readonly log: EventLogShape
  readonly rows: RowsShape
  readonly views: ViewsShape
  readonly streams: OpenStreamsShape
  readonly settings: Settings
}

export const makeLegacy = ({ catalog, dispatcher, sessions, log, rows, views, streams, settings }: LegacyDeps) => {
  const info = serverInfo(catalog)
  const text = instructions(catalog, dispatcher.tools.map((t) => t.definition.name))
  const capabilities = { tools: {}, resources: { subscribe: true } }
  let responseStreams = 0
  const getStream = makeSessionStream({ catalog, sessions, log, rows, views, streams, settings })

  const sessionError = (id: RpcId | null, status: number, message: string) =>
    rpcError(id, new RpcError({ code: ErrorCode.InvalidRequest, message, status }))

  /** The session a request names: Right(session), or Left(the 400/404/503 answer). */
  const sessionOf = (request: EdgeRequest, id: RpcId | null): Effect.Effect<Either.Either<Session, EdgeResponse>> => {
    const sid = headerValue(request.headers, SESSION_HEADER)
    if (sid === undefined) return Effect.succeed(Either.left(sessionError(id, 400, "Bad Request: Mcp-Session-Id header is required (send initialize first)")))
    return sessions.get(sid).pipe(
      Effect.map((session) =>
        session === undefined ? Either.left(sessionError(id, 404, "Session not found: it expired or was terminated; initialize again")) : Either.right(session)),
      Effect.catchTag("StoreUnavailable", (e) => Effect.succeed(Either.left(rpcError(id, new RpcError({ code: ErrorCode.InternalError, message: e.message, status: 503 })))))
    )
  }

  const initialize = (request: RpcRequest): Effect.Effect<EdgeResponse> =>
    Either.match(decodeInitialize(request.params), {
      onLeft: () => Effect.succeed(rpcError(request.id, invalidParams("initialize needs params.protocolVersion"))),
      onRight: (params) =>
        sessions.create(negotiate(params.protocolVersion)).pipe(
          Effect.map((session) =>
            session === "capacity"
              ? rpcError(request.id, new RpcError({ code: ErrorCode.InternalError, message: `too many sessions (WO_MAX_SESSIONS=${settings.maxSessions}); retry later`, status: 503 }))
              : rpcResult(
                request.id,
                { protocolVersion: session.version, capabilities, serverInfo: info, instructions: text },
                { [SESSION_HEADER]: session.id }
              )),
          Effect.catchTag("StoreUnavailable", (e) => Effect.succeed(rpcError(request.id, new RpcError({ code: ErrorCode.InternalError, message: e.message, status: 503 }))))
        )
    })

  const subscription = (request: RpcRequest, session: Session, subscribe: boolean): Effect.Effect<EdgeResponse> =>
    Either.match(UriParams(request.params), {
      onLeft: () => Effect.succeed(rpcError(request.id, invalidParams("params.uri must be a string"))),
      onRight: ({ uri }) => {
        // A live query naming a bad field would never notify: say so, naming the field.
        const query = subscribe ? parseLiveQuery(catalog, uri) : undefined
        if (query !== undefined && Either.isLeft(query)) return Effect.succeed(rpcError(request.id, invalidParams(`${uri}: ${query.left.message}`)))
        return (subscribe ? sessions.subscribe(session, uri, rows.checkpoint()) : Effect.as(sessions.unsubscribe(session, uri), "ok" as const)).pipe(
          Effect.map((outcome) =>
            outcome === "ok"
              ? rpcResult(request.id, {})
              : rpcError(request.id, invalidParams(`too many subscriptions on this session (WO_MAX_SUBSCRIPTIONS=${settings.maxSubscriptions})`))),
          Effect.catchTag("StoreUnavailable", (e) => Effect.succeed(rpcError(request.id, new RpcError({ code: ErrorCode.InternalError, message: e.message, status: 503 }))))
        )
      }
    })

  /** tools/call with a progressToken: SSE with a priming event (2025-11-25), one progress per stage, then the result. */
  const withProgress = (request: RpcRequest, session: Session, token: string | number): EdgeResponse => {
    const streamId = `req${++responseStreams}`
    const events = progressStream({
      token,
      run: (onStage) => dispatcher.handle("tools/call", request.params, { era: "legacy", version: session.version, onStage }),
      respond: (outcome) =>
        Effect.match(outcome, {
          onFailure: (e) => errorMessage(request.id, e),
          onSuccess: (o) => resultMessage(request.id, o.result)
        }),
      eventId: (n) => `${streamId}-${n}`,
      priming: session.version >= "2025-11-25"
    })
    return { _tag: "Stream", status: 200, headers: { ...SSE_HEADERS, [SESSION_HEADER]: session.id }, events }
  }

  const post = (message: RpcMessage, request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    if (message._tag === "Request" && message.method === "initialize") return initialize(message)
    const id = message._tag === "Request" ? message.id : null
    return Effect.flatMap(sessionOf(request, id), Either.match({ onLeft: Effect.succeed, onRight: (session) => served(message, request, session) }))
  }

  const served = (message: RpcMessage, request: EdgeRequest, session: Session): Effect.Effect<EdgeResponse> => {
    const id = message._tag === "Request" ? message.id : null
    const version = headerValue(request.headers, "mcp-protocol-version") ?? DEFAULT_LEGACY_HEADER_VERSION
    if (!isLegacyVersion(version)) {
      return Effect.succeed(rpcError(id, new RpcError({
        code: ErrorCode.InvalidRequest,
        message: `Unsupported MCP-Protocol-Version: ${version} (supported: ${LEGACY_VERSIONS.join(", ")})`,
        status: 400
      })))
    }
    if (message._tag !== "Request") return Effect.succeed(accepted())
    switch (message.method) {
      case "ping":
        return Effect.succeed(rpcResult(message.id, {}))
      case "resources/subscribe":
        return subscription(message, session, true)
      case "resources/unsubscribe":
        return subscription(message, session, false)
    }
    const token = metaOf(message.params)?.progressToken
    if (message.method === "tools/call" && (typeof token === "string" || typeof token === "number")) {
      return Effect.succeed(withProgress(message, session, token))
    }
    // Served as the session's negotiated version, whatever supported version the header named (L3).
    return dispatcher.handle(message.method, message.params, { era: "legacy", version: session.version }).pipe(
      Effect.match({
        onFailure: (e) => rpcError(message.id, e),
        onSuccess: (outcome) => rpcResult(message.id, outcome.result)
      })
    )
  }

  const get = (request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    if (!accepts(request.headers.accept, "text/event-stream")) return Effect.succeed(httpError(406, "Accept must allow text/event-stream"))
    return Effect.map(sessionOf(request, null), Either.match({ onLeft: (answer) => answer, onRight: (session) => getStream(session, headerValue(request.headers, "last-event-id")) }))
  }

  const del = (request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    return Effect.flatMap(sessionOf(request, null), Either.match({
      onLeft: Effect.succeed,
      onRight: (session) =>
        sessions.terminate(session.id).pipe(
          Effect.as(empty(200)),
          Effect.catchTag("StoreUnavailable", (e) => Effect.succeed(httpError(503, e.message)))
        )
    }))
  }

  return { post, get, del }
}
