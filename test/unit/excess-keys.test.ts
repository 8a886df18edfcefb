/**
 * A command body's keys its decoder will refuse are left unparsed (src/http/edge/excess-keys.ts): what JSON.parse is
 * given, and what the decode then sees, is bounded by the keys the decoder accepts plus MAX_ISSUES, whatever the
 * body's size. Counts only, no timing.
 */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { MAX_ISSUES } from "../../src/domain/errors.ts"
import { leaveOutExcessKeys } from "../../src/http/edge/excess-keys.ts"
import { parseInputBody, parseJsonBody } from "../../src/http/edge/json-body.ts"

const ACCEPTS: ReadonlySet<string> = new Set(["name", "price", "currency"])
const KNOWN = `"name":"x","price":1,"currency":"EUR"`
/** `"x00000000000":0,...`: `count` keys no product has, 17 bytes each. */
const unknownKeys = (count: number, from = 0) =>
  Array.from({ length: count }, (_, i) => `"x${String(from + i).padStart(11, "0")}":${i % 2 ? `{"deep":[1,"}"]}` : "0"}`).join(",")

const parsed = (text: string, accepts: ReadonlySet<string> | null = ACCEPTS) => {
  const result = parseInputBody(Buffer.from(text), 32, accepts ?? undefined)
  if (Either.isLeft(result)) throw new Error(`refused: ${JSON.stringify(result.left)}`)
  return result.right
}

describe("a body's excess keys are counted, not parsed", () => {
  it("200,000 unknown keys: the decode sees the 3 it accepts and the first 20 others; the 199,980 after are counted", () => {
    const body = parsed(`{${KNOWN},${unknownKeys(200_000)}}`)
    const keys = Object.keys(body.input as object)
    expect(keys).toHaveLength(3 + MAX_ISSUES)
    expect(keys.slice(0, 4)).toEqual(["name", "price", "currency", "x00000000000"])
    expect(keys.at(-1)).toBe(`x${String(MAX_ISSUES - 1).padStart(11, "0")}`)
    expect(body.keysLeftOut).toBe(200_000 - MAX_ISSUES)
    // The values kept are parsed whole, nested ones too.
    expect((body.input as Record<string, unknown>).x00000000001).toEqual({ deep: [1, "}"] })
  })

  it("keeps every member the decode or the input rules must see, wherever it stands: accepted keys (escaped too) and __proto__", () => {
    const body = parsed(`{${unknownKeys(1000)},"pr\\u0069ce":"wrong","__proto__":{"a":1},${unknownKeys(1000, 1000)},"name":"late"}`)
    const input = body.input as Record<string, unknown>
    expect(input.price).toBe("wrong")
    expect(input.name).toBe("late")
    expect(Object.hasOwn(input, "__proto__")).toBe(true)
    expect(Object.keys(input)).toHaveLength(MAX_ISSUES + 3)
    expect(body.keysLeftOut).toBe(2000 - MAX_ISSUES)
  })

  it("reads multi-byte keys and values by their bytes, and refuses invalid UTF-8 before anything", () => {
    const many = Array.from({ length: 30 }, (_, i) => `"ключ${i}":"é"`).join(",")
    const body = parsed(`{${many},"name":"ünï"}`)
    expect(body.input).toMatchObject({ name: "ünï", ключ0: "é" })
    expect(body.keysLeftOut).toBe(30 - MAX_ISSUES)
    const invalid = Buffer.concat([Buffer.from(`{${many},"name":"`), Buffer.from([0xff]), Buffer.from(`"}`)])
    expect(parseInputBody(invalid, 32, ACCEPTS)).toEqual(Either.left({ _tag: "Malformed", message: "invalid UTF-8 (JSON text must be UTF-8)" }))
  })

  it("cuts nothing when nothing would be left out: few keys, no accepted keys known, or an accepted key sent many times", () => {
    expect(parsed(`{${KNOWN},${unknownKeys(MAX_ISSUES)}}`).keysLeftOut).toBe(0)
    expect(Object.keys(parsed(`{${KNOWN},${unknownKeys(500)}}`, null).input as object)).toHaveLength(503)
    const repeated = parsed(`{${Array.from({ length: 500 }, (_, i) => `"price":${i}`).join(",")}}`)
    expect(repeated).toEqual({ input: { price: 499 }, keysLeftOut: 0 })
    expect(leaveOutExcessKeys(Buffer.from(`[${unknownKeys(100).replaceAll(":", ",")}]`), ACCEPTS)).toBeUndefined()
  })

  it("a syntax error in what is kept, or after the object, is the body's own JSON error", () => {
    const plain = (text: string) => parseJsonBody(Buffer.from(text), 32)
    for (const text of [`{${unknownKeys(100)}} trailing`, `{"name":,${unknownKeys(100)}}`]) {
      const cut = parseInputBody(Buffer.from(text), 32, ACCEPTS)
      expect(Either.isLeft(cut), text.slice(0, 40)).toBe(true)
      expect(cut).toEqual(Either.map(plain(text), () => "never"))
    }
  })
})
