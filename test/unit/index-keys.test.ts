/**
 * The index key encoding (log/classic-level/index-keys.ts): byte order of the encoded values, as LevelDB compares
 * them, is the order every list uses (`compareValues`: absent, booleans, numbers, strings by UTF-16 code unit), and
 * one value's encoding is never the prefix of another's, so that two fields' encodings concatenate and the id
 * follows.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { encodeValue, idOfIndexKey, indexKey } from "../../src/log/classic-level/index-keys.ts"
import { compareValues } from "../../src/projections/rows/ordered-index.ts"

const bytes = (s: string) => Buffer.from(s, "utf8")
const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0)

const valueArb = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.boolean(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer({ min: -1000, max: 1000 }),
  fc.string({ unit: "binary" }),
  fc.string({ unit: fc.constantFrom("a", "b", "\u0000", "\u0001", "\u007f", "\u00e9", "\uffff", "\ud83d\ude00", "~", "!") })
)

describe("index keys", () => {
  it("sort as the values do, byte for byte", () => {
    fc.assert(
      fc.property(valueArb, valueArb, (a, b) => {
        expect(sign(Buffer.compare(bytes(encodeValue(a)), bytes(encodeValue(b))))).toBe(sign(compareValues(a, b)))
      }),
      { numRuns: 5000 }
    )
  })

  it("sort by the first field, then the second, then the id, and give the id back", () => {
    fc.assert(
      fc.property(valueArb, valueArb, valueArb, valueArb, fc.integer({ min: 1, max: 1e9 }), fc.integer({ min: 1, max: 1e9 }), (a1, a2, b1, b2, i, j) => {
        const a = indexKey("t", ["f", "g"], { id: String(i), version: 1, f: a1, g: a2 })
        const b = indexKey("t", ["f", "g"], { id: String(j), version: 1, f: b1, g: b2 })
        expect(idOfIndexKey(a)).toBe(i)
        const expected = compareValues(a1, b1) || compareValues(a2, b2) || i - j
        expect(sign(Buffer.compare(bytes(a), bytes(b)))).toBe(sign(expected))
      }),
      { numRuns: 3000 }
    )
  })

  it("write -0 as 0, and numbers across the sign in order", () => {
    expect(encodeValue(-0)).toBe(encodeValue(0))
    const ns = [-Number.MAX_VALUE, -1e9, -1.5, -Number.MIN_VALUE, 0, Number.MIN_VALUE, 0.1, 1, 2 ** 53, Number.MAX_VALUE]
    const sorted = [...ns].sort((a, b) => Buffer.compare(bytes(encodeValue(a)), bytes(encodeValue(b))))
    expect(sorted).toEqual(ns)
  })
})
