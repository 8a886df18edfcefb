/**
 * Access: who a request is (authentication over the credential sources), and the revocation of principals the
 * access file no longer names. One per runtime, as a service: the router authenticates with it, and the file's
 * reload ends the open streams of the principals it removed or changed.
 *
 *  - No access file and no `WO_AUTH_TOKEN`: nothing is required (a loopback server stays open as it always was).
 *  - The file is re-read on SIGHUP and when it changes (a watch on its folder and on itself, debounced: editors
 *    save by renaming, and one save fires several events). A bad file is refused with one log line, naming every
 *    problem, and the principals in force stay; at start, a bad file stops the server.
 *  - A principal whose name, token and grants are all unchanged by a reload stays the same object, so its
 *    streams go on; any other is gone, and its streams end (revocation.ts).
 */
import { Context, Data, Effect, Either, Layer, Runtime } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { Catalog } from "../domain/app-catalog.ts"
import type { CompiledApp } from "../domain/compile.ts"
import { WoConfig } from "../support/config.ts"
import { decodeAccessFile, type DeclaredPrincipal } from "./access-file.ts"
import { AUTH_TOKEN_PRINCIPAL, authTokenSource, type Authenticated, CredentialRefused, bearerToken, type CredentialSource, type PrincipalTable, sha256Hex, tableSource } from "./credentials.ts"
import { compileGrants } from "./grants.ts"
import { insufficientScopeChallenge, unauthorizedChallenge } from "./oauth/challenge.ts"
import { oauthSource } from "./oauth/oauth-source.ts"
import { metadataUrlFor, metadataUrlOf } from "./oauth/protected-resource.ts"
import { OAuthVerifier } from "./oauth/verifier.ts"
import type { Principal } from "./principal.ts"
import { makePrincipalActivity, type PrincipalActivity } from "./principal-activity.ts"
import { Revocation } from "./revocation.ts"
import type { IncomingHttpHeaders } from "node:http"

/** The access file cannot be used at start: every problem, one per line. */
export class AccessFileError extends Data.TaggedError("AccessFileError")<{ readonly file: string; readonly problems: ReadonlyArray<string> }> {
  override get message() {
    return `access file ${this.file} refused:\n  - ${this.problems.join("\n  - ")}`
  }
}

export interface AccessShape {
  /** Whether /mcp, /api and /metrics need a credential (an access file or `WO_AUTH_TOKEN` is set). */
  readonly required: boolean
  /**
   * The principal an Authorization header names, or undefined (no valid credential). `connection` (the request's
   * socket) lets a keep-alive client's repeated header be recognised without hashing it again.
   */
  readonly authenticate: (authorization: string | undefined, connection?: object) => Authenticated
  /** Whether `principal` is still in force (a stream checks it when the file changes). */
  readonly isCurrent: (principal: Principal) => boolean
  /** Re-reads the access file now (SIGHUP and the watch call it; tests may too). */
  readonly reload: Effect.Effect<void>
  /** With OAuth on: the `WWW-Authenticate` challenges its clients read (absent: the plain Bearer realm). */
  readonly challenges?: Challenges
  /** What each principal's requests came to (absent when nothing is required: no principals). */
  readonly activity?: PrincipalActivity
}

export interface Challenges {
  /** A 401's: where the protected resource metadata is, and why a token that came was refused. */
  readonly unauthorized: (headers: IncomingHttpHeaders, refused?: string) => string
  /** A 403's: every grant the request needs, as scopes (with the metadata's address when the request is known). */
  readonly forbidden: (grants: ReadonlyArray<string>, headers?: IncomingHttpHeaders) => string
}

export class Access extends Context.Tag("writeonce/Access")<Access, AccessShape>() {
  /** Nothing required: every request passes without a principal (tests that build routes by hand). */
  static readonly open: AccessShape = { required: false, authenticate: () => undefined, isCurrent: () => true, reload: Effect.void }
}

/** How long after the last change event the file is read: one save, one read. */
const DEBOUNCE_MS = 50

const tableOf = (declared: ReadonlyArray<DeclaredPrincipal>, before: PrincipalTable | undefined): PrincipalTable => {
  const byDigest = new Map<string, Principal>()
  for (const { digest, principal } of declared) {
    const old = before?.byDigest.get(digest)
    // Same token, name, grants and limits: the same principal (its streams go on, its write bucket too).
    const same = old !== undefined && old.name === principal.name &&
      old.grants?.declared.join("\n") === principal.grants?.declared.join("\n") &&
      old.limits?.writes?.rate === principal.limits?.writes?.rate && old.limits?.streams === principal.limits?.streams
    byDigest.set(digest, same ? old : principal)
  }
  return { byDigest, all: new Set(byDigest.values()) }
}

const readFile = (file: string): Either.Either<string, ReadonlyArray<string>> => {
  try {
    return Either.right(fs.readFileSync(file, "utf8"))
  } catch (e) {
    return Either.left([`cannot read it: ${(e as Error).message}`])
  }
}

const loadTable = (file: string, app: CompiledApp, before: PrincipalTable | undefined) =>
  Either.map(Either.flatMap(readFile(file), (text) => decodeAccessFile(text, app)), (declared) => tableOf(declared, before))

