/**
 * What differs between the two eras, as one small interface each era implements (legacy-era.ts,
 * modern-era.ts): how a request is admitted (a session, or `_meta` and mirror headers), how a result is
 * decorated (resultType, cache hints, serverInfo), how a failure is spelled (its code, and the kind of refusal
 * that the transport gives a status). Everything else (the methods, the tools, the resources) is the
 * dispatcher's, shared by both.
 */
import type { Effect, Either } from "effect"
import type { Principal } from "../../access/principal.ts"
import { forbiddenRpc, limitedRpc } from "../edge/access-refusals.ts"
import type { LimitReached } from "../../access/rate-limits.ts"
import { storeErrorPolicy, type StoreError } from "../../domain/errors.ts"
import type { CallContext, Failure, Forbidden, Limited, Outcome, Unavailable } from "./dispatcher.ts"
import { ErrorCode, internalError, RpcError, type Era, type Params, type RpcRequest } from "./protocol.ts"

/** What the transport read from the HTTP request, once, for the policies: header values and `_meta`. */
export interface Envelope {
  readonly meta: Params | undefined
  /** MCP-Protocol-Version. */
  readonly protocolVersion: string | undefined
  /** Mcp-Method and Mcp-Name, which must repeat the body's method and name. */
  readonly mcpMethod: string | undefined
  readonly mcpName: string | undefined
  /** Mcp-Session-Id (legacy). */
  readonly sessionId: string | undefined
  /** The caller's address. */
  readonly client: string
  /** Who the request acts as (the router authenticated it), when a credential is required. */
  readonly principal?: Principal
}

/**
 * A request refused before or by its handler, as the protocol sees it: the JSON-RPC error, and why, which the
 * transport alone turns into an HTTP status (transport.ts REFUSAL_STATUS).
 */
export type Refusal =
  /** An error answer to a request that was understood: the error travels as an ordinary response. */
  | { readonly _tag: "Answered"; readonly error: RpcError }
  /** The message or its envelope (headers, `_meta`, the version) is not one this server can take. */
  | { readonly _tag: "Malformed"; readonly error: RpcError }
  /** The session named does not exist (expired or terminated). */
  | { readonly _tag: "UnknownSession"; readonly error: RpcError }
  /** No such method in this era (the modern era answers it with HTTP 404). */
  | { readonly _tag: "UnknownMethod"; readonly error: RpcError }
  /** A cap on open streams is reached. */
  | { readonly _tag: "TooMany"; readonly error: RpcError }
  /** The principal lacks a grant the request needs (HTTP 403, as an OAuth client's insufficient scope). */
  | { readonly _tag: "Forbidden"; readonly error: RpcError; readonly grants: ReadonlyArray<string> }
  /** The principal reached one of its limits (HTTP 429 with Retry-After). */
  | { readonly _tag: "Limited"; readonly error: RpcError; readonly retryAfter: number }
  /** The server cannot serve it now; `retryAfter` (seconds) when a retry can succeed. */
  | { readonly _tag: "Unavailable"; readonly error: RpcError; readonly retryAfter: number | undefined }

export const answered = (error: RpcError): Refusal => ({ _tag: "Answered", error })
export const limitedRefusal = (reached: LimitReached): Refusal => ({ _tag: "Limited", error: limitedRpc(reached), retryAfter: reached.retryAfter })
export const malformed = (error: RpcError): Refusal => ({ _tag: "Malformed", error })

/** A store error as STORE_ERRORS spells it for MCP: its JSON-RPC code, the message, its Retry-After. */
export const storeDown = (e: StoreError): Refusal => {
  const { mcp, retryAfter } = storeErrorPolicy(e)
  return { _tag: "Unavailable", error: new RpcError({ code: ErrorCode[mcp], message: e.message }), retryAfter }
}

/** A handler's failure that both eras spell alike: a grant missing, a cap reached, or the store down. */
export const unavailable = (failure: Forbidden | Limited | Unavailable | StoreError): Refusal =>
  failure._tag === "Forbidden"
    ? { _tag: "Forbidden", error: forbiddenRpc(failure.grants), grants: failure.grants }
    : failure._tag === "Limited"
    ? limitedRefusal(failure.reached)
    : failure._tag === "Unavailable"
    ? { _tag: "Unavailable", error: internalError(failure.message), retryAfter: failure.retryAfter }
    : storeDown(failure)

/**
 * An admission: an Either when it is decided without waiting (the modern era's checks, a legacy request without
 * a session id), which the transport serves without running it as an Effect (bench: MCP get), else an Effect (a
 * legacy session's lookup, which may ask the store).
 */
export type Admission = Either.Either<CallContext, Refusal> | Effect.Effect<CallContext, Refusal>

export interface EraPolicy {
  readonly era: Era
  /** The context a request is served in, or why it is refused. */
  readonly admit: (request: RpcRequest, envelope: Envelope) => Admission
  /** Whether a notification or response is accepted (then 202). */
  readonly admitNotice: (envelope: Envelope) => Effect.Effect<void, Refusal>
  /** A result as this era puts it on the wire. */
  readonly decorate: (outcome: Outcome) => Outcome
  /** A handler's failure as this era spells it. */
  readonly refuse: (failure: Failure) => Refusal
  /** How a request's SSE response (progress) opens and numbers its events. */
  readonly streamShape: (context: CallContext) => { readonly eventIds: boolean; readonly priming: boolean }
}
