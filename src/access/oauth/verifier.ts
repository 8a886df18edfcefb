/**
 * OAuth 2.1 resource-server mode: a bearer token that is a JWT from `WO_OAUTH_ISSUER` authenticates an OAuth
 * client. jose verifies the signature against the issuer's keys (signing-keys.ts), `exp` and `nbf` (with a small
 * tolerance for clocks that differ), the issuer, and that the audience names this server (RFC 8707: `aud` may be
 * one of several). The client is the token's `client_id` (RFC 9068), or its `azp`; `sub`, the subject it acts for,
 * becomes `onBehalfOf`; its scopes (`scope`, space-separated, or an `scp` array) are its grants, in the access
 * file's grammar.
 *
 * A bearer that is not a JWT at all fails with `NotAJwt`, so that the other credential sources may try it; a JWT
 * that does not pass fails with `OAuthRefused`, naming why. Verified tokens are kept until they expire
 * (token-cache.ts): `cached` answers a token seen before without a fiber, for the edge's direct path.
 * The verification itself, with jose, is jwt-verifier.ts.
 */
import { ConfigError, Context, Effect, Layer } from "effect"
import { WoConfig } from "../../support/config.ts"
import { NotAJwt, type OAuthVerifierService } from "./verification.ts"

export { NotAJwt, OAuthRefused, type OAuthPrincipal, type OAuthRefusalReason, type OAuthVerifierService } from "./verification.ts"

/** With OAuth off: no bearer is an OAuth token. */
const DISABLED: OAuthVerifierService = {
  enabled: false,
  cached: () => undefined,
  authenticate: () => Effect.fail(new NotAJwt()),
  verifications: () => 0
}

export class OAuthVerifier extends Context.Tag("writeonce/OAuthVerifier")<OAuthVerifier, OAuthVerifierService>() {
  /**
   * From the settings (`WO_OAUTH_ISSUER`, `WO_OAUTH_AUDIENCE`, `WO_OAUTH_JWKS`): disabled without an issuer; a
   * ConfigError when the issuer comes without its audience or keys, or when the key file cannot be read.
   */
  static readonly layer = Layer.effect(
    OAuthVerifier,
    Effect.gen(function* () {
      const settings = yield* WoConfig
      const issuer = settings.oauthIssuer
      if (issuer === undefined) return DISABLED
      const audience = settings.oauthAudience ?? []
      if (audience.length === 0) return yield* Effect.fail(ConfigError.MissingData(["WO_OAUTH_AUDIENCE"], "WO_OAUTH_ISSUER is set, so WO_OAUTH_AUDIENCE is required too"))
      if (settings.oauthJwks === undefined) return yield* Effect.fail(ConfigError.MissingData(["WO_OAUTH_JWKS"], "WO_OAUTH_ISSUER is set, so WO_OAUTH_JWKS is required too"))
      // jose is loaded only when OAuth is on: importing it is a large part of a start.
      const { makeOAuthVerifier, signingKeys } = yield* Effect.promise(() => import("./jwt-verifier.ts"))
      const keys = yield* signingKeys(settings.oauthJwks)
      return makeOAuthVerifier({ issuer, audience, keys })
    })
  )
}
