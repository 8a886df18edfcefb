/**
 * The issuer's signing keys (`WO_OAUTH_JWKS`), as jose's key resolver:
 *  - an http(s) URL: jose's remote key set, which caches the set, and fetches it again when a token names a key
 *    it does not hold (at most once per cooldown), so that the issuer's key rotation needs nothing here;
 *  - otherwise the path of a JWKS file, read at start (a file that cannot be read refuses the start) and read
 *    again when it changes. A changed file that is not a key set is refused with a warning, and the keys read
 *    before stay in force.
 */
import { ConfigError, Effect } from "effect"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { createLocalJWKSet, createRemoteJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from "jose"

export interface SigningKeys {
  /** Brings the keys up to date where that is local and cheap (a file that changed); nothing for a URL. */
  readonly refresh: Effect.Effect<void>
  /** The key resolver for jose's `jwtVerify`, as of the last refresh. */
  readonly resolver: () => JWTVerifyGetKey
  /** Where the keys come from, for messages. */
  readonly source: string
}

export const isJwksUrl = (value: string) => /^https?:\/\//i.test(value)

/** How long a fetch of a remote key set may take before the verification fails as "keys unavailable". */
const FETCH_TIMEOUT_MS = 5000

const remoteKeys = (url: string): Effect.Effect<SigningKeys, ConfigError.ConfigError> =>
  Effect.try({
    try: () => createRemoteJWKSet(new URL(url), { timeoutDuration: FETCH_TIMEOUT_MS }),
    catch: (e) => ConfigError.InvalidData(["WO_OAUTH_JWKS"], `not a usable JWKS URL: ${url} (${String(e)})`)
  }).pipe(Effect.map((set) => ({ refresh: Effect.void, resolver: () => set, source: `the JWKS at ${url}` })))

/** What identifies one version of the file: a rewrite or a replacement changes one of these. */
const stampOf = (file: string) =>
  Effect.map(Effect.tryPromise(() => fs.stat(file)), (s) => `${s.ino}:${s.size}:${s.mtimeMs}`)

const readKeySet = (file: string) =>
  Effect.tryPromise({
    try: async () => {
      const parsed: unknown = JSON.parse(await fs.readFile(file, "utf8"))
      // createLocalJWKSet checks the shape ({"keys": [...]}) and throws on anything else.
      return createLocalJWKSet(parsed as JSONWebKeySet)
    },
    catch: (e) => (e instanceof Error ? e.message : String(e))
  })

const fileKeys = (file: string): Effect.Effect<SigningKeys, ConfigError.ConfigError> =>
  Effect.gen(function* () {
    const where = path.resolve(file)
    const refused = (why: string) => ConfigError.InvalidData(["WO_OAUTH_JWKS"], `cannot use the JWKS file ${where}: ${why}`)
    let stamp = yield* Effect.mapError(stampOf(where), (e) => refused(String(e.error)))
    let set = yield* Effect.mapError(readKeySet(where), refused)
    const refresh = Effect.gen(function* () {
      const now = yield* Effect.option(stampOf(where))
      // A file that is gone for a moment (replaced by a rename) keeps the keys read before.
      if (now._tag === "None" || now.value === stamp) return
      stamp = now.value
      const next = yield* Effect.either(readKeySet(where))
      if (next._tag === "Right") set = next.right
      else yield* Effect.logWarning(`oauth: the JWKS file ${where} changed but is refused (${next.left}); the keys read before stay in force`)
    })
    return { refresh, resolver: () => set, source: `the JWKS file ${where}` }
  })

/** The keys `WO_OAUTH_JWKS` names: a URL or a file. */
export const signingKeys = (jwks: string): Effect.Effect<SigningKeys, ConfigError.ConfigError> =>
  isJwksUrl(jwks) ? remoteKeys(jwks) : fileKeys(jwks)
