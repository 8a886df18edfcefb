/**
 * The decode without Effect's parser (src/domain/fast-decode.ts) answers exactly as Schema's decode does for every
 * input it answers for, and leaves every input Schema refuses to Schema.
 */
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { fastDecoder } from "../../src/domain/fast-decode.ts"
import { patchCodecs, storableDecoder, strict } from "../../src/domain/codecs.ts"
import { inputIssues } from "../../src/domain/rules/input-rules.ts"

const Price = Schema.Number.pipe(Schema.positive())
const product = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1)),
  price: Price,
  currency: Schema.Literal("USD", "EUR"),
  active: Schema.Boolean,
  kind: Schema.Literal("item")
})

const inputs: ReadonlyArray<unknown> = [
  { name: "a", price: 1, currency: "USD", active: true, kind: "item" },
  // another key order: the answer keeps the declared order, as Schema's does
  { kind: "item", active: false, currency: "EUR", price: 2.5, name: "b" },
  { name: "", price: 1, currency: "USD", active: true, kind: "item" },
  { name: "a", price: 0, currency: "USD", active: true, kind: "item" },
  { name: "a", price: -1, currency: "GBP", active: true, kind: "item" },
  { name: "a", price: "1", currency: "USD", active: true, kind: "item" },
  { name: "a", price: 1, currency: "USD", active: 1, kind: "item" },
  { name: "a", price: 1, currency: "USD", active: true },
  { name: "a", price: 1, currency: "USD", active: true, kind: "item", extra: 1 },
  { name: "a", price: 1, currency: "USD", active: true, kind: "other" },
  JSON.parse('{"name":"a","price":1,"currency":"USD","active":true,"kind":"item","__proto__":{"x":1}}'),
  Object.assign(Object.create({ inherited: 1 }), { name: "a", price: 1, currency: "USD", active: true, kind: "item" }),
  [],
  null,
  "text",
  1
]

describe("fastDecoder", () => {
  const fast = fastDecoder(product.ast, strict)!
  const decode = Schema.decodeUnknownEither(product, strict)

  it("covers a struct of required strings, numbers, booleans, literals and their refinements", () => {
    expect(fast).toBeTypeOf("function")
  })

  it.each(inputs.map((input) => [JSON.stringify(input), input]))("answers as Schema does, or not at all: %s", (_, input) => {
    const schema = decode(input)
    const answer = fast(input)
    if (Either.isLeft(schema)) expect(answer).toBeUndefined()
    else {
      // Same fields, same order (the row's JSON depends on it).
      expect(answer).toBeDefined()
      expect(JSON.stringify(answer)).toBe(JSON.stringify(schema.right))
      expect(answer).not.toBe(input)
    }
  })

  it("takes the valid inputs itself", () => {
    expect(fast(inputs[0])).toEqual(inputs[0])
    expect(Object.keys(fast(inputs[1])!)).toEqual(["name", "price", "currency", "active", "kind"])
  })

  it("does not cover optional fields, transformations or records", () => {
    expect(fastDecoder(Schema.Struct({ a: Schema.optional(Schema.String) }).ast, strict)).toBeUndefined()
    expect(fastDecoder(Schema.Struct({ a: Schema.NumberFromString }).ast, strict)).toBeUndefined()
    expect(fastDecoder(Schema.Record({ key: Schema.String, value: Schema.Number }).ast, strict)).toBeUndefined()
    expect(fastDecoder(Schema.Struct({ a: Schema.Array(Schema.String) }).ast, strict)).toBeUndefined()
  })

  it("leaves refused input to Schema, which words the issues (storableDecoder)", () => {
    const decoder = storableDecoder(product)
    const refused = decoder({ name: "", price: 1, currency: "GBP", active: true, kind: "item" })
    expect(Either.isLeft(refused) && refused.left.map((i) => i.path.join("."))).toEqual(["name", "currency"])
    expect(decoder(inputs[1])).toEqual(Either.right({ name: "b", price: 2.5, currency: "EUR", active: false, kind: "item" }))
  })

  it("encodes a method's change field by field as Schema does (patchCodecs): refinements still refuse", () => {
    const { encodePatch } = patchCodecs(product.fields)
    expect(encodePatch({ price: 2, currency: "EUR" })).toEqual(Either.right({ price: 2, currency: "EUR" }))
    const refused = encodePatch({ price: -1, name: "" })
    expect(Either.isLeft(refused) && refused.left.map((i) => i.path.join("."))).toEqual(["price", "name"])
  })
})

describe("inputIssues", () => {
  it("answers no issue for clean input, and every issue otherwise", () => {
    expect(inputIssues({ a: [1, { b: "x" }], c: null })).toEqual([])
    const issues = inputIssues(JSON.parse('{"a":[1,{"b":1e400}],"__proto__":{},"c":{"constructor":1}}'))
    expect(issues.map((i) => i.path.join("."))).toEqual(["a.1.b", "__proto__", "c.constructor"])
  })
})
