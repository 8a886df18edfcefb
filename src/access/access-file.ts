/**
 * The access file (`WO_ACCESS_FILE`, `--access FILE`): the principals, each with its token (in clear, or as the
 * hex of its SHA-256) and its grants, checked against the catalog. Decoding is pure: the file's text in, the
 * principals or every problem found out, so that a bad file is refused whole and the previous principals stay.
 *
 *   { "principals": [
 *       { "name": "pricing-agent", "token": "…", "grants": ["products:read", "products:set_price"] },
 *       { "name": "auditor", "tokenSha256": "<hex of sha256(token)>", "grants": ["read"] } ] }
 */
import { Either, ParseResult, Schema } from "effect"
import { createHash } from "node:crypto"
import type { CompiledApp } from "../domain/compile.ts"
import { compileGrants } from "./grants.ts"
import type { Principal } from "./principal.ts"
import { TokenBucket } from "./rate-limits.ts"

/** A name as it appears in events and logs: no spaces (a space separates it from an idempotency key). */
const Name = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$/, {
  message: () => "a principal's name is 1 to 128 letters, digits, and . _ @ : - (starting with a letter or digit)"
}))
const Token = Schema.String.pipe(Schema.minLength(16, { message: () => "a token has at least 16 characters" }))
const Digest = Schema.String.pipe(Schema.pattern(/^[0-9a-fA-F]{64}$/, { message: () => "tokenSha256 is 64 hex digits" }))

const Limits = Schema.Struct({
  writesPerSecond: Schema.optional(Schema.Number.pipe(Schema.positive({ message: () => "writesPerSecond is a number above 0" }))),
  streams: Schema.optional(Schema.Int.pipe(Schema.positive({ message: () => "streams is a whole number above 0" })))
})

const Entry = Schema.Struct({
  name: Name,
  token: Schema.optional(Token),
  tokenSha256: Schema.optional(Digest),
  grants: Schema.Array(Schema.String),
  limits: Schema.optional(Limits)
})

export const AccessFileSchema = Schema.Struct({ principals: Schema.Array(Entry) })

/** A principal as the file declares it, with the digest its token is looked up by. */
export interface DeclaredPrincipal {
  readonly principal: Principal
  /** Hex of sha256(token). */
  readonly digest: string
}

export const tokenDigest = (token: string) => createHash("sha256").update(token).digest("hex")

const decode = Schema.decodeUnknownEither(Schema.parseJson(AccessFileSchema), { onExcessProperty: "error" })

/** The file's principals, or every problem with it (each one line, naming the principal). */
export const decodeAccessFile = (text: string, app: CompiledApp): Either.Either<ReadonlyArray<DeclaredPrincipal>, ReadonlyArray<string>> => {
  const parsed = decode(text)
  if (Either.isLeft(parsed)) {
    return Either.left(ParseResult.ArrayFormatter.formatErrorSync(parsed.left).map((i) => `${i.path.length ? `at ${i.path.join(".")}: ` : ""}${i.message}`))
  }
  const problems: Array<string> = []
  const names = new Set<string>()
  const digests = new Set<string>()
  const declared: Array<DeclaredPrincipal> = []
  for (const entry of parsed.right.principals) {
    const who = `principal ${entry.name}`
    if (names.has(entry.name)) problems.push(`${who} is declared twice`)
    names.add(entry.name)
    if ((entry.token === undefined) === (entry.tokenSha256 === undefined)) {
      problems.push(`${who} needs exactly one of token and tokenSha256`)
      continue
    }
    const digest = entry.token !== undefined ? tokenDigest(entry.token) : entry.tokenSha256!.toLowerCase()
    if (digests.has(digest)) problems.push(`${who} has the same token as another principal`)
    digests.add(digest)
    const grants = compileGrants(app, entry.grants)
    if (Either.isLeft(grants)) {
      for (const p of grants.left) problems.push(`${who}: ${p}`)
      continue
    }
    const limits = entry.limits === undefined ? undefined : {
      ...(entry.limits.writesPerSecond !== undefined ? { writes: new TokenBucket(entry.limits.writesPerSecond) } : {}),
      ...(entry.limits.streams !== undefined ? { streams: entry.limits.streams } : {})
    }
    declared.push({ digest, principal: { name: entry.name, grants: grants.right, keyScope: entry.name, ...(limits ? { limits } : {}) } })
  }
  return problems.length > 0 ? Either.left(problems) : Either.right(declared)
}
