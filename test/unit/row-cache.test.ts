/** The row cache: its estimated bytes never pass the bound, and it evicts the least recently used row first. */
import { describe, expect, it } from "vitest"
import { RowCache, rowBytes } from "../../src/projections/row-cache.ts"

const row = (i: number) => ({ id: String(i), version: 1, name: `item-${i}`, price: i, tags: ["a", "b"] })

describe("RowCache", () => {
  it("stays within its bound whatever is put in it", () => {
    const cache = new RowCache(50 * rowBytes(row(1)))
    for (let i = 1; i <= 10_000; i++) {
      cache.set(`r!p!${i}`, row(i))
      expect(cache.bytes).toBeLessThanOrEqual(cache.maxBytes)
    }
    expect(cache.size).toBeGreaterThanOrEqual(45)
    expect(cache.size).toBeLessThanOrEqual(50)
    expect(cache.get("r!p!10000")).toEqual(row(10_000))
    expect(cache.get("r!p!1")).toBeUndefined()
  })

  it("keeps a row that was read recently and evicts the one read longest ago", () => {
    const cache = new RowCache(3 * rowBytes(row(1)))
    cache.set("a", row(1))
    cache.set("b", row(2))
    cache.set("c", row(3))
    expect(cache.get("a")).toEqual(row(1))
    cache.set("d", row(4))
    expect(cache.get("b")).toBeUndefined()
    expect(cache.get("a")).toEqual(row(1))
    cache.delete("a")
    expect(cache.get("a")).toBeUndefined()
    expect(cache.bytes).toBe(2 * rowBytes(row(1)))
  })
})
