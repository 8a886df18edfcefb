/**
 * The modern era (2026-07-28): stateless. Every request carries its own `_meta` (M1) and mirror headers (M2);
 * no session is minted, echoed or required (M5). It shares the dispatcher, the tools, the resources and the
 * subscription registry with the legacy era; only the envelope differs.
 */
import { Effect, Either, Option, Schema, Stream } from "effect"
import type { CompiledApp } from "../../domain/compile.ts"
import type { Settings } from "../../config.ts"
import type { RowsShape } from "../../projections/rows.ts"
import type { RegistryShape } from "../../projections/registry.ts"
import { parseLiveQuery } from "../../projections/live-queries.ts"
import type { EdgeRequest, EdgeResponse } from "../edge-types.ts"
import type { OpenStreamsShape } from "../open-streams.ts"
import { SSE_HEADERS } from "../sse.ts"
import { makeListenStreams } from "./listen-stream.ts"
import { CATALOG_CACHE, methodNotFound, type Dispatcher, type Outcome } from "./dispatch.ts"
import { headerValue, metaOf } from "./era.ts"
import { checkMirrorHeaders } from "./headers.ts"
import { progressStream } from "./progress-stream.ts"
import { ErrorCode, isModernVersion, META, MODERN_VERSIONS } from "./protocol.ts"
import { errorMessage, invalidParams, resultMessage, RpcError, type RpcMessage, type RpcRequest } from "./rpc.ts"
import { instructions, serverInfo } from "./server-info.ts"
import { accepted, httpError, rpcError, rpcResult } from "./wire.ts"

const ListenParams = Schema.Struct({
  notifications: Schema.Struct({
    resourceSubscriptions: Schema.optional(Schema.Array(Schema.String)),
    resourcesListChanged: Schema.optional(Schema.Boolean),
    toolsListChanged: Schema.optional(Schema.Boolean),
    promptsListChanged: Schema.optional(Schema.Boolean)
  })
})
const decodeListen = Schema.decodeUnknownEither(ListenParams)

export interface ModernDeps {
  readonly catalog: CompiledApp
  readonly dispatcher: Dispatcher
  readonly registry: RegistryShape
  readonly rows: RowsShape
  readonly streams: OpenStreamsShape
  readonly settings: Settings
}

const headerMismatch = (message: string) => new RpcError({ code: ErrorCode.HeaderMismatch, message: `Header mismatch: ${message}`, status: 400 })

