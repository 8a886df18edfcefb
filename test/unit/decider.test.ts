import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { compileApp } from "../../src/domain/compile.ts"
import { decide, evolve } from "../../src/domain/decider.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { apps } from "../../testkit/server.ts"

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

describe("evolve", () => {
  it("folds create, update and delete with a stable key order", () => {
    let state = evolve(undefined, event({ data: { name: "Pen", price: 2, currency: "USD" } }))
    expect(JSON.stringify(state)).toBe('{"id":"1","version":1,"name":"Pen","price":2,"currency":"USD"}')
    state = evolve(state, event({ seq: 2, version: 2, kind: "invoked", data: { price: 5 } }))
    expect(JSON.stringify(state)).toBe('{"id":"1","version":2,"name":"Pen","price":5,"currency":"USD"}')
    expect(evolve(state, event({ seq: 3, version: 3, kind: "deleted" }))).toBeUndefined()
  })
})
