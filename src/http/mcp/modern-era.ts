/**
 * The modern era's policy (2026-07-28): stateless. Every request carries its own `_meta` (M1) and mirror
 * headers (M2), checked in the order conformance expects: missing `_meta`, the version header, an unsupported
 * version, the mirrors; all 400. Notifications need neither (the SDK's notifications/cancelled). Every result
 * carries `resultType: "complete"`, serverInfo in `_meta` and, when cacheable, `ttlMs` and `cacheScope` (M3, M4).
 * An unknown method is 404 (C2); resource not found is -32602 with `data.uri` (M8).
 */
import { Effect, Either } from "effect"
import type { Failure, Outcome } from "./dispatcher.ts"
import type { EraPolicy, Refusal } from "./era-policy.ts"
import { checkMirrorHeaders } from "./headers.ts"
import { ErrorCode, headerMismatch, invalidParams, isModernVersion, META, MODERN_VERSIONS, RpcError } from "./protocol.ts"
import type { ServerDescription } from "./server-info.ts"

const refusal = (error: RpcError, status: number): Refusal => ({ error, status })

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
    return {
      result: {
        ...result,
        resultType: "complete",
        ...(cache ?? {}),
        _meta: { ...((result._meta as object | undefined) ?? {}), ...resultMeta }
      }
    }
  }

  const refuse = (failure: Failure): Refusal => {
    switch (failure._tag) {
      case "ResourceMissing":
        return refusal(invalidParams(`Resource not found: ${failure.uri}`, { uri: failure.uri }), 200)
      case "Unavailable":
        return refusal(new RpcError({ code: ErrorCode.InternalError, message: failure.message }), 503)
      case "RpcError":
        return refusal(failure, failure.code === ErrorCode.MethodNotFound ? 404 : 200)
    }
  }

  return {
    era: "modern",
    admit: (request, envelope) => {
      const { meta } = envelope
      const version = meta?.[META.protocolVersion]
      const capabilities = meta?.[META.clientCapabilities]
      if (meta === undefined || typeof version !== "string" || typeof capabilities !== "object" || capabilities === null) {
        return Effect.fail(refusal(invalidParams(`params._meta must carry "${META.protocolVersion}" and "${META.clientCapabilities}"`), 400))
      }
      if (envelope.protocolVersion !== version) {
        return Effect.fail(refusal(headerMismatch(`MCP-Protocol-Version header value '${envelope.protocolVersion ?? ""}' does not match body value '${version}'`), 400))
      }
      if (!isModernVersion(version)) {
        return Effect.fail(refusal(
          new RpcError({ code: ErrorCode.UnsupportedProtocolVersion, message: "Unsupported protocol version", data: { supported: [...MODERN_VERSIONS], requested: version } }),
          400
        ))
      }
      const mirrors = checkMirrorHeaders(envelope, request.method, request.params)
      if (Either.isLeft(mirrors)) return Effect.fail(refusal(headerMismatch(mirrors.left), 400))
      return Effect.succeed({ era: "modern", version, meta, client: envelope.client })
    },
    // M2: a POSTed notification or response gets 202, even without Mcp-Method.
    admitNotice: () => Effect.void,
    decorate,
    refuse,
    streamShape: () => ({ eventIds: false, priming: false })
  }
}
