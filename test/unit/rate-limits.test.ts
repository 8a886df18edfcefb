/** The token bucket of a principal's writes a second, on a clock the test moves. */
import { describe, expect, it } from "vitest"
import { streamRefused, TokenBucket } from "../../src/access/rate-limits.ts"

describe("TokenBucket", () => {
  it("lets a second's worth through at once, then one per 1/rate s, and says how long to wait", () => {
    const bucket = new TokenBucket(4, 0)
    expect([bucket.take(0), bucket.take(0), bucket.take(0), bucket.take(0)]).toEqual([0, 0, 0, 0])
    expect(bucket.take(0)).toBeCloseTo(0.25)
    expect(bucket.take(250)).toBe(0)
    expect(bucket.take(250)).toBeCloseTo(0.25)
    // Idle for long: refilled to a second's worth, no more.
    for (let i = 0; i < 4; i++) expect(bucket.take(60_000)).toBe(0)
    expect(bucket.take(60_000)).toBeGreaterThan(0)
  })

  it("a rate below one a second still lets one through, then waits seconds", () => {
    const bucket = new TokenBucket(0.5, 0)
    expect(bucket.take(0)).toBe(0)
    expect(bucket.take(0)).toBeCloseTo(2)
    expect(bucket.take(2000)).toBe(0)
  })
})

describe("streamRefused", () => {
  it("refuses the stream past the limit, and nothing without one", () => {
    expect(streamRefused({ streams: 2 }, 1)).toBeUndefined()
    expect(streamRefused({ streams: 2 }, 2)).toMatchObject({ limit: "streams", value: 2 })
    expect(streamRefused(undefined, 1000)).toBeUndefined()
  })
})
