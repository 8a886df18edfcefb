/** Request body parsing shared by REST and MCP, with a nesting limit checked before parsing. */
import { Either } from "effect"
import { isUtf8 } from "node:buffer"
import { leaveOutExcessKeys, worthCutting } from "./excess-keys.ts"


/** True when the Content-Type names JSON (parameters such as charset allowed). */
export const isJsonContentType = (value: string | undefined) =>
  value !== undefined && /^application\/json\s*(;|$)/i.test(value.trim())

/**
 * One linear scan of a JSON text's UTF-8 bytes (strings skipped; a multi-byte character is never one of the ASCII
 * bytes looked for): -1 when it nests arrays and objects deeper than `max`, else how many members its top-level
 * object has (0 when the text is not an object).
 */
export const scanJson = (text: Uint8Array, max: number): number => {
  let depth = 0
  let members = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (inString) {
      if (c === 92) i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 || c === 91) {
      if (++depth > max) return -1
    } else if (c === 125 || c === 93) depth--
    else if (c === 58 && depth === 1) members++
  }
  return members
}

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
 */
export const parseInputBody = (body: Buffer, maxDepth: number, accepts?: ReadonlySet<string>): Either.Either<InputBody, BodyProblem> => {
  // The bytes are checked first (cheaply), and decoded only when they are parsed whole.
  if (!isUtf8(body)) return Either.left(NOT_UTF8)
  const members = scanJson(body, maxDepth)
  if (members < 0) return Either.left({ _tag: "TooDeep", max: maxDepth })
  const cut = accepts !== undefined && worthCutting(members, accepts) ? leaveOutExcessKeys(body, accepts) : undefined
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
export const parseJsonBody = (body: Buffer, maxDepth: number): Either.Either<unknown, BodyProblem> =>
  Either.map(parseInputBody(body, maxDepth), (parsed) => parsed.input)

export const describeBodyProblem = (problem: BodyProblem) =>
  problem._tag === "TooDeep" ? `JSON nests deeper than ${problem.max} levels (WO_MAX_JSON_DEPTH)` : problem.message
