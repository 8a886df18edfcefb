/** Request body parsing shared by REST and MCP, with a nesting limit checked before parsing. */
import { Either } from "effect"
import { isUtf8 } from "node:buffer"
import { leaveOutExcessKeys, worthCutting } from "./excess-keys.ts"
import { scanBody, type JsonScan } from "./json-scan.ts"


const JSON_TYPE = /^application\/json\s*(;|$)/i

/** True when the Content-Type names JSON (parameters such as charset allowed); what clients send, without the regex. */
export const isJsonContentType = (value: string | undefined) =>
  value === "application/json" || (value !== undefined && JSON_TYPE.test(value.trim()))

export type BodyProblem = { readonly _tag: "Malformed"; readonly message: string } | { readonly _tag: "TooDeep"; readonly max: number }

// Fatal: invalid UTF-8 is refused, never silently decoded to U+FFFD (which would store other text than was sent).
// ignoreBOM keeps a BOM in the text, so JSON.parse refuses it as before.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/** A command's input as parsed, and how many of its keys were left out unparsed (excess-keys.ts). */
export interface InputBody {
  readonly input: unknown
  readonly keysLeftOut: number
}

/**
 * Parses a JSON body, refusing invalid UTF-8 and nesting deeper than `maxDepth`. Given the keys a command's
 * decoder accepts, a top-level object of many more members is parsed without most of the keys it will refuse.
 * `scan`: the body's shape when the edge read it as it arrived (json-scan.ts), else it is read here.
 */
export const parseInputBody = (body: Buffer, maxDepth: number, accepts?: ReadonlySet<string>, scan?: JsonScan): Either.Either<InputBody, BodyProblem> => {
  // The bytes are checked first (cheaply, native), and decoded only when they are parsed whole.
  if (!isUtf8(body)) return Either.left(NOT_UTF8)
  const shape = scan !== undefined && scan.length === body.length ? scan : scanBody(body)
  if (shape.maxDepth > maxDepth) return Either.left({ _tag: "TooDeep", max: maxDepth })
  const cut = accepts !== undefined && worthCutting(shape.members, accepts) ? leaveOutExcessKeys(body, accepts, shape) : undefined
  if (cut !== undefined) {
    const parsed = parse(cut.text)
    // A syntax error in what was kept is reported as the whole body's (its position is in the original).
    if (Either.isRight(parsed)) return Either.right({ input: parsed.right, keysLeftOut: cut.keysLeftOut })
  }
  let text: string
  try {
    text = utf8.decode(body)
  } catch {
    return Either.left(NOT_UTF8)
  }
  return Either.map(parse(text), (input) => ({ input, keysLeftOut: 0 }))
}

const NOT_UTF8: BodyProblem = { _tag: "Malformed", message: "invalid UTF-8 (JSON text must be UTF-8)" }

// Only the syntax is checked here; every structure is then decoded through its Schema.
const parse = (text: string): Either.Either<unknown, BodyProblem> => {
  try {
    return Either.right(JSON.parse(text))
  } catch (e) {
    return Either.left({ _tag: "Malformed", message: (e as Error).message })
  }
}

/** Parses a JSON body, refusing invalid UTF-8 and nesting deeper than `maxDepth`. */
export const parseJsonBody = (body: Buffer, maxDepth: number, scan?: JsonScan): Either.Either<unknown, BodyProblem> =>
  Either.map(parseInputBody(body, maxDepth, undefined, scan), (parsed) => parsed.input)

export const describeBodyProblem = (problem: BodyProblem) =>
  problem._tag === "TooDeep" ? `JSON nests deeper than ${problem.max} levels (WO_MAX_JSON_DEPTH)` : problem.message
