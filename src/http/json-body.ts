/** Request body parsing shared by REST and MCP, with a nesting limit checked before parsing. */
import { Either } from "effect"


/** True when the Content-Type names JSON (parameters such as charset allowed). */
export const isJsonContentType = (value: string | undefined) =>
  value !== undefined && /^application\/json\s*(;|$)/i.test(value.trim())

/** True when the JSON text nests arrays and objects deeper than `max` (a linear scan, strings skipped). */
export const nestsDeeperThan = (text: string, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 || c === 91) {
      if (++depth > max) return true
    } else if (c === 125 || c === 93) depth--
  }
  return false
}

export type BodyProblem = { readonly _tag: "Malformed"; readonly message: string } | { readonly _tag: "TooDeep"; readonly max: number }

// Fatal: invalid UTF-8 is refused, never silently decoded to U+FFFD (which would store other text than was sent).
// ignoreBOM keeps a BOM in the text, so JSON.parse refuses it as before.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

/** Parses a JSON body, refusing invalid UTF-8 and nesting deeper than `maxDepth`. */
export const parseJsonBody = (body: Buffer, maxDepth: number): Either.Either<unknown, BodyProblem> => {
  let text: string
  try {
    text = utf8.decode(body)
  } catch {
    return Either.left({ _tag: "Malformed", message: "invalid UTF-8 (JSON text must be UTF-8)" })
  }
  if (nestsDeeperThan(text, maxDepth)) return Either.left({ _tag: "TooDeep", max: maxDepth })
  // Only the syntax is checked here; every structure is then decoded through its Schema.
  try {
    return Either.right(JSON.parse(text))
  } catch (e) {
    return Either.left({ _tag: "Malformed", message: (e as Error).message })
  }
}

export const describeBodyProblem = (problem: BodyProblem) =>
  problem._tag === "TooDeep" ? `JSON nests deeper than ${problem.max} levels (WO_MAX_JSON_DEPTH)` : problem.message
