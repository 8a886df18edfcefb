/**
 * OAuth clients as a credential source: a bearer that is a JWT of the issuer's (verifier.ts) authenticates the
 * token's client, acting for its subject, with the token's scopes as its grants. A token seen before is answered
 * from the verifier's cache without a fiber; a new one is verified in a fiber. Scopes that name nothing the app
 * declares (`openid`, another server's) grant nothing rather than refusing the token: an issuer adds its own.
 * A token the verifier refuses is answered 401 naming why (503 when the issuer's keys cannot be fetched). A principal
 * stays in force until its token expires.
 */
import { Effect, Either } from "effect"
import type { CompiledApp } from "../../domain/compile.ts"
import { CredentialRefused, type CredentialSource } from "../credentials.ts"
import { compileGrants, type Grants } from "../grants.ts"
import type { Principal } from "../principal.ts"
import type { OAuthPrincipal, OAuthVerifierService } from "./verification.ts"

/** The grants of `scopes` that the app knows; the others are dropped. */
export const grantsOfScopes = (app: CompiledApp, scopes: ReadonlyArray<string>): Grants =>
  Either.getOrThrow(compileGrants(app, scopes.filter((scope) => Either.isRight(compileGrants(app, [scope])))))

export const oauthSource = (verifier: OAuthVerifierService, app: CompiledApp): CredentialSource => {
  // One principal per verified token, so that a token's requests share it (its streams, its write bucket).
  const principals = new WeakMap<OAuthPrincipal, Principal>()
  const expiries = new WeakMap<Principal, number>()
  const principalOf = (token: OAuthPrincipal): Principal => {
    let principal = principals.get(token)
    if (principal === undefined) {
      principal = {
        name: token.name,
        ...(token.onBehalfOf === undefined ? {} : { onBehalfOf: token.onBehalfOf }),
        grants: grantsOfScopes(app, token.grants),
        // Idempotency keys and legacy sessions are the client's for one subject: another user of the same client
        // never gets a stored answer or a session of the first.
        keyScope: `oauth ${token.name} ${token.onBehalfOf ?? ""}`
      }
      principals.set(token, principal)
      expiries.set(principal, token.expiresAt)
    }
    return principal
  }
  return {
    authenticate: (token) => {
      // A static token is never a JWT (three dot-separated parts): not this source's.
      if (!verifier.enabled || !token.includes(".")) return undefined
      const cached = verifier.cached(token)
      if (cached !== undefined) return principalOf(cached)
      return verifier.authenticate(token).pipe(
        Effect.map((verified): Principal | CredentialRefused | undefined => principalOf(verified)),
        Effect.catchAll((e) =>
          Effect.succeed(e._tag === "NotAJwt" ? undefined : new CredentialRefused(e.message, e.reason === "keys_unavailable"))
        )
      )
    },
    current: (principal) => {
      const expiresAt = expiries.get(principal)
      return expiresAt !== undefined && Date.now() < expiresAt
    }
  }
}
