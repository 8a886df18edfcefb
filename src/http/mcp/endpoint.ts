/**
 * The /mcp endpoint: the checks common to both eras (C1, C2, C6), then the era's transport.
 */
import { Effect, Either } from "effect"
import type { EdgeRequest, EdgeResponse } from "../edge-types.ts"
import { describeBodyProblem, isJsonContentType, parseJsonBody } from "../json-body.ts"
import { accepts } from "./accept.ts"
import { eraOf } from "./era.ts"
import { ErrorCode } from "./protocol.ts"
import { classify, idOf, RpcError, type RpcMessage } from "./rpc.ts"
import { httpError, rpcError } from "./wire.ts"

export interface Transports {
  readonly legacy: (message: RpcMessage, request: EdgeRequest) => Effect.Effect<EdgeResponse>
  readonly modern?: (message: RpcMessage, request: EdgeRequest) => Effect.Effect<EdgeResponse>
  /** GET and DELETE; absent: 405. */
  readonly other?: (request: EdgeRequest) => Effect.Effect<EdgeResponse>
}

export const makeMcpEndpoint = (transports: Transports, maxJsonDepth: number) => (request: EdgeRequest): Effect.Effect<EdgeResponse> => {
  if (request.method !== "POST") {
    if (transports.other && (request.method === "GET" || request.method === "DELETE")) return transports.other(request)
    return Effect.succeed(httpError(405, `${request.method} is not supported on /mcp`, { allow: "POST" }))
  }
  const accept = request.headers.accept
  if (!accepts(accept, "application/json") || !accepts(accept, "text/event-stream")) {
    return Effect.succeed(httpError(406, "Accept must allow both application/json and text/event-stream"))
  }
  if (!isJsonContentType(request.headers["content-type"])) {
    return Effect.succeed(httpError(415, "Content-Type must be application/json"))
  }
  const parsed = parseJsonBody(request.body, maxJsonDepth)
  if (Either.isLeft(parsed)) {
    const problem = parsed.left
    return Effect.succeed(rpcError(null, problem._tag === "TooDeep"
      ? new RpcError({ code: ErrorCode.InvalidRequest, message: describeBodyProblem(problem), status: 400 })
      : new RpcError({ code: ErrorCode.ParseError, message: `Parse error: ${problem.message}`, status: 400 })))
  }
  const message = classify(parsed.right)
  if (Either.isLeft(message)) return Effect.succeed(rpcError(idOf(parsed.right), message.left))
  const params = message.right._tag === "Response" ? undefined : message.right.params
  if (eraOf(params, request.headers) === "modern" && transports.modern) return transports.modern(message.right, request)
  return transports.legacy(message.right, request)
}
