/**
 * A command body's keys that its decoder will refuse, left unparsed. `JSON.parse` of an object of 200,000 keys
 * takes V8 about 150 ms (it builds a dictionary of them), and the decode then only names the first MAX_ISSUES
 * and counts the others: a stream of such bodies holds the event loop for a third of a second each.
 *
 * So when a body's top-level object has more members than the decoder accepts keys plus MAX_ISSUES, the text is
 * cut before the parse: kept are the members whose key the decoder accepts or the input rules refuse (they are
 * named as without the cut), and the first MAX_ISSUES others (the ones the answer names); the members after those are
 * counted, as sent (a key sent twice counts twice), and their values never read. The decode of what is kept
 * refuses the body for its unknown keys, and the count joins its `omitted`. Not read either: the syntax of the
 * members left out, so a body that is also malformed there is refused for its unknown keys, not as bad JSON.
 * It reads the body's bytes (checked UTF-8) through their shape (json-scan.ts, read as they arrived): one step per
 * member, a few array reads, and only what is kept is decoded to text.
 */
import { MAX_ISSUES } from "../../domain/errors.ts"
import { FORBIDDEN_KEYS } from "../../domain/rules/input-rules.ts"
import { scanBody, type JsonScan } from "./json-scan.ts"

const utf8 = new TextDecoder("utf-8", { ignoreBOM: true })

/** The body to parse instead, and how many members were left out of it. */
export interface CutBody {
  readonly text: string
  readonly keysLeftOut: number
}

/** True when a top-level object of `members` members is worth cutting for a decoder that accepts `accepts`. */
export const worthCutting = (members: number, accepts: ReadonlySet<string>) => members > accepts.size + MAX_ISSUES

/** By byte length: whether some key of `accepts` or FORBIDDEN_KEYS has it (most keys are told apart by it alone). */
const lengthsOf = (accepts: ReadonlySet<string>) => {
  const lengths = new Uint8Array(256)
  for (const k of [...accepts, ...FORBIDDEN_KEYS]) {
    const n = Buffer.byteLength(k)
    if (n < lengths.length) lengths[n] = 1
  }
  return lengths
}
const lengthsCache = new WeakMap<ReadonlySet<string>, Uint8Array>()

/**
 * The text of a top-level object cut as above, or undefined when nothing would be left out (the original is
 * parsed then, and any syntax error found as usual). `body` must be valid UTF-8 JSON that nests correctly
 * (json-body.ts has checked both); `scan`, its shape, when it was read as the body arrived.
 */
export const leaveOutExcessKeys = (body: Uint8Array, accepts: ReadonlySet<string>, scan: JsonScan = scanBody(body)): CutBody | undefined => {
  if (scan.openByte !== 123 || scan.close < 0) return undefined
  const text = (from: number, to: number) => utf8.decode(body.subarray(from, to))
  let lengths = lengthsCache.get(accepts)
  if (lengths === undefined) lengthsCache.set(accepts, (lengths = lengthsOf(accepts)))
  const layout = scan.layout
  const kept: Array<string> = []
  let others = 0
  let leftOut = 0
  let memberStart = scan.open + 1
  for (let m = 0; m < scan.count; m++) {
    const keyStart = layout[m * 3]
    const keyEndSigned = layout[m * 3 + 1]
    const end = layout[m * 3 + 2]
    // `{}` or a stray comma: kept in the next member's text, so that JSON.parse of what is kept says so.
    if (keyStart >= 0) {
      let key: unknown = undefined
      if (keyEndSigned < 0) {
        try {
          key = JSON.parse(text(keyStart, -keyEndSigned))
        } catch {
          return undefined // a key that is not valid JSON: the original's parse says where
        }
      } else {
        const n = keyEndSigned - keyStart - 2
        if (n >= 0 && n < 256 && lengths[n] === 1) key = text(keyStart + 1, keyEndSigned - 1)
      }
      const known = typeof key === "string" && (accepts.has(key) || FORBIDDEN_KEYS.has(key))
      if (known || others++ < MAX_ISSUES) kept.push(text(memberStart, end))
      else leftOut++
      memberStart = end + 1
    }
  }
  return leftOut === 0 ? undefined : { text: `${text(0, scan.open + 1)}${kept.join(",")}${text(scan.close, body.length)}`, keysLeftOut: leftOut }
}