export const AccessLive = Layer.scoped(
  Access,
  Effect.gen(function* () {
    const settings = yield* WoConfig
    const app = yield* Catalog
    const revocation = yield* Revocation
    const oauth = yield* OAuthVerifier
    const jwtSource = oauth.enabled ? oauthSource(oauth, app) : undefined
    const sources: Array<CredentialSource> = []
    if (settings.authToken !== undefined) {
      const admin = Either.getOrThrow(compileGrants(app, ["admin"]))
      sources.push(authTokenSource(settings.authToken, { name: AUTH_TOKEN_PRINCIPAL, grants: admin }))
    }
    const file = settings.accessFile
    let table: PrincipalTable | undefined
    if (file !== undefined) {
      const first = loadTable(file, app, undefined)
      if (Either.isLeft(first)) return yield* new AccessFileError({ file, problems: first.left })
      table = first.right
      yield* Effect.logInfo(`access file ${file}: ${table.all.size} principal${table.all.size === 1 ? "" : "s"}`)
      sources.push(tableSource(() => table!))
    }
    // A static principal still in force (an OAuth principal's token may expire: the verifier's cache judges it).
    const staticCurrent = (p: Principal) => {
      for (const s of sources) if (s.current(p)) return true
      return false
    }
    const isCurrent = (p: Principal) => jwtSource?.current(p) === true || staticCurrent(p)

    const reload = Effect.suspend(() => {
      if (file === undefined) return Effect.void
      const next = loadTable(file, app, table)
      if (Either.isLeft(next)) {
        return Effect.logWarning(`access file ${file} refused, the principals in force stay: ${next.left.join("; ")}`)
      }
      const before = table!
      table = next.right
      let gone = 0
      for (const p of before.all) if (!table.all.has(p)) gone++
      // Their streams end now: the next request of a removed principal is refused by `authenticate` already.
      const ended = revocation.endStreamsOf((principal) => !isCurrent(principal))
      return Effect.logInfo(`access file ${file} reloaded: ${table.all.size} principals, ${gone} removed or changed, ${ended} stream${ended === 1 ? "" : "s"} ended`)
    })

    if (file !== undefined) {
      const runFork = Runtime.runFork(yield* Effect.runtime<never>())
      let timer: NodeJS.Timeout | undefined
      const soon = () => {
        if (timer !== undefined) clearTimeout(timer)
        timer = setTimeout(() => {
          timer = undefined
          runFork(reload)
        }, DEBOUNCE_MS)
      }
      const onHangUp = () => void runFork(reload)
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          process.on("SIGHUP", onHangUp)
          // The folder: a save by rename replaces the file, which a watch on the file alone stops seeing.
          const base = path.basename(file)
          const watchers: Array<fs.FSWatcher> = []
          const watch = (target: string, relevant: (name: string | null) => boolean) => {
            try {
              const w = fs.watch(target, { persistent: false }, (_event, name) => relevant(name) && soon())
              w.on("error", () => w.close())
              watchers.push(w)
            } catch {
              // A folder or file that cannot be watched: SIGHUP still reloads.
            }
          }
          watch(path.dirname(path.resolve(file)), (name) => name === null || name === base)
          watch(file, () => true)
          return watchers
        }),
        (watchers) =>
          Effect.sync(() => {
            process.off("SIGHUP", onHangUp)
            for (const w of watchers) w.close()
            if (timer !== undefined) clearTimeout(timer)
          })
      )
    }

    const required = sources.length > 0
    // The access file's and WO_AUTH_TOKEN's principals, looked up by the token's digest, synchronously.
    const lookUp = (token: string): Principal | undefined => {
      const digest = sha256Hex(token)
      for (const source of sources) {
        const found = source.authenticate(token, digest)
        if (found !== undefined && !Effect.isEffect(found) && !(found instanceof CredentialRefused)) return found
      }
      return undefined
    }
    // Hand-tuned for the GET budget (bench/scenarios/access-cost.ts): a keep-alive client sends the same header on
    // every request, and comparing it with the connection's last one costs a tenth of hashing it. Only the
    // connection's own previous header is compared, so the comparison's timing says nothing about anyone else's
    // token; a reload that removes or changes the principal makes `staticCurrent` false, and the header is judged again.
    const lastOnConnection = new WeakMap<object, { readonly header: string; readonly principal: Principal }>()
    const authenticate = (authorization: string | undefined, connection?: object): Authenticated => {
      if (authorization === undefined) return undefined
      if (connection !== undefined) {
        const last = lastOnConnection.get(connection)
        if (last !== undefined && last.header === authorization && staticCurrent(last.principal)) return last.principal
      }
      const token = bearerToken(authorization)
      if (token === undefined) return undefined
      // OAuth first: a JWT is told apart without hashing it (a static token is never one), and a token seen
      // before is answered from the verifier's cache; a token it does not take may still be a static one.
      const jwt = jwtSource?.authenticate(token, "")
      if (jwt === undefined) {
        const principal = lookUp(token)
        if (principal !== undefined && connection !== undefined) lastOnConnection.set(connection, { header: authorization, principal })
        return principal
      }
      return Effect.isEffect(jwt) ? Effect.map(jwt, (principal) => principal ?? lookUp(token)) : jwt
    }
    const challenges: Challenges | undefined = !oauth.enabled ? undefined : {
      unauthorized: (headers, refused) =>
        unauthorizedChallenge(metadataUrlFor(settings.oauthResource, headers), refused === undefined ? undefined : { description: refused }),
      forbidden: (grants, headers) =>
        insufficientScopeChallenge(
          grants,
          headers !== undefined ? metadataUrlFor(settings.oauthResource, headers) : settings.oauthResource === undefined ? undefined : metadataUrlOf(settings.oauthResource)
        )
    }
    return {
      required: required || oauth.enabled,
      authenticate,
      isCurrent,
      reload,
      ...(challenges === undefined ? {} : { challenges }),
      ...(required || oauth.enabled ? { activity: makePrincipalActivity() } : {})
    }
  })
)
