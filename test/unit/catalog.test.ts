import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { defineApp, entity } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { apps } from "../../testkit/server.ts"

const problems = (app: Parameters<typeof compileApp>[0]) => {
  const compiled = compileApp(app)
  return Either.isLeft(compiled) ? compiled.left.problems : []
}

describe("app validation", () => {
  it("accepts both samples", () => {
    expect(problems(apps.blog)).toEqual([])
    expect(problems(apps.pricing)).toEqual([])
  })

  it("rejects unknown expose ops, naming the type", () => {
    const app = defineApp({ name: "x", entities: { things: entity({ fields: { a: Schema.String }, rest: ["list", "frobnicate" as never] }) } })
    expect(problems(app)).toEqual([expect.stringMatching(/type "things", rest expose list: unknown operation "frobnicate"/)])
  })

  it("rejects methods that clash with CRUD names", () => {
    const app = defineApp({
      name: "x",
      entities: { things: entity({ fields: { a: Schema.String }, methods: { delete: { params: {}, apply: () => ({}) } } }) }
    })
    expect(problems(app).join()).toMatch(/method "delete": clashes with the CRUD operation/)
  })

  it("rejects reserved field names", () => {
    const app = defineApp({
      name: "x",
      entities: { things: entity({ fields: { id: Schema.String, version: Schema.Number, constructor: Schema.String } }) }
    })
    expect(problems(app)).toEqual([
      expect.stringMatching(/field "id": the name is reserved/),
      expect.stringMatching(/field "version": the name is reserved/),
      expect.stringMatching(/field "constructor": the name is reserved/)
    ])
  })

  it("rejects field types without a JSON Schema mapping, naming the field", () => {
    const app = defineApp({ name: "x", entities: { things: entity({ fields: { when: Schema.DateFromSelf, n: Schema.Number } }) } })
    expect(problems(app)).toEqual([expect.stringMatching(/type "things", field "when" has a type that cannot be mapped to JSON Schema/)])
  })

  it("derives JSON Schema: enums, nested objects, optional fields not required", () => {
    const blog = Either.getOrThrow(compileApp(apps.blog)).types.get("articles")!
    const schema = blog.fieldsJsonSchema as any
    expect(schema.properties.status).toEqual({ type: "string", enum: ["draft", "published"] })
    expect(schema.properties.author.type).toBe("object")
    expect(schema.properties.author.required).toEqual(["name"])
    expect(schema.required).toEqual(["title", "body", "status", "tags", "author"])
  })

  it("lets mcp exposure default to rest", () => {
    const pricing = Either.getOrThrow(compileApp(apps.pricing)).types.get("products")!
    expect([...pricing.rest].sort()).toEqual(["create", "get", "list", "set_price"])
    expect([...pricing.mcp].sort()).toEqual(["get", "list", "set_price"])
    const blog = Either.getOrThrow(compileApp(apps.blog)).types.get("articles")!
    expect([...blog.mcp].sort()).toEqual(["create", "delete", "get", "list", "update"])
  })
})
