/**
 * Who a request acts as: a principal named in the access file, the one `WO_AUTH_TOKEN` holder, or an OAuth
 * client. The edge authenticates each request and attaches its principal; everything behind the edge reads it
 * from the request, never from the token again.
 */
import { allows, type Grants, type Operation } from "./grants.ts"
import type { PrincipalLimits } from "./rate-limits.ts"

export interface Principal {
  /** The principal's declared name (an OAuth client's `client_id`). It is what events record as their actor. */
  readonly name: string
  /** The subject an OAuth client acts for (the token's `sub`), when there is one. */
  readonly onBehalfOf?: string
  /** What it may do (grants.ts); absent: nothing. */
  readonly grants?: Grants
  /**
   * What marks what it owns: its idempotency keys (idempotency.ts) and its legacy sessions (session-owner.ts), so
   * that two principals' never meet. Absent on the `WO_AUTH_TOKEN` principal: it was the only one before
   * principals existed, so the keys and sessions it made then are still its own.
   */
  readonly keyScope?: string
  /** Its limits from the access file (rate-limits.ts), if any. */
  readonly limits?: PrincipalLimits
}

/**
 * Whether the request's principal may do `op`. No principal: the server requires no credential (loopback
 * without a token or an access file), and everything is allowed as it always was.
 */
export const may = (principal: Principal | undefined, op: Operation): boolean =>
  principal === undefined || (principal.grants !== undefined && allows(principal.grants, op))
