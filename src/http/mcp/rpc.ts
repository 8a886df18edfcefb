/**
 * The JSON-RPC 2.0 envelope: decoding one message through Schema, classifying it, and building responses.
 */
import { Data, Either, Schema } from "effect"
import { ErrorCode } from "./protocol.ts"

export type RpcId = string | number

const Id = Schema.Union(Schema.String, Schema.Number.pipe(Schema.finite()))
const Params = Schema.Record({ key: Schema.String, value: Schema.Unknown })

const RequestMessage = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: Id,
  method: Schema.String,
  params: Schema.optional(Params)
})
const NotificationMessage = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  method: Schema.String,
  params: Schema.optional(Params)
})
const ResponseMessage = Schema.Struct({
  jsonrpc: Schema.Literal("2.0"),
  id: Schema.Union(Id, Schema.Null)
})

const decodeRequest = Schema.decodeUnknownEither(RequestMessage)
const decodeNotification = Schema.decodeUnknownEither(NotificationMessage)
const decodeResponse = Schema.decodeUnknownEither(ResponseMessage)

export interface RpcRequest {
  readonly _tag: "Request"
  readonly id: RpcId
  readonly method: string
  readonly params: Readonly<Record<string, unknown>>
}

export type RpcMessage =
  | RpcRequest
  | { readonly _tag: "Notification"; readonly method: string; readonly params: Readonly<Record<string, unknown>> }
  | { readonly _tag: "Response" }

/** A protocol error: JSON-RPC code, message and data, plus the HTTP status the transport should use. */
export class RpcError extends Data.TaggedError("RpcError")<{
  readonly code: number
  readonly message: string
  readonly data?: unknown
  readonly status?: number
}> {}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The id of a message we could not accept, when it has a usable one (else null). */
export const idOf = (u: unknown): RpcId | null => {
  if (!isObject(u)) return null
  const id = u.id
  return typeof id === "string" || (typeof id === "number" && Number.isFinite(id)) ? id : null
}

/** Classifies one parsed JSON value (C1, C2): a batch or anything not JSON-RPC is -32600. */
export const classify = (u: unknown): Either.Either<RpcMessage, RpcError> => {
  if (Array.isArray(u)) {
    return Either.left(new RpcError({ code: ErrorCode.InvalidRequest, message: "batches are not supported: send one JSON-RPC message per request", status: 400 }))
  }
  const invalid = (why: string) => Either.left(new RpcError({ code: ErrorCode.InvalidRequest, message: `invalid JSON-RPC message: ${why}`, status: 400 }))
  if (!isObject(u)) return invalid("expected an object")
  if ("method" in u) {
    if ("id" in u) {
      return Either.match(decodeRequest(u), {
        onLeft: () => invalid("a request needs jsonrpc \"2.0\", a string or number id, a string method and object params"),
        onRight: (r) => Either.right({ _tag: "Request", id: r.id, method: r.method, params: r.params ?? {} })
      })
    }
    return Either.match(decodeNotification(u), {
      onLeft: () => invalid("a notification needs jsonrpc \"2.0\", a string method and object params"),
      onRight: (n) => Either.right({ _tag: "Notification", method: n.method, params: n.params ?? {} })
    })
  }
  if (("result" in u || "error" in u) && Either.isRight(decodeResponse(u))) return Either.right({ _tag: "Response" })
  return invalid("neither a request, a notification nor a response")
}

export const resultMessage = (id: RpcId, result: unknown) => ({ jsonrpc: "2.0" as const, id, result })

export const errorMessage = (id: RpcId | null, error: RpcError) => ({
  jsonrpc: "2.0" as const,
  id,
  error: error.data === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, data: error.data }
})

export const invalidParams = (message: string, data?: unknown) =>
  new RpcError({ code: ErrorCode.InvalidParams, message, data })
