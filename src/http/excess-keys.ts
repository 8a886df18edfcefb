/**
 * A command body's keys that its decoder will refuse, left unparsed. `JSON.parse` of an object of 200,000 keys
 * takes V8 about 150 ms (it builds a dictionary of them), and the decode then only names the first MAX_ISSUES
 * and counts the others: a stream of such bodies held the event loop for a third of a second each.
 *
 * So when a body's top-level object has more members than the decoder accepts keys plus MAX_ISSUES, the text is
 * cut before the parse: kept are the members whose key the decoder accepts or the input rules refuse (they are
 * named as before), and the first MAX_ISSUES others (the ones the answer names); the members after those are
 * counted, as sent (a key sent twice counts twice), and their values never read. The decode of what is kept
 * refuses the body for its unknown keys, and the count joins its `omitted`. Not read either: the syntax of the
 * members left out, so a body that is also malformed there is refused for its unknown keys, not as bad JSON.
 * It reads the body's bytes (checked UTF-8): only what is kept is decoded to text.
 */
import { MAX_ISSUES } from "../domain/errors.ts"
import { FORBIDDEN_KEYS } from "../domain/input-rules.ts"

const utf8 = new TextDecoder("utf-8", { ignoreBOM: true })

/** The body to parse instead, and how many members were left out of it. */
export interface CutBody {
  readonly text: string
  readonly keysLeftOut: number
}

/** True when a top-level object of `members` members is worth cutting for a decoder that accepts `accepts`. */
export const worthCutting = (members: number, accepts: ReadonlySet<string>) => members > accepts.size + MAX_ISSUES

/**
 * The text of a top-level object cut as above, or undefined when nothing would be left out (the original is
 * parsed then, and any syntax error found as usual). `body` must be valid UTF-8 JSON that nests correctly
 * (json-body.ts has checked both).
 */
export const leaveOutExcessKeys = (body: Uint8Array, accepts: ReadonlySet<string>): CutBody | undefined => {
  const text = (from: number, to: number) => utf8.decode(body.subarray(from, to))
  // Most keys are told apart by their length in bytes alone, without a string made of them.
  const lengths = new Set([...accepts, ...FORBIDDEN_KEYS].map((k) => Buffer.byteLength(k)))
  const kept: Array<string> = []
  let others = 0
  let leftOut = 0
  let depth = 0
  let inString = false
  let open = -1 // the top-level `{`
  let memberStart = -1
  let keyStart = -1
  let keyEnd = -1
  let keyEscaped = false
  // The member from memberStart to `end` (exclusive): kept or counted. False when its key is not valid JSON.
  const endMember = (end: number): boolean => {
    if (keyStart < 0) return true // `{}` or a stray comma: JSON.parse of the original will say so
    let key: unknown = undefined
    if (keyEscaped) {
      try {
        key = JSON.parse(text(keyStart, keyEnd))
      } catch {
        return false
      }
    } else if (lengths.has(keyEnd - keyStart - 2)) key = text(keyStart + 1, keyEnd - 1)
    const known = typeof key === "string" && (accepts.has(key) || FORBIDDEN_KEYS.has(key))
    if (known || others++ < MAX_ISSUES) kept.push(text(memberStart, end))
    else leftOut++
    keyStart = -1
    keyEnd = -1
    keyEscaped = false
    memberStart = end + 1
    return true
  }
  for (let i = 0; i < body.length; i++) {
    const c = body[i]
    if (inString) {
      if (c === 92) {
        if (keyEnd < 0 && depth === 1) keyEscaped = true
        i++ // backslash: skip the escaped character
      } else if (c === 34) {
        inString = false
        if (depth === 1 && keyEnd < 0) keyEnd = i + 1
      }
    } else if (c === 34) {
      inString = true
      if (depth === 1 && keyStart < 0) keyStart = i
    } else if (c === 123 || c === 91) {
      if (depth++ === 0) {
        if (c !== 123) return undefined
        open = i
        memberStart = i + 1
      }
    } else if (c === 125 || c === 93) {
      if (--depth === 0) {
        if (!endMember(i)) return undefined
        return leftOut === 0 ? undefined : { text: `${text(0, open + 1)}${kept.join(",")}${text(i, body.length)}`, keysLeftOut: leftOut }
      }
    } else if (c === 44 && depth === 1) {
      if (!endMember(i)) return undefined
    }
  }
  return undefined
}
