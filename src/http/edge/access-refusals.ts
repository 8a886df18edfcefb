/**
 * The answers of authentication and authorization, built here only: 401 without a valid credential, 403 for an
 * operation not granted (REST: `{"error":"Forbidden","message","grant"}`; MCP: a JSON-RPC error with the grant in
 * `data`, on HTTP 403). The headers an OAuth resource server adds (`WWW-Authenticate` with `resource_metadata`,
 * `insufficient_scope`) belong here too.
 */
import { edgeError } from "./edge-error.ts"
import { errorJson, type EdgeResponse, type Headers } from "./edge-types.ts"
import { RpcError } from "./json-rpc-errors.ts"
import { grantFor, type Operation } from "../../access/grants.ts"
import { describeLimit, type LimitReached } from "../../access/rate-limits.ts"

export const WWW_AUTHENTICATE = 'Bearer realm="writeonce"'

/** The JSON-RPC code of a refusal for want of a grant: outside JSON-RPC's reserved range, as HTTP's 403. */
export const FORBIDDEN_CODE = 403

/** `challenge`: OAuth's, naming where its metadata is (access.ts); else the plain Bearer realm. */
export const unauthorized = (path: string, challenge: string = WWW_AUTHENTICATE, refused?: string): EdgeResponse =>
  edgeError(path, 401, "Unauthorized", refused === undefined ? "a valid bearer token is required (Authorization: Bearer <token>)" : `the bearer token is refused: ${refused}`, {
    "www-authenticate": challenge
  })

/** A credential that could not be judged for the server's want (the OAuth issuer's keys out of reach): 503. */
export const credentialsUnavailable = (path: string, why: string): EdgeResponse =>
  edgeError(path, 503, "Unavailable", `the bearer token cannot be checked now (${why}); retry`, { "retry-after": "5" })

/** The headers of every 403 for want of a grant: OAuth's `insufficient_scope` challenge when OAuth is on. */
export const forbiddenHeaders = (challenge: string | undefined): Headers => (challenge === undefined ? {} : { "www-authenticate": challenge })

const forbiddenMessage = (grants: ReadonlyArray<string>) =>
  `this principal may not do that: it needs the grant ${grants.map((g) => JSON.stringify(g)).join(" and ")}`

/** REST's 403 (and the console's, and /metrics'). */
export const forbidden = (op: Operation, challenge?: (grants: ReadonlyArray<string>) => string): EdgeResponse => {
  const grant = grantFor(op)
  return errorJson(403, "Forbidden", forbiddenMessage([grant]), { grant }, forbiddenHeaders(challenge?.([grant])))
}

/** The JSON-RPC code of a refusal for a principal's limit: outside JSON-RPC's reserved range, as HTTP's 429. */
export const LIMITED_CODE = 429

/** REST's 429 for a principal's limit, with Retry-After. */
export const limited = (reached: LimitReached): EdgeResponse =>
  errorJson(429, "TooManyRequests", describeLimit(reached), { limit: reached.limit }, { "retry-after": String(reached.retryAfter) })

/** MCP's refusal for a principal's limit (the transport answers it on HTTP 429 with Retry-After). */
export const limitedRpc = (reached: LimitReached): RpcError =>
  new RpcError({ code: LIMITED_CODE, message: describeLimit(reached), data: { limit: reached.limit, value: reached.value, retryAfter: reached.retryAfter } })

/** MCP's refusal for want of grants, as a JSON-RPC error (the transport answers it on HTTP 403). */
export const forbiddenRpc = (grants: ReadonlyArray<string>): RpcError =>
  new RpcError({ code: FORBIDDEN_CODE, message: forbiddenMessage(grants), data: { grant: grants[0], grants } })
