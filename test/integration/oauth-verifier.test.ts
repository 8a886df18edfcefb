/**
 * OAuth resource-server mode (src/access/oauth/verifier.ts) against a local issuer: keys made here, tokens signed
 * here, the key set read from a file and fetched from a real HTTP server on port 0. What is refused (expired, not
 * yet valid, another issuer, another audience, another key), what a token grants (its scopes, its client, the
 * subject it acts for), and the cache of verified tokens: a token seen before is not verified again, until it
 * expires.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Layer } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from "jose"
import { makeOAuthVerifier } from "../../src/access/oauth/jwt-verifier.ts"
import { signingKeys } from "../../src/access/oauth/signing-keys.ts"
import { NotAJwt, OAuthRefused, OAuthVerifier, type OAuthPrincipal, type OAuthVerifierService } from "../../src/access/oauth/verifier.ts"
import { loadSettings, WoConfig, type Settings } from "../../src/support/config.ts"
import { tempDir } from "../../testkit/server.ts"
import { runWo } from "../../testkit/spawn.ts"

const ISSUER = "https://issuer.test"
const AUDIENCE = "http://127.0.0.1:8080"
const CLIENT = { client_id: "pricing-agent", sub: "alice", scope: "books:read command:lend" }

interface Key {
  readonly kid: string
  readonly privateKey: CryptoKey
  readonly jwk: JWK
}

const makeKey = async (kid: string): Promise<Key> => {
  const { privateKey, publicKey } = await generateKeyPair("ES256")
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: "ES256", use: "sig" } }
}

const jwks = (...keys: ReadonlyArray<Key>) => JSON.stringify({ keys: keys.map((k) => k.jwk) })

interface TokenOptions {
  readonly key: Key
  readonly claims?: JWTPayload
  readonly issuer?: string
  readonly audience?: string | Array<string>
  /** Seconds since the epoch. */
  readonly exp?: number
  readonly nbf?: number
  /** The kid the header names (default the key's). */
  readonly kid?: string
}

const nowSeconds = () => Math.floor(Date.now() / 1000)

