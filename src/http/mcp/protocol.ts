/**
 * The MCP protocol as this server speaks it, with no HTTP in it: the revisions of both eras, the method names,
 * the error codes and `_meta` keys, the JSON-RPC 2.0 messages (decoded through Schema), `classify`, the era
 * predicate and the message builders. HTTP statuses are not here: the era policies and the transport map
 * errors to statuses (see era-policy.ts, transport.ts). test/unit/protocol-sdk.test.ts pins these constants
 * to the ones the official SDK packages export.
 */
import { Either, Schema } from "effect"
import { errorMessage, JsonRpcErrorCode, RpcError, type RpcId } from "../edge/json-rpc-errors.ts"

export { errorMessage, RpcError, type RpcId }

// ---------------------------------------------------------------------------------------------------
// Revisions

/** Session-based revisions, oldest first. */
export const LEGACY_VERSIONS = ["2025-03-26", "2025-06-18", "2025-11-25"] as const
/** Stateless revisions (per-request `_meta`). */
export const MODERN_VERSIONS = ["2026-07-28"] as const
export const LATEST_LEGACY = "2025-11-25"
/** Assumed when a legacy request carries no MCP-Protocol-Version header (spec: backwards compatibility). */
export const DEFAULT_LEGACY_HEADER_VERSION = "2025-03-26"
/** The first revision whose POST SSE streams open with a priming event. */
export const PRIMING_SINCE = "2025-11-25"

export const isLegacyVersion = (v: unknown): v is string => (LEGACY_VERSIONS as ReadonlyArray<unknown>).includes(v)
export const isModernVersion = (v: unknown): v is string => (MODERN_VERSIONS as ReadonlyArray<unknown>).includes(v)

/** The client's version when we support it, else the newest legacy version. */
export const negotiate = (requested: string) => (isLegacyVersion(requested) ? requested : LATEST_LEGACY)

export type Era = "legacy" | "modern"

// ---------------------------------------------------------------------------------------------------
// Names

export const META = {
  protocolVersion: "io.modelcontextprotocol/protocolVersion",
  clientCapabilities: "io.modelcontextprotocol/clientCapabilities",
  clientInfo: "io.modelcontextprotocol/clientInfo",
  serverInfo: "io.modelcontextprotocol/serverInfo",
  subscriptionId: "io.modelcontextprotocol/subscriptionId"
} as const

/** Every request method this server answers, in one era or both (see dispatcher.ts). */
export const Method = {
  initialize: "initialize",
  ping: "ping",
  discover: "server/discover",
  listen: "subscriptions/listen",
  toolsList: "tools/list",
  toolsCall: "tools/call",
  resourcesList: "resources/list",
  resourceTemplatesList: "resources/templates/list",
  resourcesRead: "resources/read",
  resourcesSubscribe: "resources/subscribe",
  resourcesUnsubscribe: "resources/unsubscribe"
} as const
export type Method = (typeof Method)[keyof typeof Method]

/** Notifications this server sends. */
export const Notification = {
  progress: "notifications/progress",
  resourceUpdated: "notifications/resources/updated",
  resourceListChanged: "notifications/resources/list_changed",
  toolListChanged: "notifications/tools/list_changed",
  subscriptionsAcknowledged: "notifications/subscriptions/acknowledged"
} as const

/** JSON-RPC's own codes, then MCP's. */
export const ErrorCode = {
  ...JsonRpcErrorCode,
  /** Legacy era: resource not found. */
  ResourceNotFound: -32002,
  /** Modern era: an Mcp-* header is missing or disagrees with the body. */
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022
} as const

// ---------------------------------------------------------------------------------------------------
// Messages

export type Params = Readonly<Record<string, unknown>>

const Id = Schema.Union(Schema.String, Schema.Number.pipe(Schema.finite()))
const ParamsSchema = Schema.Record({ key: Schema.String, value: Schema.Unknown })

const RequestMessage = Schema.Struct({ jsonrpc: Schema.Literal("2.0"), id: Id, method: Schema.String, params: Schema.optional(ParamsSchema) })
const NotificationMessage = Schema.Struct({ jsonrpc: Schema.Literal("2.0"), method: Schema.String, params: Schema.optional(ParamsSchema) })
const ResponseMessage = Schema.Struct({ jsonrpc: Schema.Literal("2.0"), id: Schema.Union(Id, Schema.Null) })

const decodeRequest = Schema.decodeUnknownEither(RequestMessage)
const decodeNotification = Schema.decodeUnknownEither(NotificationMessage)
const decodeResponse = Schema.decodeUnknownEither(ResponseMessage)

export interface RpcRequest {
  readonly _tag: "Request"
  readonly id: RpcId
  readonly method: string
  readonly params: Params
}

export type RpcMessage =
  | RpcRequest
  | { readonly _tag: "Notification"; readonly method: string; readonly params: Params }
  | { readonly _tag: "Response" }

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The id of a message we could not accept, when it has a usable one (else null). */
export const idOf = (u: unknown): RpcId | null => {
  if (!isObject(u)) return null
  const id = u.id
  return typeof id === "string" || (typeof id === "number" && Number.isFinite(id)) ? id : null
}

