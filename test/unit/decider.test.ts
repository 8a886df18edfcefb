import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { compileApp } from "../../src/domain/compile.ts"
import { decide, evolve } from "../../src/domain/decide/decider.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { apps } from "../../testkit/server.ts"
import { defineApp, entity, reject } from "../../src/domain/catalog.ts"
import { Schema } from "effect"

const pricing = Either.getOrThrow(compileApp(apps.pricing))
const products = pricing.types.get("products")!
const setPrice = products.methods.get("set_price")!
const row = { id: "1", version: 1, name: "Pen", price: 2, currency: "USD" }
const event = (over: Partial<StoredEvent>): StoredEvent => ({ seq: 1, at: 0, type: "products", id: "1", version: 1, kind: "created", data: {}, ...over })

describe("decide", () => {
  it("creates from the decoded fields", () => {
    const d = decide(products, "1", undefined, { _tag: "Create", fields: { name: "Pen", price: 2, currency: "USD" } }, undefined)
    expect(Either.getOrThrow(d)).toEqual({ kind: "created", data: { name: "Pen", price: 2, currency: "USD" } })
  })

  it("refuses commands on a missing row", () => {
    const d = decide(products, "7", undefined, { _tag: "Delete" }, undefined)
    expect(Either.isLeft(d) && d.left._tag).toBe("NotFound")
  })

  it("refuses a stale expected version", () => {
    const d = decide(products, "1", row, { _tag: "Update", patch: { price: 3 } }, 5)
    expect(Either.isLeft(d) && d.left).toMatchObject({ _tag: "VersionConflict", expected: 5, actual: 1 })
  })

  it("runs a method's apply against the typed row", () => {
    const ok = decide(products, "1", row, { _tag: "Invoke", method: setPrice, params: { price: 9 } }, undefined)
    expect(Either.getOrThrow(ok)).toMatchObject({ kind: "invoked", method: "set_price", data: { price: 9 } })
    const refused = decide(products, "1", row, { _tag: "Invoke", method: setPrice, params: { price: -1 } }, undefined)
    expect(Either.isLeft(refused) && refused.left.message).toContain("price must be a positive number")
  })

  it("refuses an empty update", () => {
    const d = decide(products, "1", row, { _tag: "Update", patch: {} }, undefined)
    expect(Either.isLeft(d) && d.left._tag).toBe("ValidationFailed")
  })
})

describe("invariants", () => {
  // One check per way it can answer: the row after the method is what each sees.
  const seen: Array<unknown> = []
  const app = Either.getOrThrow(compileApp(defineApp({
    name: "shop",
    entities: {
      items: entity({
        fields: { n: Schema.Number, tag: Schema.String },
        methods: { set: { params: { n: Schema.Number }, apply: (_row, { n }) => (n === 13 ? reject("unlucky", "no 13") : { n }) } },
        invariants: {
          capped: { check: (i) => (seen.push(i), i.n <= 100), message: "at most 100" },
          no_throw: { check: (i) => { if (i.n === 50) throw new Error("boom"); return true }, message: "-" },
          boolean: { check: (i) => (i.n === 60 ? (1 as unknown as boolean) : true), message: "-" },
          sync: { check: (i) => (i.n === 70 ? (Promise.resolve(true) as unknown as boolean) : true), message: "-" }
        }
      })
    }
  })))
  const items = app.types.get("items")!
  const set = items.methods.get("set")!
  const current = { id: "1", version: 3, n: 1, tag: "a" }
  const invoke = (n: number) => decide(items, "1", current, { _tag: "Invoke", method: set, params: { n } }, undefined)

  it("checks the row after a method (the stored fields with its change, the next version); all hold: the draft", () => {
    seen.length = 0
    expect(Either.getOrThrow(invoke(7))).toEqual({ kind: "invoked", method: "set", params: { n: 7 }, data: { n: 7 } })
    expect(seen).toEqual([{ id: "1", version: 4, n: 7, tag: "a" }])
    expect(Either.getOrThrow(decide(items, "1", current, { _tag: "Update", patch: { tag: "b" } }, undefined))).toEqual({ kind: "updated", data: { tag: "b" } })
    expect(seen[1]).toEqual({ id: "1", version: 4, n: 1, tag: "b" })
  })

  it("a false check is Rejected with its code; a throw, a non-boolean or a Promise is the author's bug; a reject stays the method's", () => {
    const left = (d: ReturnType<typeof invoke>) => (Either.isLeft(d) ? d.left : undefined)
    expect(left(invoke(101))).toMatchObject({ _tag: "Rejected", code: "capped", reason: "at most 100", operation: "set", id: "1" })
    expect(left(invoke(50))).toMatchObject({ _tag: "UserCodeFailure", reason: "invariant no_throw threw: boom" })
    expect(left(invoke(60))).toMatchObject({ _tag: "UserCodeFailure", reason: "invariant boolean returned 1, not a boolean" })
    expect(left(invoke(70))).toMatchObject({ _tag: "UserCodeFailure", reason: "invariant sync threw: it returned a Promise; it must return its result synchronously" })
    expect(left(invoke(13))).toMatchObject({ _tag: "Rejected", code: "unlucky" })
    expect(left(decide(items, "2", undefined, { _tag: "Create", fields: { n: 500, tag: "x" } }, undefined))).toMatchObject({ _tag: "Rejected", code: "capped", operation: "create" })
  })
})

describe("evolve", () => {
  it("folds create, update and delete with a stable key order", () => {
    let state = evolve(undefined, event({ data: { name: "Pen", price: 2, currency: "USD" } }))
    expect(JSON.stringify(state)).toBe('{"id":"1","version":1,"name":"Pen","price":2,"currency":"USD"}')
    state = evolve(state, event({ seq: 2, version: 2, kind: "invoked", data: { price: 5 } }))
    expect(JSON.stringify(state)).toBe('{"id":"1","version":2,"name":"Pen","price":5,"currency":"USD"}')
    expect(evolve(state, event({ seq: 3, version: 3, kind: "deleted" }))).toBeUndefined()
  })
})
