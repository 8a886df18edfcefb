/**
 * A view's value (a keyed view's entry) is encoded in every batch that changes it. A struct of plain fields, or of
 * arrays of them, is checked without Effect's parser when the value passes; its JSON is then the one Schema's encode
 * gives, and a value that does not pass goes to Schema, which words the issue as before.
 */
import { describe, expect, it } from "vitest"
import { Either, Schema } from "effect"
import { defineApp, entity, view } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"

const Plain = Schema.Struct({ USD: Schema.Int, EUR: Schema.Int, rate: Schema.Number, label: Schema.String, state: Schema.Literal("open", "closed") })
// The same check, out of the plain path's reach (a refinement around the struct): Schema encodes every value.
const Wrapped = Plain.pipe(Schema.filter(() => true))

const viewOf = (schema: Schema.Schema<any, any>, initial: unknown = { USD: 0, EUR: 0, rate: 1, label: "", state: "open" }) => {
  const app = defineApp({
    name: "encode",
    entities: { items: entity({ fields: { name: Schema.String } }) },
    views: {
      totals: view({
        schema,
        initial,
        on: { items: ["created"] },
        evolve: (value) => value
      })
    }
  })
  return Either.getOrThrow(compileApp(app)).views.get("totals")!
}

describe("a view's encode", () => {
  const plain = viewOf(Plain)
  const wrapped = viewOf(Wrapped)

  it("gives Schema's JSON for values that pass: the declared order of the fields, excess keys dropped", () => {
    const values = [
      { USD: 3, EUR: 4, rate: 1.5, label: "a", state: "open" },
      { state: "closed", label: "é\"\n", rate: -0, EUR: -7, USD: 0 },
      { USD: 1, EUR: 2, rate: 0.1, label: "", state: "open", extra: { nested: true } }
    ]
    for (const value of values) {
      const encoded = plain.encode(value)
      expect(encoded).toEqual(wrapped.encode(value))
      expect(Either.isRight(encoded)).toBe(true)
    }
    expect(plain.encode(values[1])).toEqual(Either.right(`{"USD":0,"EUR":-7,"rate":0,"label":"é\\"\\n","state":"closed"}`))
  })

  it("refuses what Schema refuses, and what is not plain JSON, saying which field", () => {
    const refused: ReadonlyArray<readonly [unknown, RegExp]> = [
      [{ USD: 1.5, EUR: 0, rate: 1, label: "", state: "open" }, /USD/],
      [{ USD: 1, EUR: "2", rate: 1, label: "", state: "open" }, /EUR/],
      [{ USD: 1, EUR: 2, rate: 1, label: "", state: "half" }, /state/],
      [{ USD: 1, EUR: 2, rate: 1, label: "" }, /state/],
      [{ USD: 1, EUR: 2, rate: Number.NaN, label: "", state: "open" }, /rate/],
      [null, /./]
    ]
    for (const [value, says] of refused) {
      const encoded = plain.encode(value)
      expect(Either.isLeft(encoded), JSON.stringify(value)).toBe(true)
      expect(Either.getLeft(encoded).pipe((o) => o._tag === "Some" ? o.value : "")).toMatch(says)
      expect(Either.isLeft(wrapped.encode(value))).toBe(true)
    }
  })

  it("takes arrays of plain values (a keyed entry's list) the same way, and refuses what Schema refuses in them", () => {
    const Entry = Schema.Struct({ out: Schema.Int, loans: Schema.Array(Schema.String), grid: Schema.Array(Schema.Array(Schema.Int)).pipe(Schema.maxItems(2)) })
    const entry = viewOf(Entry, { out: 0, loans: [], grid: [] })
    const reference = viewOf(Entry.pipe(Schema.filter(() => true)), { out: 0, loans: [], grid: [] })
    for (const value of [
      { out: 2, loans: ["7", "9"], grid: [[1, 2], []] },
      { grid: [], loans: [], out: 0 },
      { out: 1, loans: Object.assign(["3"], { note: "not an element" }), grid: [[0]] }
    ]) {
      expect(entry.encode(value)).toEqual(reference.encode(value))
      expect(Either.isRight(entry.encode(value))).toBe(true)
    }
    expect(entry.encode({ grid: [[1]], loans: ["a"], out: 1 })).toEqual(Either.right(`{"out":1,"loans":["a"],"grid":[[1]]}`))
    // A hole, an element of the wrong type, a nested one, a refinement on the array: refused, as Schema refuses them.
    for (const value of [
      { out: 1, loans: [, "a"], grid: [] },
      { out: 1, loans: ["a", 2], grid: [] },
      { out: 1, loans: [], grid: [[1.5]] },
      { out: 1, loans: [], grid: [[], [], []] },
      { out: 1, loans: "a", grid: [] }
    ]) {
      expect(Either.isLeft(entry.encode(value)), JSON.stringify(value)).toBe(true)
      expect(Either.isLeft(reference.encode(value))).toBe(true)
    }
  })

  it("answers odd values evolve may return as Schema's path does: an instance, an array subclass, an array with a toJSON, a proxy", () => {
    const Entry = Schema.Struct({ out: Schema.Int, loans: Schema.Array(Schema.String) })
    const entry = viewOf(Entry, { out: 0, loans: [] })
    const reference = viewOf(Entry.pipe(Schema.filter(() => true)), { out: 0, loans: [] })
    class Loans extends Array<string> {}
    class Value { out = 1; loans = ["a"] }
    const withToJson = Object.assign(["a"], { toJSON: () => "replaced" })
    const throwing = new Proxy({ out: 1, loans: ["a"] }, { ownKeys: () => { throw new Error("no keys") } })
    for (const value of [new Value(), { out: 1, loans: Loans.from(["a"]) }, { out: 1, loans: withToJson }, throwing]) {
      expect(entry.encode(value)).toEqual(reference.encode(value))
    }
    // The array's own toJSON is never called: what is written is its elements.
    expect(entry.encode({ out: 1, loans: withToJson })).toEqual(Either.right(`{"out":1,"loans":["a"]}`))
  })

  it("refuses a value whose reading throws, instead of throwing", () => {
    const value = { USD: 1, EUR: 2, rate: 1, label: "", state: "open" }
    Object.defineProperty(value, "label", { enumerable: true, get: () => { throw new Error("no label") } })
    const encoded = plain.encode(value)
    expect(Either.isLeft(encoded)).toBe(true)
    expect(Either.getLeft(encoded).pipe((o) => o._tag === "Some" ? o.value : "")).toMatch(/no label/)
  })
})