const invalidMessage = (why: string) => Either.left(new RpcError({ code: ErrorCode.InvalidRequest, message: `invalid JSON-RPC message: ${why}` }))

/** Classifies one parsed JSON value: a batch or anything not JSON-RPC is -32600. */
export const classify = (u: unknown): Either.Either<RpcMessage, RpcError> => {
  if (Array.isArray(u)) {
    return Either.left(new RpcError({ code: ErrorCode.InvalidRequest, message: "batches are not supported: send one JSON-RPC message per request" }))
  }
  if (!isObject(u)) return invalidMessage("expected an object")
  // Hot path (bench: the Schema decode was 7% of an MCP get's CPU): a well-formed request is recognised by
  // hand, with exactly the Schema's rules; anything else goes through the Schemas, which also word the errors.
  const { id, method, params } = u
  if (
    u.jsonrpc === "2.0" && typeof method === "string" && (typeof id === "string" || (typeof id === "number" && Number.isFinite(id))) &&
    (params === undefined || isObject(params))
  ) {
    return Either.right({ _tag: "Request", id, method, params: params ?? {} })
  }
  if ("method" in u) {
    if ("id" in u) {
      return Either.match(decodeRequest(u), {
        onLeft: () => invalidMessage("a request needs jsonrpc \"2.0\", a string or number id, a string method and object params"),
        onRight: (r) => Either.right({ _tag: "Request", id: r.id, method: r.method, params: r.params ?? {} })
      })
    }
    return Either.match(decodeNotification(u), {
      onLeft: () => invalidMessage("a notification needs jsonrpc \"2.0\", a string method and object params"),
      onRight: (n) => Either.right({ _tag: "Notification", method: n.method, params: n.params ?? {} })
    })
  }
  if (("result" in u || "error" in u) && Either.isRight(decodeResponse(u))) return Either.right({ _tag: "Response" })
  return invalidMessage("neither a request, a notification nor a response")
}

/** A message's `params._meta`, when it is an object. */
export const metaOf = (params: Params | undefined): Params | undefined => {
  const meta = params?._meta
  return isObject(meta) ? meta : undefined
}

/**
 * The era predicate, from the envelope and never from the method name: body `_meta` naming a protocol version,
 * or an MCP-Protocol-Version header naming a modern revision, is the stateless era; anything else is legacy.
 */
export const eraOf = (meta: Params | undefined, versionHeader: string | undefined): Era => {
  if (meta !== undefined && META.protocolVersion in meta) return "modern"
  return isModernVersion(versionHeader) ? "modern" : "legacy"
}

/** A request's progress token (`_meta.progressToken`), when it asks for progress. */
export const progressTokenOf = (meta: Params | undefined): string | number | undefined => {
  const token = meta?.progressToken
  return typeof token === "string" || typeof token === "number" ? token : undefined
}

export const resultMessage = (id: RpcId, result: unknown) => ({ jsonrpc: "2.0" as const, id, result })

export const notificationMessage = (method: string, params: object) => ({ jsonrpc: "2.0" as const, method, params })

// ---------------------------------------------------------------------------------------------------
// Params of the methods this server answers (only what it reads; other keys are ignored)

export const PaginatedParams = Schema.Struct({ cursor: Schema.optional(Schema.String) })
export const CallToolParams = Schema.Struct({
  name: Schema.String,
  arguments: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
})
export const ReadResourceParams = Schema.Struct({ uri: Schema.String })
/** resources/subscribe and resources/unsubscribe. */
export const SubscribeParams = Schema.Struct({ uri: Schema.String })
export const InitializeParams = Schema.Struct({
  protocolVersion: Schema.String,
  capabilities: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  clientInfo: Schema.optional(Schema.Struct({ name: Schema.String, version: Schema.optional(Schema.String) }))
})
export const ListenParams = Schema.Struct({
  notifications: Schema.Struct({
    resourceSubscriptions: Schema.optional(Schema.Array(Schema.String)),
    resourcesListChanged: Schema.optional(Schema.Boolean),
    toolsListChanged: Schema.optional(Schema.Boolean),
    promptsListChanged: Schema.optional(Schema.Boolean)
  })
})

/** A decoder of a method's params whose failure is -32602 naming the problem. */
export const decodeParams = <A, I>(schema: Schema.Schema<A, I>) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (params: unknown): Either.Either<A, RpcError> =>
    Either.mapLeft(decode(params), (e) => invalidParams(`invalid params: ${e.message.split("\n").slice(-1)[0].trim()}`))
}

// ---------------------------------------------------------------------------------------------------
// Errors every era raises

export const invalidParams = (message: string, data?: unknown) => new RpcError({ code: ErrorCode.InvalidParams, message, data })

export const invalidRequest = (message: string) => new RpcError({ code: ErrorCode.InvalidRequest, message })

export const internalError = (message: string, data?: unknown) => new RpcError({ code: ErrorCode.InternalError, message, data })

export const methodNotFound = (method: string) => new RpcError({ code: ErrorCode.MethodNotFound, message: `Method not found: ${method}` })

export const headerMismatch = (message: string) => new RpcError({ code: ErrorCode.HeaderMismatch, message: `Header mismatch: ${message}` })
