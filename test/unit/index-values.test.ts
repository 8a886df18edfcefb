/**
 * An index key's encoded value reads back as the value it encodes (index-keys.ts `decodeValueAt`): what a bounded
 * index walk resumes from. Numbers (negative, zero, fractional, huge, infinite), strings of any code units
 * (the escaped ones included), booleans and absent, each followed by an id as in a key.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { decodeValueAt, encodeValue } from "../../src/log/classic-level/index-keys.ts"

describe("decodeValueAt", () => {
  it("reads back every value encodeValue writes, and ends where its encoding ends", () => {
    const value = fc.oneof(fc.double({ noNaN: true }), fc.integer(), fc.string({ unit: "binary" }), fc.string(), fc.boolean(), fc.constant(undefined))
    fc.assert(fc.property(value, fc.string({ maxLength: 3 }), (v, prefix) => {
      const key = `x!${prefix}!${encodeValue(v)}000000000042`
      const at = prefix.length + 3
      const decoded = decodeValueAt(key, at)
      // -0 is written as 0 (one key for both).
      expect(decoded.value).toEqual(Object.is(v, -0) ? 0 : v)
      expect(decoded.end).toBe(key.length - 12)
    }), { numRuns: 5000, seed: 46 })
  })
})