const sign = (o: TokenOptions) => {
  const jwt = new SignJWT(o.claims ?? CLIENT)
    .setProtectedHeader({ alg: "ES256", kid: o.kid ?? o.key.kid, typ: "at+jwt" })
    .setIssuer(o.issuer ?? ISSUER)
    .setAudience(o.audience ?? AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(o.exp ?? nowSeconds() + 3600)
  if (o.nbf !== undefined) jwt.setNotBefore(o.nbf)
  return jwt.sign(o.key.privateKey)
}

const writeJwks = (file: string, ...keys: ReadonlyArray<Key>) => {
  // Replaced whole (write then rename), as an operator's tooling would.
  fs.writeFileSync(`${file}.next`, jwks(...keys))
  fs.renameSync(`${file}.next`, file)
}

const verifierOverFile = (file: string, now?: () => number) =>
  Effect.map(Effect.orDie(signingKeys(file)), (keys) => makeOAuthVerifier({ issuer: ISSUER, audience: [AUDIENCE], keys, now }))

/** One signing key (kid k1) in a key file of its own, and a verifier over that file. */
const oneKeyVerifier = Effect.gen(function* () {
  const key = yield* Effect.promise(() => makeKey("k1"))
  const file = path.join(tempDir(), "jwks.json")
  writeJwks(file, key)
  return { key, file, verifier: yield* verifierOverFile(file) }
})

/** Another token ending as `token` does (its signature), its claims replaced: not the token that was verified. */
const forgedFrom = (token: string) => `${token.slice(0, token.indexOf(".") + 1)}e30${token.slice(token.lastIndexOf("."))}`

const refusal = (verifier: OAuthVerifierService, token: string) =>
  Effect.map(Effect.either(verifier.authenticate(token)), (r) => {
    if (Either.isRight(r)) return `accepted as ${r.right.name}`
    return r.left instanceof OAuthRefused ? r.left.reason : r.left._tag
  })

/** A node:http server on port 0 serving `body()` at /jwks, counting the fetches. */
const serveJwks = (body: () => string) =>
  Effect.acquireRelease(
    Effect.async<{ url: string; fetches: () => number; close: () => Promise<void> }>((resume) => {
      let fetches = 0
      const server = http.createServer((req, res) => {
        fetches++
        res.writeHead(req.url === "/jwks" ? 200 : 404, { "content-type": "application/json" }).end(body())
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        resume(Effect.succeed({
          url: `http://127.0.0.1:${port}/jwks`,
          fetches: () => fetches,
          close: () => new Promise<void>((r) => server.close(() => r()))
        }))
      })
    }),
    (s) => Effect.promise(() => s.close())
  )

describe("OAuth access tokens, keys from a file", () => {
  it.effect("a token from the issuer, for this server, is its client with its scopes as grants, acting for its subject", () =>
    Effect.gen(function* () {
      const { key, verifier } = yield* oneKeyVerifier
      const exp = nowSeconds() + 600
      const principal = yield* verifier.authenticate(yield* Effect.promise(() => sign({ key, exp })))
      expect(principal).toEqual({ name: "pricing-agent", onBehalfOf: "alice", grants: ["books:read", "command:lend"], expiresAt: exp * 1000 })
    }))

  it.effect("the client is client_id, else azp; a token naming neither is refused", () =>
    Effect.gen(function* () {
      const { key, verifier } = yield* oneKeyVerifier
      const as = (claims: JWTPayload) => Effect.flatMap(Effect.promise(() => sign({ key, claims })), (t) => Effect.either(verifier.authenticate(t)))
      const both = yield* as({ client_id: "desk", azp: "other", sub: "bob", scope: "read" })
      expect(Either.getOrThrow(both).name).toBe("desk")
      const azp = yield* as({ azp: "auditor", sub: "carol", scope: "read" })
      expect(Either.getOrThrow(azp)).toMatchObject({ name: "auditor", onBehalfOf: "carol" })
      const none = yield* as({ sub: "dave", scope: "read" })
      expect(Either.isLeft(none) && none.left instanceof OAuthRefused && none.left.reason).toBe("no_client")
    }))

  it.effect("scopes come from `scope` (space-separated) or an `scp` array; none grants nothing", () =>
    Effect.gen(function* () {
      const { key, verifier } = yield* oneKeyVerifier
      const grants = (claims: JWTPayload) =>
        Effect.map(Effect.flatMap(Effect.promise(() => sign({ key, claims })), verifier.authenticate), (p: OAuthPrincipal) => p.grants)
      expect(yield* grants({ client_id: "a", scope: " books:read  view:loans_by_member books:read " })).toEqual(["books:read", "view:loans_by_member"])
      expect(yield* grants({ client_id: "a", scp: ["books:*", "command:return"] })).toEqual(["books:*", "command:return"])
      expect(yield* grants({ client_id: "a" })).toEqual([])
      const bad = yield* Effect.either(Effect.flatMap(Effect.promise(() => sign({ key, claims: { client_id: "a", scp: [1, 2] } })), verifier.authenticate))
      expect(Either.isLeft(bad) && bad.left instanceof OAuthRefused && bad.left.reason).toBe("invalid")
    }))

  it.effect("refuses an expired token, one not valid yet, another issuer's, another audience's, and another key's", () =>
    Effect.gen(function* () {
      const key = yield* Effect.promise(() => makeKey("k1"))
      const stranger = yield* Effect.promise(() => makeKey("k1")) // the same kid, another key
      const unknown = yield* Effect.promise(() => makeKey("k9"))
      const file = path.join(tempDir(), "jwks.json")
      writeJwks(file, key)
      const verifier = yield* verifierOverFile(file)
      const outcome = (o: TokenOptions) => Effect.flatMap(Effect.promise(() => sign(o)), (t) => refusal(verifier, t))
      // Past the 30 s tolerance for clocks that differ, either way.
      expect(yield* outcome({ key, exp: nowSeconds() - 120 })).toBe("expired")
      expect(yield* outcome({ key, nbf: nowSeconds() + 120 })).toBe("not_yet_valid")
      expect(yield* outcome({ key, issuer: "https://elsewhere.test" })).toBe("wrong_issuer")
      expect(yield* outcome({ key, audience: "https://other-server.test" })).toBe("wrong_audience")
      expect(yield* outcome({ key: stranger })).toBe("bad_signature")
      expect(yield* outcome({ key: unknown })).toBe("bad_signature")
      // RFC 8707: the audience may be several resources, this server among them.
      expect(yield* outcome({ key, audience: ["https://other-server.test", AUDIENCE] })).toBe("accepted as pricing-agent")
      // Within the tolerance: accepted.
      expect(yield* outcome({ key, exp: nowSeconds() - 5 })).toBe("accepted as pricing-agent")
      expect(verifier.verifications()).toBe(8)
    }))

  it.effect("a bearer that is not a JWT is left to the other credential sources", () =>
    Effect.gen(function* () {
      const { key, verifier } = yield* oneKeyVerifier
      expect(yield* refusal(verifier, "s3cr3t-static-token")).toBe("NotAJwt")
      expect(yield* refusal(verifier, "not.a.jwt")).toBe("NotAJwt")
      expect(verifier.verifications()).toBe(0)
    }))

  it.effect("a token seen before is answered from the cache, without a fiber and without verifying it again", () =>
    Effect.gen(function* () {
      const { key, verifier } = yield* oneKeyVerifier
      const token = yield* Effect.promise(() => sign({ key }))
      expect(verifier.cached(token)).toBeUndefined()
      const first = yield* verifier.authenticate(token)
      for (let i = 0; i < 5; i++) expect(yield* verifier.authenticate(token)).toEqual(first)
      expect(verifier.cached(token)).toEqual(first)
      expect(verifier.verifications()).toBe(1)
      // Another token ending the same way is not the cached one: verified in full, and refused.
      const forged = forgedFrom(token)
      expect(verifier.cached(forged)).toBeUndefined()
      expect(yield* refusal(verifier, forged)).toBe("bad_signature")
      expect(verifier.verifications()).toBe(2)
    }))

  it.effect("requests that bring the same new token at once share one verification, and each gets its answer", () =>
    Effect.gen(function* () {
      const { key, verifier } = yield* oneKeyVerifier
      const token = yield* Effect.promise(() => sign({ key }))
      const forged = forgedFrom(token)
      const answers = yield* Effect.all(
        Array.from({ length: 8 }, (_, i) => refusal(verifier, i % 2 === 0 ? token : forged)),
        { concurrency: "unbounded" }
      )
      expect(answers).toEqual(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? "accepted as pricing-agent" : "bad_signature")))
      // One verification of each distinct token; a refused one is verified again when it comes back.
      expect(verifier.verifications()).toBe(2)
      expect(yield* refusal(verifier, forged)).toBe("bad_signature")
      expect(verifier.verifications()).toBe(3)
    }))

  it.effect("a changed key file is read again: the new key's tokens pass, the removed key's fresh tokens do not, a cached one does until it expires", () =>
    Effect.gen(function* () {
      let clock = Date.now()
      const old = yield* Effect.promise(() => makeKey("old"))
      const next = yield* Effect.promise(() => makeKey("new"))
      const file = path.join(tempDir(), "jwks.json")
      writeJwks(file, old)
      const verifier = yield* verifierOverFile(file, () => clock)
      const exp = Math.floor(clock / 1000) + 60
      const seen = yield* Effect.promise(() => sign({ key: old, exp }))
      yield* verifier.authenticate(seen)
      writeJwks(file, next)
      expect(yield* refusal(verifier, yield* Effect.promise(() => sign({ key: old, claims: { ...CLIENT, jti: "2" } })))).toBe("bad_signature")
      const fresh = yield* Effect.promise(() => sign({ key: next, exp }))
      expect(yield* refusal(verifier, fresh)).toBe("accepted as pricing-agent")
      expect(yield* refusal(verifier, seen)).toBe("accepted as pricing-agent")
      expect(verifier.verifications()).toBe(3)
      // Past their exp and the tolerance, cached tokens are gone: verified again, and refused.
      clock = (exp + 31) * 1000
      expect(verifier.cached(fresh)).toBeUndefined()
      expect(yield* refusal(verifier, fresh)).toBe("expired")
      expect(yield* refusal(verifier, seen)).toBe("bad_signature")
      expect(verifier.verifications()).toBe(5)
    }))

  it.effect("a changed key file that is not a key set is refused, and the keys read before stay in force", () =>
    Effect.gen(function* () {
      const { key, file, verifier } = yield* oneKeyVerifier
      fs.writeFileSync(file, '{"keys": "half written')
      expect(yield* refusal(verifier, yield* Effect.promise(() => sign({ key })))).toBe("accepted as pricing-agent")
    }))
})

