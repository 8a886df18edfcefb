/**
 * The verification of OAuth access tokens with jose (see verifier.ts for what is verified and why), loaded only
 * when OAuth is on.
 */
import { Effect, Fiber } from "effect"
import { decodeProtectedHeader, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from "jose"
import type { SigningKeys } from "./signing-keys.ts"
import { VerifiedTokens } from "./token-cache.ts"
import { NotAJwt, OAuthRefused, type OAuthPrincipal, type OAuthRefusalReason, type OAuthVerifierService } from "./verification.ts"

export { signingKeys } from "./signing-keys.ts"

export interface OAuthVerifierOptions {
  readonly issuer: string
  readonly audience: ReadonlyArray<string>
  readonly keys: SigningKeys
  /** Most tokens kept verified at once (default 10,000). */
  readonly capacity?: number
  /** Seconds by which `exp` and `nbf` may be off (default 30). */
  readonly clockToleranceSeconds?: number
  /** The clock, in milliseconds since the epoch (tests move it). */
  readonly now?: () => number
}

/** The algorithms accepted: the asymmetric ones a JWKS publishes (never `none`, never a shared secret). */
const ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"]

const refused = (reason: OAuthRefusalReason, message: string) => new OAuthRefused({ reason, message })

/** A failure to get the issuer's keys (a fetch that failed, a key set that is not one): nothing a client can fix. */
class KeysUnavailable extends Error {}

/** The resolver, with its failures to get the keys told apart from a token naming a key that is not there. */
const resolving = (resolve: JWTVerifyGetKey): JWTVerifyGetKey => async (header, token) => {
  try {
    return await resolve(header, token)
  } catch (e) {
    if (e instanceof errors.JWKSNoMatchingKey || e instanceof errors.JWKSMultipleMatchingKeys || e instanceof errors.JOSENotSupported) throw e
    throw new KeysUnavailable(e instanceof Error ? e.message : String(e))
  }
}

/** jose's failure as the refusal a client is told. */
const refusalOf = (e: unknown, keysSource: string): OAuthRefused => {
  if (e instanceof KeysUnavailable) return refused("keys_unavailable", `the issuer's keys could not be had from ${keysSource}: ${e.message}`)
  if (e instanceof errors.JWTExpired) return refused("expired", "the access token has expired")
  if (e instanceof errors.JWTClaimValidationFailed) {
    if (e.claim === "nbf") return refused("not_yet_valid", "the access token is not valid yet (nbf)")
    if (e.claim === "iss") return refused("wrong_issuer", "the access token was issued by another issuer")
    if (e.claim === "aud") return refused("wrong_audience", "the access token was not issued for this server (aud)")
    return refused("invalid", `the access token's "${e.claim}" claim is ${e.reason === "missing" ? "missing" : "invalid"}`)
  }
  if (e instanceof errors.JWKSNoMatchingKey) return refused("bad_signature", "the access token is signed with a key the issuer does not publish")
  if (e instanceof errors.JWSSignatureVerificationFailed || e instanceof errors.JOSEAlgNotAllowed ||
      e instanceof errors.JOSENotSupported || e instanceof errors.JWKSMultipleMatchingKeys) {
    return refused("bad_signature", "the access token's signature does not verify")
  }
  // jose's other failures (a claim of the wrong type, a malformed part) are the token's.
  return refused("invalid", `the access token is malformed${e instanceof Error ? `: ${e.message}` : ""}`)
}

/** A compact JWS: three base64url parts, the first a JSON header with an `alg`. */
const isJwt = (bearer: string): boolean => {
  if (!/^[\w-]+\.[\w-]+\.[\w-]+$/.test(bearer)) return false
  try {
    return typeof decodeProtectedHeader(bearer).alg === "string"
  } catch {
    return false
  }
}

/** `scope` ("a b c") or `scp` (["a", "b"], or a string as some issuers send it); undefined: of the wrong type. */
const scopesOf = (payload: JWTPayload): ReadonlyArray<string> | undefined => {
  const raw = payload.scope ?? payload.scp
  if (raw === undefined) return []
  const list = typeof raw === "string"
    ? raw.split(" ")
    : Array.isArray(raw) && raw.every((s) => typeof s === "string") ? raw as ReadonlyArray<string> : undefined
  return list === undefined ? undefined : [...new Set(list.filter((s) => s.length > 0))]
}

const nonEmpty = (u: unknown): string | undefined => (typeof u === "string" && u.length > 0 ? u : undefined)

/** The principal a verified payload names, or why it names none. */
const principalOf = (payload: JWTPayload): OAuthPrincipal | OAuthRefused => {
  const name = nonEmpty(payload.client_id) ?? nonEmpty(payload.azp)
  if (name === undefined) return refused("no_client", "the access token names no client (client_id or azp)")
  const grants = scopesOf(payload)
  if (grants === undefined) return refused("invalid", "the access token's scope is neither a string nor an array of strings")
  const onBehalfOf = nonEmpty(payload.sub)
  // exp is required (requiredClaims below), and jose has checked it is a number.
  const expiresAt = (payload.exp as number) * 1000
  return onBehalfOf === undefined ? { name, grants, expiresAt } : { name, onBehalfOf, grants, expiresAt }
}

/** The verifier over settled options (tests build one directly; the layer builds it from the settings). */
export const makeOAuthVerifier = (options: OAuthVerifierOptions): OAuthVerifierService => {
  const now = options.now ?? Date.now
  const tolerance = options.clockToleranceSeconds ?? 30
  const tokens = new VerifiedTokens<OAuthPrincipal>(options.capacity ?? 10_000, now)
  const audience = [...options.audience]
  let verifications = 0

  const verify = (bearer: string) =>
    Effect.gen(function* () {
      yield* options.keys.refresh
      verifications++
      const { payload } = yield* Effect.tryPromise({
        try: () =>
          jwtVerify(bearer, resolving(options.keys.resolver()), {
            issuer: options.issuer,
            audience,
            algorithms: ALGORITHMS,
            clockTolerance: tolerance,
            currentDate: new Date(now()),
            requiredClaims: ["exp"]
          }),
        catch: (e) => refusalOf(e, options.keys.source)
      })
      const principal = principalOf(payload)
      if (principal instanceof OAuthRefused) return yield* Effect.fail(principal)
      // Accepted as long as jose would accept it again: until exp and the tolerance.
      tokens.set(bearer, principal, principal.expiresAt + tolerance * 1000)
      return principal
    })

  // The first request with a new token verifies it; the others that bring the same token meanwhile wait for that
  // verification instead of repeating it. It runs in a fiber of its own, so a requester that goes away does not
  // cancel it for the rest; the entry leaves once it ends (its result is then in `tokens`, or it was refused).
  const inFlight = new Map<string, Fiber.RuntimeFiber<OAuthPrincipal, OAuthRefused>>()
  const verifyShared = (bearer: string) => {
    const running = inFlight.get(bearer)
    if (running !== undefined) return Fiber.join(running)
    return Effect.flatMap(Effect.forkDaemon(verify(bearer)), (fiber) => {
      inFlight.set(bearer, fiber)
      fiber.addObserver(() => {
        if (inFlight.get(bearer) === fiber) inFlight.delete(bearer)
      })
      return Fiber.join(fiber)
    })
  }

  return {
    enabled: true,
    // A bearer without a dot is no JWT: a static token tried here first pays a scan instead of a cache lookup.
    cached: (bearer) => (bearer.includes(".") ? tokens.get(bearer) : undefined),
    authenticate: (bearer) =>
      Effect.suspend((): Effect.Effect<OAuthPrincipal, NotAJwt | OAuthRefused> => {
        const hit = tokens.get(bearer)
        if (hit !== undefined) return Effect.succeed(hit)
        return isJwt(bearer) ? verifyShared(bearer) : Effect.fail(new NotAJwt())
      }),
    verifications: () => verifications
  }
}
