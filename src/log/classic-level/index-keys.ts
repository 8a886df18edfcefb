/**
 * Secondary index records of the classic-level store: one key per (index, row), empty value, so that a filtered or
 * ordered page is a walk over a key range in the order it serves.
 *   x!<type>!<fields>!<value>[<value>]<id:12>   a row's entry in the index on `fields` (one field, or two joined by
 *                                               ","): its encoded value of each field, then its id
 *   m!index!<type>!<fields>                     the index's state: building (with the last id backfilled) or ready
 *
 * Value encoding (order-preserving and self-delimiting, so the encodings of several fields concatenate and the id
 * follows; LevelDB compares bytes, and every encoded byte is ASCII or one of the two escapes below):
 *   absent or null   "a"
 *   boolean          "b0" / "b1"
 *   number           "n" + 16 hex digits of the IEEE-754 bits, sign bit flipped for a positive number and every bit
 *                    inverted for a negative one (-0 is written as 0), so that byte order is numeric order
 *   string           "s" + each UTF-16 code unit: 0x02..0x7e as itself, 0x00/0x01 as "\x01" + "0"/"1", 0x7f and above
 *                    as "\x7f" + 4 hex digits; then "\x00". Byte order is then code-unit order, the order every other
 *                    surface uses (ordered-index.ts), and no string is the prefix of another's encoding.
 *   anything else    "z" (objects and arrays: unordered among themselves, ties broken by id)
 * The ranks a < b < n < s < z follow `compareValues`: absent, booleans, numbers, strings, the rest.
 */
import type { Row } from "../../domain/catalog.ts"
import { isCanonicalId, MAX_ID_DIGITS } from "../../domain/ids.ts"

export const INDEXES_START = "x!"
export const INDEXES_END = "x!~"
export const INDEX_META_PREFIX = "m!index!"

const ID_DIGITS = MAX_ID_DIGITS
const hex4 = (n: number) => n.toString(16).padStart(4, "0")
const words = new DataView(new ArrayBuffer(8))

const encodeNumber = (n: number): string => {
  words.setFloat64(0, n === 0 ? 0 : n)
  let hi = words.getUint32(0)
  let lo = words.getUint32(4)
  if (hi & 0x80000000) {
    hi = ~hi >>> 0
    lo = ~lo >>> 0
  } else hi = (hi | 0x80000000) >>> 0
  return `n${hi.toString(16).padStart(8, "0")}${lo.toString(16).padStart(8, "0")}`
}

const encodeString = (s: string): string => {
  let out = "s"
  let plain = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0x02 && c < 0x7f) continue
    out += s.slice(plain, i) + (c < 0x02 ? `\u0001${c}` : `\u007f${hex4(c)}`)
    plain = i + 1
  }
  return `${out}${s.slice(plain)}\u0000`
}

/** A field value as it sorts in an index key. */
export const encodeValue = (v: unknown): string => {
  switch (typeof v) {
    case "undefined":
      return "a"
    case "boolean":
      return v ? "b1" : "b0"
    case "number":
      return encodeNumber(v)
    case "string":
      return encodeString(v)
    default:
      return v === null ? "a" : "z"
  }
}

const decodeNumber = (hex: string): number => {
  let hi = parseInt(hex.slice(0, 8), 16)
  let lo = parseInt(hex.slice(8, 16), 16)
  if (hi & 0x80000000) hi = (hi & 0x7fffffff) >>> 0
  else {
    hi = ~hi >>> 0
    lo = ~lo >>> 0
  }
  words.setUint32(0, hi)
  words.setUint32(4, lo)
  return words.getFloat64(0)
}

/**
 * The value encoded at `at` in an index key, and where its encoding ends: the inverse of `encodeValue` (absent for
 * "a"; null for "z", whose value is not kept).
 */
export const decodeValueAt = (key: string, at: number): { readonly value: unknown; readonly end: number } => {
  switch (key[at]) {
    case "a":
      return { value: undefined, end: at + 1 }
    case "b":
      return { value: key[at + 1] === "1", end: at + 2 }
    case "n":
      return { value: decodeNumber(key.slice(at + 1, at + 17)), end: at + 17 }
    case "s": {
      let out = ""
      let i = at + 1
      for (;;) {
        const c = key.charCodeAt(i)
        if (c === 0x00) return { value: out, end: i + 1 }
        if (c === 0x01) {
          out += String.fromCharCode(key.charCodeAt(i + 1) - 0x30)
          i += 2
        } else if (c === 0x7f) {
          out += String.fromCharCode(parseInt(key.slice(i + 1, i + 5), 16))
          i += 5
        } else {
          out += key[i]
          i++
        }
      }
    }
    default:
      return { value: null, end: at + 1 }
  }
}

/** The name of the index on `fields`, as it appears in its keys and its state record. */
export const indexName = (fields: ReadonlyArray<string>) => fields.join(",")

/** The key range prefix of one index: `x!<type>!<fields>!`. */
export const indexPrefix = (type: string, fields: ReadonlyArray<string>) => `${INDEXES_START}${type}!${indexName(fields)}!`

/** The end of the range a prefix starts (the key just past every key that begins with it). */
export const prefixEnd = (prefix: string) => `${prefix}\uffff`

/** An index key's id part, padded as a row key's is: from a canonical id only (log-keys.ts says why). */
export const idPart = (id: number | string) => {
  const text = String(id)
  if (!isCanonicalId(text)) throw new Error(`no index key for the non-canonical id ${JSON.stringify(text.slice(0, 40))}`)
  return text.padStart(ID_DIGITS, "0")
}

/** The row's entry in the index on `fields` of `type`. */
export const indexKey = (type: string, fields: ReadonlyArray<string>, row: Row): string => {
  let key = indexPrefix(type, fields)
  for (const field of fields) key += encodeValue(row[field])
  return key + idPart(row.id)
}

/** An index key without its id: the index's prefix and the row's encoded values. */
export const baseOfIndexKey = (key: string): string => key.slice(0, key.length - ID_DIGITS)

/** The id an index key ends with. */
export const idOfIndexKey = (key: string): number => Number(key.slice(key.length - ID_DIGITS))

export const indexMetaKey = (type: string, fields: ReadonlyArray<string>) => `${INDEX_META_PREFIX}${type}!${indexName(fields)}`

/** The type and fields a state record names. */
export const ofIndexMetaKey = (key: string): { readonly type: string; readonly fields: ReadonlyArray<string> } => {
  const rest = key.slice(INDEX_META_PREFIX.length)
  const at = rest.lastIndexOf("!")
  return { type: rest.slice(0, at), fields: rest.slice(at + 1).split(",") }
}