describe("OAuth access tokens, keys from a URL", () => {
  it.scoped("verifies against the key set served over HTTP, fetched once for many tokens; another key's token is refused", () =>
    Effect.gen(function* () {
      const key = yield* Effect.promise(() => makeKey("k1"))
      const other = yield* Effect.promise(() => makeKey("k2"))
      const server = yield* serveJwks(() => jwks(key))
      const keys = yield* Effect.orDie(signingKeys(server.url))
      const verifier = makeOAuthVerifier({ issuer: ISSUER, audience: [AUDIENCE], keys })
      for (const sub of ["alice", "bob", "carol"]) {
        const principal = yield* verifier.authenticate(yield* Effect.promise(() => sign({ key, claims: { ...CLIENT, sub } })))
        expect(principal.onBehalfOf).toBe(sub)
      }
      expect(server.fetches()).toBe(1)
      expect(yield* refusal(verifier, yield* Effect.promise(() => sign({ key: other })))).toBe("bad_signature")
    }))

  it.scoped("a key set that cannot be fetched is the server's problem, not the token's", () =>
    Effect.gen(function* () {
      const key = yield* Effect.promise(() => makeKey("k1"))
      const server = yield* serveJwks(() => jwks(key))
      yield* Effect.promise(() => server.close())
      const keys = yield* Effect.orDie(signingKeys(server.url))
      const verifier = makeOAuthVerifier({ issuer: ISSUER, audience: [AUDIENCE], keys })
      expect(yield* refusal(verifier, yield* Effect.promise(() => sign({ key })))).toBe("keys_unavailable")
    }))
})

