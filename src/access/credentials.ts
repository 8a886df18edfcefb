/**
 * Where principals come from: a list of credential sources, each mapping a bearer token to a principal or saying
 * "not mine". The access file and `WO_AUTH_TOKEN` are sources; an OAuth resource server is one more (it may
 * answer with an Effect the first time it sees a token, to verify it; later, synchronously from its cache).
 */
import { Effect } from "effect"
import { hash, timingSafeEqual } from "node:crypto"
import type { Principal } from "./principal.ts"

/**
 * A credential a source judged and refused (an OAuth token expired, say): why, for the 401's challenge, and whether
 * the fault is the server's (the issuer's keys could not be fetched: 503, the token not judged).
 */
export class CredentialRefused {
  constructor(readonly reason: string, readonly unavailable: boolean) {}
}

/** A principal, a refusal, "not mine" (undefined), or the verification still to run. */
export type Authenticated = Principal | CredentialRefused | undefined | Effect.Effect<Principal | CredentialRefused | undefined>

export interface CredentialSource {
  /**
   * The principal `token` stands for, or undefined when it is not this source's. `digest` is sha256(token) as
   * hex, computed once per request for every source.
   */
  readonly authenticate: (token: string, digest: string) => Authenticated
  /** Whether a principal this source gave is still in force (false once revoked, and for another source's). */
  readonly current: (principal: Principal) => boolean
}

const BEARER = /^Bearer\s+(\S+)\s*$/i
/** What nearly every client sends: `Bearer <token>`, one space, nothing after (checked without the regex). */
const PLAIN = /^Bearer [^\s]+$/

/** The bearer token of an Authorization header, or undefined. */
export const bearerToken = (authorization: string | undefined): string | undefined => {
  if (authorization === undefined) return undefined
  if (PLAIN.test(authorization)) return authorization.slice(7)
  const m = BEARER.exec(authorization)
  return m === null ? undefined : m[1]
}

/**
 * sha256 of a token, as hex. One-shot `hash`, on every authenticated request: a `createHash` object costs five
 * times as much (3.6 µs against 0.7 here), most of what a principal cost a GET (bench/scenarios/access-cost.ts).
 */
export const sha256Hex = (token: string) => hash("sha256", token, "hex")

/** The name events record for `WO_AUTH_TOKEN`'s principal. */
export const AUTH_TOKEN_PRINCIPAL = "auth-token"

/**
 * `WO_AUTH_TOKEN`: one principal with `admin`. Compared in constant time over the digests, so neither the token
 * nor its length leaks through timing.
 */
export const authTokenSource = (token: string, principal: Principal): CredentialSource => {
  const expected = Buffer.from(sha256Hex(token), "hex")
  return {
    authenticate: (_token, digest) => (timingSafeEqual(Buffer.from(digest, "hex"), expected) ? principal : undefined),
    current: (p) => p === principal
  }
}

/**
 * The access file's principals, by token digest: one Map lookup whatever their number. The lookup is by the
 * digest, never by the token, so its timing tells nothing usable about any token.
 */
export interface PrincipalTable {
  readonly byDigest: ReadonlyMap<string, Principal>
  readonly all: ReadonlySet<Principal>
}

/** A source over a table that a reload replaces (`table` reads the current one). */
export const tableSource = (table: () => PrincipalTable): CredentialSource => ({
  authenticate: (_token, digest) => table().byDigest.get(digest),
  current: (p) => table().all.has(p)
})
