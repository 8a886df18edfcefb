/** The row cache: its estimated bytes never pass the bound, and it evicts the least recently used row first. */
import { describe, expect, it } from "vitest"
import { RowCache, rowBytes } from "../../src/projections/rows/row-cache.ts"

const row = (i: number) => ({ id: String(i), version: 1, name: `item-${i}`, price: i, tags: ["a", "b"] })
/** Rows of one size (ids of three digits). */
const same = (i: number) => ({ id: String(100 + i), version: 1, name: "item", price: i, tags: ["a", "b"] })

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

  it("counts a write as a use: a row written again keeps its place, with its new value", () => {
    const cache = new RowCache(3 * rowBytes(row(1)))
    cache.set("a", row(1))
    cache.set("b", row(2))
    cache.set("c", row(3))
    cache.set("a", { ...row(1), price: 100 })
    cache.set("d", row(4))
    expect(cache.get("b")).toBeUndefined()
    expect(cache.get("a")).toEqual({ ...row(1), price: 100 })
    expect(cache.get("c")).toEqual(row(3))
    expect(cache.bytes).toBe(3 * rowBytes(row(1)))
  })

  it("once over its bound, evicts a sixteenth of its rows at once, the least recently used", () => {
    const cache = new RowCache(64 * rowBytes(same(1)))
    for (let i = 1; i <= 64; i++) cache.set(`r!p!${i}`, same(i))
    expect(cache.size).toBe(64)
    expect(cache.get("r!p!1")).toEqual(same(1))
    cache.set("r!p!65", same(65))
    // 65 rows: at least 65 >> 4 = 4 evicted, rows 2 to 5 (row 1 was read: it kept its place once).
    expect(cache.size).toBe(61)
    expect([2, 3, 4, 5].map((i) => cache.get(`r!p!${i}`))).toEqual([undefined, undefined, undefined, undefined])
    expect(cache.get("r!p!1")).toEqual(same(1))
    expect(cache.get("r!p!6")).toEqual(same(6))
    expect(cache.get("r!p!65")).toEqual(same(65))
    expect(cache.bytes).toBe(61 * rowBytes(same(1)))
  })
})