describe("OAuth settings", () => {
  const settingsFrom = (env: Record<string, string>) =>
    Effect.withConfigProvider(loadSettings({ dataDir: tempDir() }), ConfigProvider.fromMap(new Map(Object.entries(env))))
  const failure = (env: Record<string, string>) =>
    Effect.map(Effect.flip(settingsFrom(env)), (e) => String(e))

  it.effect("OAuth is off without an issuer; with one, the audience and the keys are required, and a missing one is named", () =>
    Effect.gen(function* () {
      const off = yield* settingsFrom({})
      expect(off.oauthIssuer).toBeUndefined()
      expect(yield* failure({ WO_OAUTH_ISSUER: ISSUER })).toMatch(/WO_OAUTH_AUDIENCE and WO_OAUTH_JWKS are required/)
      expect(yield* failure({ WO_OAUTH_ISSUER: ISSUER, WO_OAUTH_AUDIENCE: AUDIENCE })).toMatch(/WO_OAUTH_JWKS is required/)
      expect(yield* failure({ WO_OAUTH_AUDIENCE: AUDIENCE })).toMatch(/WO_OAUTH_AUDIENCE is set but WO_OAUTH_ISSUER is not/)
      expect(yield* failure({ WO_OAUTH_ISSUER: "issuer.test", WO_OAUTH_AUDIENCE: AUDIENCE, WO_OAUTH_JWKS: "k.json" })).toMatch(/WO_OAUTH_ISSUER.*expected an http\(s\) URL/)
      const on = yield* settingsFrom({ WO_OAUTH_ISSUER: ISSUER, WO_OAUTH_AUDIENCE: `${AUDIENCE}, ${AUDIENCE}/mcp`, WO_OAUTH_JWKS: "k.json" })
      expect(on).toMatchObject({ oauthIssuer: ISSUER, oauthAudience: [AUDIENCE, `${AUDIENCE}/mcp`], oauthJwks: "k.json" })
    }))

  it.effect("the layer: disabled without an issuer (no bearer is its), a key file that cannot be read refuses the start", () =>
    Effect.gen(function* () {
      const base = yield* settingsFrom({})
      const verifierWith = (settings: Partial<Settings>) =>
        Effect.provide(OAuthVerifier, OAuthVerifier.layer.pipe(Layer.provide(Layer.succeed(WoConfig, { ...base, ...settings }))))
      const off = yield* verifierWith({})
      expect(off.enabled).toBe(false)
      expect(yield* Effect.flip(off.authenticate("a.b.c"))).toBeInstanceOf(NotAJwt)
      const missing = path.join(tempDir(), "missing.json")
      const refused = yield* Effect.flip(verifierWith({ oauthIssuer: ISSUER, oauthAudience: [AUDIENCE], oauthJwks: missing }))
      expect(String(refused)).toContain(`cannot use the JWKS file ${missing}`)
      const key = yield* Effect.promise(() => makeKey("k1"))
      const file = path.join(tempDir(), "jwks.json")
      writeJwks(file, key)
      const on = yield* verifierWith({ oauthIssuer: ISSUER, oauthAudience: [AUDIENCE], oauthJwks: file })
      expect(on.enabled).toBe(true)
      expect((yield* on.authenticate(yield* Effect.promise(() => sign({ key })))).name).toBe("pricing-agent")
    }))

  it("`wo run` with an issuer but no audience or keys refuses to start, naming what is missing", async () => {
    const result = await runWo(["run", "examples/library", "--data", tempDir(), "--listen", "127.0.0.1:0"], {
      env: { WO_OAUTH_ISSUER: ISSUER },
      timeoutMs: 60_000
    })
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^wo: configuration: .*WO_OAUTH_ISSUER is set, so WO_OAUTH_AUDIENCE and WO_OAUTH_JWKS are required too/m)
  })
})
