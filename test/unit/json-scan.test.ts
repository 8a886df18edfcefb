/**
 * A JSON body's shape read chunk by chunk as it arrives (src/http/edge/json-scan.ts) is the shape of the whole body,
 * wherever the chunks are cut (inside a string, between a backslash and what it escapes, inside a multi-byte
 * character), and the body parses through it as it does without it.
 */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { JsonScan, scanBody } from "../../src/http/edge/json-scan.ts"
import { isJsonContentType, parseInputBody } from "../../src/http/edge/json-body.ts"

const ACCEPTS: ReadonlySet<string> = new Set(["name", "price", "currency"])
const unknownKeys = (count: number) => Array.from({ length: count }, (_, i) => `"x\\"${i}":"v\\\\é}"`).join(",")
const BODY = Buffer.from(`{"name":"x","pr\\u0069ce":[1,{"a":"]"}],${unknownKeys(40)},"currency":"EUR"} `)

const fed = (body: Buffer, cuts: ReadonlyArray<number>) => {
  const scan = new JsonScan()
  let at = 0
  for (const cut of [...cuts, body.length]) {
    scan.feed(body.subarray(at, cut))
    at = cut
  }
  return scan
}
const shapeOf = (scan: JsonScan) => ({ ...scan, layout: Array.from(scan.layout.subarray(0, scan.count * 3)) })

describe("a JSON body's shape, read as it arrives", () => {
  it("is the whole body's, cut at every byte", () => {
    const whole = shapeOf(scanBody(BODY))
    expect(whole.count).toBe(43)
    expect(whole.maxDepth).toBe(3)
    for (let cut = 1; cut < BODY.length; cut++) expect(shapeOf(fed(BODY, [cut])), `cut at ${cut}`).toEqual(whole)
    expect(shapeOf(fed(BODY, Array.from({ length: BODY.length - 1 }, (_, i) => i + 1)))).toEqual(whole)
  })

  it("parses the body as it does without it", () => {
    const without = parseInputBody(BODY, 32, ACCEPTS)
    expect(Either.isRight(without) && without.right.keysLeftOut).toBe(40 - 20)
    expect(parseInputBody(BODY, 32, ACCEPTS, fed(BODY, [7, 100, 101]))).toEqual(without)
    expect(parseInputBody(BODY, 2, ACCEPTS, fed(BODY, [7]))).toEqual(Either.left({ _tag: "TooDeep", max: 2 }))
  })

  it("takes a JSON Content-Type, with parameters, in any case, and no other", () => {
    for (const value of ["application/json", "Application/JSON", " application/json ", "application/json; charset=utf-8", "application/json;charset=UTF-8"]) {
      expect(isJsonContentType(value), value).toBe(true)
    }
    for (const value of [undefined, "", "text/plain", "application/jsonx", "application/json-patch+json", "application/ json", "xapplication/json"]) {
      expect(isJsonContentType(value), String(value)).toBe(false)
    }
  })
})
