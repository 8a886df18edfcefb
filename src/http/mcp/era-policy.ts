/**
 * What differs between the two eras, as one small interface each era implements (legacy-era.ts,
 * modern-era.ts): how a request is admitted (a session, or `_meta` and mirror headers), how a result is
 * decorated (resultType, cache hints, serverInfo), how a failure is spelled (codes and statuses). Everything
 * else (the methods, the tools, the resources) is the dispatcher's, shared by both.
 */
import type { Effect } from "effect"
import type { CallContext, Failure, Outcome } from "./dispatcher.ts"
import type { Era, Params, RpcError, RpcRequest } from "./protocol.ts"

/** What the transport read from the HTTP request, once, for the policies: header values and `_meta`. */
export interface Envelope {
  readonly meta: Params | undefined
  /** MCP-Protocol-Version. */
  readonly protocolVersion: string | undefined
  /** Mcp-Method and Mcp-Name (M2). */
  readonly mcpMethod: string | undefined
  readonly mcpName: string | undefined
  /** Mcp-Session-Id (legacy). */
  readonly sessionId: string | undefined
  /** The caller's address. */
  readonly client: string
}

/** A request refused before or by its handler: the JSON-RPC error and the HTTP status it travels with. */
export interface Refusal {
  readonly error: RpcError
  readonly status: number
}

export interface EraPolicy {
  readonly era: Era
  /** The context a request is served in, or why it is refused. */
  readonly admit: (request: RpcRequest, envelope: Envelope) => Effect.Effect<CallContext, Refusal>
  /** Whether a notification or response is accepted (then 202). */
  readonly admitNotice: (envelope: Envelope) => Effect.Effect<void, Refusal>
  /** A result as this era puts it on the wire. */
  readonly decorate: (outcome: Outcome) => Outcome
  /** A handler's failure as this era spells it. */
  readonly refuse: (failure: Failure) => Refusal
  /** How a request's SSE response (progress) opens and numbers its events. */
  readonly streamShape: (context: CallContext) => { readonly eventIds: boolean; readonly priming: boolean }
}
