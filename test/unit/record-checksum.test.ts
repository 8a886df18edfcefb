/**
 * The records' checksum (record.ts over crc32c.ts): key and payload encoded into a reused buffer and checked eight
 * bytes at a time must give the CRC-32C of their UTF-8 bytes, byte for byte as a plain byte-wise loop does, for
 * any text (surrogate pairs, lone surrogates, records larger than the buffer), and a record sealed under one key
 * opens under it and no other.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { CRC32C_TABLE } from "../../src/log/crc32c.ts"
import { crc32c, RecordCorrupt, seal, unseal } from "../../src/log/record.ts"

/** The reference: one table lookup per UTF-8 byte, as Buffer.from encodes the text. */
const byteWise = (s: string) => {
  let c = -1
  for (const b of Buffer.from(s, "utf8")) c = CRC32C_TABLE[(c ^ b) & 0xff] ^ (c >>> 8)
  return (c ^ -1) >>> 0
}

const text = fc.string({ unit: fc.oneof(fc.constantFrom("a", "{", "\"", "é", "€", "😀", "\ud800", "\udc00", "\u007f", "\u0080"), fc.string({ minLength: 1, maxLength: 1 })), maxLength: 80 })

describe("record checksums", () => {
  it("match the byte-wise CRC-32C of the UTF-8 bytes, for any text", () => {
    expect(crc32c("123456789")).toBe(0xe3069283) // the Castagnoli check value
    fc.assert(fc.property(text, (s) => crc32c(s) === byteWise(s)), { numRuns: 2000, seed: 25 })
  })

  it("open a sealed record under its key only, however long it is", () => {
    const big = `{"name":"${"x€😀".repeat(30_000)}\ud800"}` // larger than the checksum's 64 KiB buffer
    for (const payload of ["{}", "{\"name\":\"p1\",\"price\":3}", big]) {
      const value = seal("r!products!000000000001", payload)
      expect(value.slice(0, 8)).toBe(byteWise(`r!products!000000000001\u0000${payload}`).toString(16).padStart(8, "0"))
      expect(unseal("r!products!000000000001", value)).toBe(payload)
      expect(() => unseal("r!products!000000000002", value)).toThrow(RecordCorrupt)
    }
  })
})
