/**
 * What an OAuth verifier answers, in a file of its own: the verifier's service (verifier.ts) and its jose-based
 * implementation (jwt-verifier.ts, loaded only when OAuth is on) both speak it.
 */
import { Data, type Effect } from "effect"

/** An OAuth client as a verified access token presents it (oauth-source.ts makes it a principal). */
export interface OAuthPrincipal {
  /** The client: the token's `client_id`, or its `azp`. */
  readonly name: string
  /** The subject the client acts for: the token's `sub`. */
  readonly onBehalfOf?: string
  /** The token's scopes, as it gives them: grants in the access file's grammar (and any other scope the issuer adds). */
  readonly grants: ReadonlyArray<string>
  /** When the token expires (its `exp`), in milliseconds since the epoch: a stream it opened may end then. */
  readonly expiresAt: number
}

/** The bearer is not a JWT: not this source's to judge. */
export class NotAJwt extends Data.TaggedError("NotAJwt")<{}> {}

export type OAuthRefusalReason =
  | "expired"
  | "not_yet_valid"
  | "wrong_issuer"
  | "wrong_audience"
  /** The signature does not verify, or the token names a key or an algorithm the issuer's key set does not hold. */
  | "bad_signature"
  | "no_client"
  /** A claim is missing (`exp`) or of the wrong type. */
  | "invalid"
  /** The issuer's keys could not be fetched: the server's problem, not the client's. */
  | "keys_unavailable"

/** A JWT that does not authenticate: 401 with `error="invalid_token"` (503 for `keys_unavailable`). */
export class OAuthRefused extends Data.TaggedError("OAuthRefused")<{
  readonly reason: OAuthRefusalReason
  readonly message: string
}> {}

export interface OAuthVerifierService {
  /** False when `WO_OAUTH_ISSUER` is unset: then nothing is a JWT of this source's. */
  readonly enabled: boolean
  /** A token verified before and still within its lifetime, without a fiber; undefined when `authenticate` must run. */
  readonly cached: (bearer: string) => OAuthPrincipal | undefined
  /** The principal a bearer token authenticates, from the cache or verified (and then cached). */
  readonly authenticate: (bearer: string) => Effect.Effect<OAuthPrincipal, NotAJwt | OAuthRefused>
  /** How many tokens were verified in full (signature and claims) since the start: the cache's misses. */
  readonly verifications: () => number
}