export const makeModern = ({ catalog, dispatcher, registry, rows, streams, settings }: ModernDeps) => {
  const info = serverInfo(catalog)
  const text = instructions(catalog, dispatcher.tools.map((t) => t.definition.name))
  // Honest: rows can be watched one by one and as lists; the tool list never changes while we run.
  const capabilities = { tools: {}, resources: { subscribe: true, listChanged: true } }
  const resultMeta = { [META.serverInfo]: info }
  const openListen = makeListenStreams({ registry, rows, streams, settings, resultMeta })

  /** Every modern result: resultType, serverInfo in _meta, and the caching hints when cacheable (M3, M4). */
  const complete = (outcome: Outcome) => ({
    ...outcome.result,
    resultType: "complete",
    ...(outcome.cache ?? {}),
    _meta: { ...((outcome.result._meta as object | undefined) ?? {}), ...resultMeta }
  })

  /** M1 then M2 in the order conformance expects: missing _meta, version header, unsupported version, mirrors. */
  const validate = (request: RpcRequest, headers: EdgeRequest["headers"]): Either.Either<void, RpcError> => {
    const meta = metaOf(request.params)
    const version = meta?.[META.protocolVersion]
    if (meta === undefined || typeof version !== "string" || typeof meta[META.clientCapabilities] !== "object" || meta[META.clientCapabilities] === null) {
      return Either.left(new RpcError({
        code: ErrorCode.InvalidParams,
        message: `params._meta must carry "${META.protocolVersion}" and "${META.clientCapabilities}"`,
        status: 400
      }))
    }
    const versionHeader = headerValue(headers, "mcp-protocol-version")
    if (versionHeader !== version) {
      return Either.left(headerMismatch(`MCP-Protocol-Version header value '${versionHeader ?? ""}' does not match body value '${version}'`))
    }
    if (!isModernVersion(version)) {
      return Either.left(new RpcError({
        code: ErrorCode.UnsupportedProtocolVersion,
        message: "Unsupported protocol version",
        data: { supported: [...MODERN_VERSIONS], requested: version },
        status: 400
      }))
    }
    return Either.mapLeft(checkMirrorHeaders((n) => headerValue(headers, n), request.method, request.params), headerMismatch)
  }

  const discover = (): Outcome => ({
    result: { supportedVersions: [...MODERN_VERSIONS], capabilities, instructions: text },
    cache: CATALOG_CACHE
  })

  /** subscriptions/listen (M6): the ack first, then only the requested notice types, each tagged; bounded. */
  const listen = (request: RpcRequest, client: string): Either.Either<EdgeResponse, RpcError> =>
    Either.flatMap(
      Either.mapLeft(decodeListen(request.params), () => invalidParams("params.notifications must be a subscription filter")),
      ({ notifications }) => {
        const uris = [...new Set(notifications.resourceSubscriptions ?? [])]
        if (uris.length > settings.maxSubscriptions) {
          return Either.left(invalidParams(`too many resourceSubscriptions (WO_MAX_SUBSCRIPTIONS=${settings.maxSubscriptions})`))
        }
        // A live query naming a bad field would never notify: refuse the listen, naming the field.
        for (const uri of uris) {
          const query = parseLiveQuery(catalog, uri)
          if (query !== undefined && Either.isLeft(query)) return Either.left(invalidParams(`${uri}: ${query.left.message}`))
        }
        const lists = notifications.resourcesListChanged === true
        const honoured = { ...(uris.length ? { resourceSubscriptions: uris } : {}), ...(lists ? { resourcesListChanged: true } : {}) }
        return openListen({ id: request.id, client, uris, listChanges: lists, honoured })
      }
    )

  const answer = (request: RpcRequest, outcome: Effect.Effect<Outcome, RpcError>) =>
    Effect.match(outcome, { onFailure: (e) => rpcError(request.id, e), onSuccess: (o) => rpcResult(request.id, complete(o)) })

  const post = (message: RpcMessage, request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    // Notifications (such as the SDK's notifications/cancelled on closing a listen) and responses: 202 (M2).
    if (message._tag !== "Request") return Effect.succeed(accepted())
    const invalid = validate(message, request.headers)
    if (Either.isLeft(invalid)) return Effect.succeed(rpcError(message.id, invalid.left))
    switch (message.method) {
      case "server/discover":
        return Effect.succeed(rpcResult(message.id, complete(discover())))
      case "subscriptions/listen":
        return Effect.succeed(Either.match(listen(message, request.remoteAddress), { onLeft: (e) => rpcError(message.id, e), onRight: (r) => r }))
      case "initialize":
        // initialize carrying modern _meta is not a handshake we have in this era (M1).
        return Effect.succeed(rpcError(message.id, methodNotFound("modern", message.method)))
    }
    const token = metaOf(message.params)?.progressToken
    if (message.method === "tools/call" && (typeof token === "string" || typeof token === "number")) {
      const events = progressStream({
        token,
        run: (onStage) => dispatcher.handle("tools/call", message.params, { era: "modern", version: MODERN_VERSIONS[0], onStage }),
        respond: (outcome) =>
          Effect.match(outcome, {
            onFailure: (e) => errorMessage(message.id, e),
            onSuccess: (o) => resultMessage(message.id, complete(o))
          }),
        priming: false
      })
      return Effect.succeed({ _tag: "Stream", status: 200, headers: SSE_HEADERS, events })
    }
    return answer(message, dispatcher.handle(message.method, message.params, { era: "modern", version: MODERN_VERSIONS[0] }))
  }

  /** GET and DELETE have no meaning without sessions (M5). */
  const other = (request: EdgeRequest): Effect.Effect<EdgeResponse> =>
    Effect.succeed(httpError(405, `${request.method} is not used by MCP ${MODERN_VERSIONS[0]}: POST requests, and subscriptions/listen for notifications`, { allow: "POST" }))

  return { post, other }
}
