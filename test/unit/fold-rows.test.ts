/**
 * The rows a fold from the log keeps (fold-rows.ts), as JSON bytes off the heap: the arena against a plain map of
 * the same rows under random adds, replaces and removes (chunks overflowed, rows larger than a chunk, compactions
 * forced by a small threshold), and the fold's rows against the row a plain fold of the same events gives.
 */
import { describe, expect, it } from "vitest"
import fc from "fast-check"
import { Either, Schema } from "effect"
import { defineApp, entity, type Row } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { CHUNK_BYTES, makeFoldRows, makeRowArena, rowAfter } from "../../src/projections/views/fold-rows.ts"

type Op = { op: "add"; size: number } | { op: "replace"; pick: number; size: number } | { op: "remove"; pick: number }

const rowOf = (n: number, size: number): Row => ({ id: `r${n}`, version: n, text: "é".repeat(size), n })

describe("the fold's row arena", () => {
  it("gives back every row as it was put, through replaces, removes, full chunks and compactions", () => {
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ op: fc.constant("add" as const), size: fc.oneof({ arbitrary: fc.nat(200), weight: 30 }, { arbitrary: fc.constant(CHUNK_BYTES), weight: 1 }) }),
      fc.record({ op: fc.constant("replace" as const), pick: fc.nat(), size: fc.nat(3000) }),
      fc.record({ op: fc.constant("remove" as const), pick: fc.nat() })
    )
    fc.assert(fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
      const arena = makeRowArena(4096)
      const model = new Map<number, Row>()
      let n = 0
      for (const o of ops) {
        const slots = [...model.keys()]
        if (o.op === "add") {
          const row = rowOf(++n, o.size)
          const slot = arena.add(row)
          expect(model.has(slot)).toBe(false)
          model.set(slot, row)
        } else if (slots.length > 0) {
          const slot = slots[o.pick % slots.length]!
          if (o.op === "remove") {
            arena.remove(slot)
            model.delete(slot)
          } else {
            const row = rowOf(++n, o.size)
            arena.replace(slot, row)
            model.set(slot, row)
          }
        }
        for (const [slot, row] of model) expect(arena.get(slot)).toEqual(row)
      }
      const live = [...model.values()].reduce((sum, row) => sum + Buffer.byteLength(JSON.stringify(row)), 0)
      expect(arena.bytes()).toBeGreaterThanOrEqual(live)
    }), { numRuns: 60 })
  })

  it("gives back the bytes of replaced rows once they outweigh the live ones", () => {
    const arena = makeRowArena(CHUNK_BYTES)
    const kept = Array.from({ length: 100 }, (_, i) => arena.add(rowOf(100_000 + i, 10)))
    const slot = arena.add(rowOf(0, 10))
    for (let i = 1; i <= 5000; i++) arena.replace(slot, rowOf(i, 1000))
    // Without compaction: 5,000 rows of ~2 KB. With it, at most the threshold's worth beside the live rows.
    expect(arena.bytes()).toBeLessThan(2 * CHUNK_BYTES)
    expect(arena.get(slot)).toEqual(rowOf(5000, 1000))
    kept.forEach((s, i) => expect(arena.get(s)).toEqual(rowOf(100_000 + i, 10)))
  })
})

const shop = Either.getOrThrow(compileApp(defineApp({
  name: "shop",
  entities: {
    items: entity({ fields: { label: Schema.String, price: Schema.Number, note: Schema.String.pipe(Schema.optionalWith({ default: () => "none" })) } })
  }
})))

describe("the fold's rows", () => {
  it("answer each event's row before and after it, as a fold of plain objects does, whatever evolve does to them", () => {
    const kinds = fc.array(fc.record({ id: fc.constantFrom("a", "b", "c"), price: fc.integer({ min: -5, max: 5 }), del: fc.boolean() }), { maxLength: 80 })
    fc.assert(fc.property(kinds, (steps) => {
      const rows = makeFoldRows(shop)
      const model = new Map<string, Row>()
      let seq = 0
      for (const s of steps) {
        const before = model.get(s.id) ?? null
        const kind = before === null ? "created" : s.del ? "deleted" : "updated"
        const data: Record<string, unknown> = kind === "created" ? { label: `item ${s.id}`, price: s.price } : kind === "updated" ? { price: s.price } : {}
        const event: StoredEvent = { seq: ++seq, at: 0, type: "items", id: s.id, version: (before?.version ?? 0) + 1, kind, data }
        const expected = rowAfter(shop, before === null ? null : structuredClone(before), event)
        const got = rows.apply(event)
        expect(got.before).toEqual(before)
        expect(got.after).toEqual(expected)
        if (got.after !== null) (got.after as Record<string, unknown>).label = "changed by an evolve"
        if (expected === null) model.delete(s.id)
        else model.set(s.id, expected)
      }
    }), { numRuns: 100 })
  })
})
