/**
 * The modern era's policy (2026-07-28): stateless. Every request carries its own `_meta` and mirror headers,
 * checked in the order conformance expects: missing `_meta`, the version header, an unsupported version, the
 * mirrors; all malformed (400). Notifications need neither (the SDK's notifications/cancelled). Every result
 * carries `resultType: "complete"`, serverInfo in `_meta` and, when cacheable, `ttlMs` and `cacheScope`. An unknown
 * method is its own refusal (404); resource not found is -32602 with `data.uri`. The transport gives each refusal
 * its HTTP status.
 */
import { Effect, Either } from "effect"
import type { Failure, Outcome } from "./dispatcher.ts"
import { answered, malformed, unavailable, type EraPolicy, type Refusal } from "./era-policy.ts"
import { checkMirrorHeaders } from "./headers.ts"
import { ErrorCode, headerMismatch, invalidParams, isModernVersion, META, MODERN_VERSIONS, RpcError } from "./protocol.ts"
import type { ServerDescription } from "./server-info.ts"

export const makeModernPolicy = (server: ServerDescription): EraPolicy => {
  const resultMeta = { [META.serverInfo]: server.info }
  // Hot path (bench: MCP get, modern): the decoration of a result already in JSON is spliced in as text.
  const metaJson = JSON.stringify(resultMeta)

  const decorate = (outcome: Outcome): Outcome => {
    const { result, json, cache } = outcome
    if (json !== undefined && json.length > 2) {
      const hints = cache === undefined ? "" : `,"ttlMs":${cache.ttlMs},"cacheScope":${JSON.stringify(cache.cacheScope)}`
      return { result, json: `${json.slice(0, -1)},"resultType":"complete"${hints},"_meta":${metaJson}}` }
    }
    // Object.assign, not spreads followed by new keys: on Node 20 those make a new hidden class per result
    // (edge-types.ts `jsonText`). The result is the server's own object; what a tool returns is inside it.
    return {
      result: Object.assign({}, result, { resultType: "complete" }, cache ?? {}, {
        _meta: Object.assign({}, (result._meta as object | undefined) ?? {}, resultMeta)
      })
    }
  }

  const refuse = (failure: Failure): Refusal => {
    switch (failure._tag) {
      case "ResourceMissing":
        return answered(invalidParams(`Resource not found: ${failure.uri}`, { uri: failure.uri }))
      case "RpcError":
        return failure.code === ErrorCode.MethodNotFound ? { _tag: "UnknownMethod", error: failure } : answered(failure)
      default:
        return unavailable(failure)
    }
  }

  return {
    era: "modern",
    admit: (request, envelope) => {
      const { meta } = envelope
      const version = meta?.[META.protocolVersion]
      const capabilities = meta?.[META.clientCapabilities]
      if (meta === undefined || typeof version !== "string" || typeof capabilities !== "object" || capabilities === null) {
        return Either.left(malformed(invalidParams(`params._meta must carry "${META.protocolVersion}" and "${META.clientCapabilities}"`)))
      }
      if (envelope.protocolVersion !== version) {
        return Either.left(malformed(headerMismatch(`MCP-Protocol-Version header value '${envelope.protocolVersion ?? ""}' does not match body value '${version}'`)))
      }
      if (!isModernVersion(version)) {
        return Either.left(malformed(
          new RpcError({ code: ErrorCode.UnsupportedProtocolVersion, message: "Unsupported protocol version", data: { supported: [...MODERN_VERSIONS], requested: version } })))
      }
      const mirrors = checkMirrorHeaders(envelope, request.method, request.params)
      if (Either.isLeft(mirrors)) return Either.left(malformed(headerMismatch(mirrors.left)))
      return Either.right({ era: "modern", version, meta, client: envelope.client, principal: envelope.principal })
    },
    // A POSTed notification or response gets 202, even without Mcp-Method.
    admitNotice: () => Effect.void,
    decorate,
    refuse,
    streamShape: () => ({ eventIds: false, priming: false })
  }
}
