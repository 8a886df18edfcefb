/**
 * The legacy era (2025-03-26 .. 2025-11-25): `initialize` negotiates a version; later requests carry
 * MCP-Protocol-Version (absent: 2025-03-26; unsupported: 400). Part 1 runs without sessions, which the spec allows.
 */
import { Effect, Either, Schema } from "effect"
import type { CompiledApp } from "../../domain/compile.ts"
import type { EdgeRequest, EdgeResponse } from "../edge-types.ts"
import type { Dispatcher } from "./dispatch.ts"
import { headerValue } from "./era.ts"
import { DEFAULT_LEGACY_HEADER_VERSION, ErrorCode, isLegacyVersion, LATEST_LEGACY, LEGACY_VERSIONS } from "./protocol.ts"
import { invalidParams, RpcError, type RpcMessage, type RpcRequest } from "./rpc.ts"
import { instructions, serverInfo } from "./server-info.ts"
import { accepted, rpcError, rpcResult } from "./wire.ts"

const InitializeParams = Schema.Struct({
  protocolVersion: Schema.String,
  capabilities: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  clientInfo: Schema.optional(Schema.Struct({ name: Schema.String, version: Schema.optional(Schema.String) }))
})
const decodeInitialize = Schema.decodeUnknownEither(InitializeParams)

/** L1: the client's version when we support it, else the newest legacy version. */
export const negotiate = (requested: string) => (isLegacyVersion(requested) ? requested : LATEST_LEGACY)

export const makeLegacy = (catalog: CompiledApp, dispatcher: Dispatcher) => {
  const info = serverInfo(catalog)
  const text = instructions(catalog, dispatcher.tools.map((t) => t.definition.name))
  const capabilities = { tools: {}, resources: { subscribe: false } }

  const initialize = (request: RpcRequest): EdgeResponse =>
    Either.match(decodeInitialize(request.params), {
      onLeft: () => rpcError(request.id, invalidParams("initialize needs params.protocolVersion")),
      onRight: (params) =>
        rpcResult(request.id, { protocolVersion: negotiate(params.protocolVersion), capabilities, serverInfo: info, instructions: text })
    })

  return (message: RpcMessage, request: EdgeRequest): Effect.Effect<EdgeResponse> => {
    if (message._tag !== "Request") return Effect.succeed(accepted())
    if (message.method === "initialize") return Effect.succeed(initialize(message))
    const version = headerValue(request.headers, "mcp-protocol-version") ?? DEFAULT_LEGACY_HEADER_VERSION
    if (!isLegacyVersion(version)) {
      return Effect.succeed(rpcError(message.id, new RpcError({
        code: ErrorCode.InvalidRequest,
        message: `Unsupported MCP-Protocol-Version: ${version} (supported: ${LEGACY_VERSIONS.join(", ")})`,
        status: 400
      })))
    }
    if (message.method === "ping") return Effect.succeed(rpcResult(message.id, {}))
    return dispatcher.handle(message.method, message.params, { era: "legacy", version }).pipe(
      Effect.match({
        onFailure: (e) => rpcError(message.id, e),
        onSuccess: (outcome) => rpcResult(message.id, outcome.result)
      })
    )
  }
}
