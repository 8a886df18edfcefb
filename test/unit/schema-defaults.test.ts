/**
 * Field defaults and the real type of every field kind, where clients and people read them: the tools' and
 * resources' JSON Schemas (a real server, tools/list and resources/read) and the console's field labels.
 */
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { catalogView } from "../../src/console/catalog-view.ts"
import { defineApp, entity } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { schemaUri } from "../../src/domain/uri.ts"
import library from "../../examples/library/app.ts"
import { rpc } from "../../testkit/legacy-client.ts"
import { startServer } from "../../testkit/server.ts"

/** One field of each kind an app author writes, defaulted or not. */
const fields = {
  title: Schema.String.pipe(Schema.minLength(1)),
  shelf: Schema.optionalWith(Schema.String, { default: () => "new arrivals" }),
  renewals: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { default: () => 0 }),
  copies: Schema.Int.pipe(Schema.positive()),
  status: Schema.Literal("out", "returned").pipe(Schema.optionalWith({ default: () => "out" as const })),
  due: Schema.optionalWith(Schema.Date, { default: () => new Date("2027-01-01T00:00:00.000Z") }),
  tags: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  note: Schema.optional(Schema.String),
  // Computed at each create: never one value taken when the catalog compiled.
  stamped: Schema.optionalWith(Schema.Date, { default: () => new Date() }),
  token: Schema.optionalWith(Schema.String, { default: () => crypto.randomUUID() }),
  price: Schema.optional(Schema.Number.pipe(Schema.greaterThan(0)))
}
const loans = entity({ fields })
const app = defineApp({
  name: "defaults",
  entities: { loans },
  commands: { renew: { params: { times: Schema.optionalWith(Schema.Int.pipe(Schema.positive()), { default: () => 1 }) }, decide: () => [] } }
})

describe("field defaults and types", () => {
  it("the console labels every field kind with its type, its bounds and its default", () => {
    const view = catalogView(Either.getOrThrow(compileApp(app)), "0.0.0", () => [])
    expect(view.types[0].fields).toEqual([
      { name: "title", required: true, summary: "string, min 1" },
      { name: "shelf", required: false, summary: 'string, default "new arrivals"' },
      { name: "renewals", required: false, summary: "integer ≥ 0, default 0" },
      { name: "copies", required: true, summary: "integer > 0" },
      { name: "status", required: false, summary: '"out" | "returned", default "out"' },
      { name: "due", required: false, summary: 'string, default "2027-01-01T00:00:00.000Z"' },
      { name: "tags", required: false, summary: "string[], default []" },
      { name: "note", required: false, summary: "string" },
      { name: "stamped", required: false, summary: "string, default computed at each create" },
      { name: "token", required: false, summary: "string, default computed at each create" },
      { name: "price", required: false, summary: "number > 0" }
    ])
    expect(view.commands[0].params).toEqual([{ name: "times", required: false, summary: "integer > 0, default 1" }])
    const library_ = catalogView(Either.getOrThrow(compileApp(library)), "0.0.0", () => [])
    const summaries = library_.types.flatMap((t) => t.fields.map((f) => f.summary))
    expect(summaries.filter((s) => s.startsWith("any"))).toEqual([])
    expect(library_.types.find((t) => t.name === "books")!.fields.find((f) => f.name === "copies")!.summary).toBe("integer, default 0")
  })

  it("leaves out a default that throws (user code): the catalog still compiles", () => {
    const flaky = { name: Schema.optionalWith(Schema.String, { default: (): string => { throw new Error("no default today") } }) }
    const compiled = compileApp(defineApp({ name: "flaky", entities: { notes: entity({ fields: flaky }) } }))
    expect(Either.isRight(compiled)).toBe(true)
    const view = catalogView(Either.getOrThrow(compiled), "0.0.0", () => [])
    expect(view.types[0].fields).toEqual([{ name: "name", required: false, summary: "string" }])
  })

  it("tools/list and the schema resource carry each default, in its wire form", async () => {
    const server = await startServer(app)
    try {
      const tools: Array<{ name: string; inputSchema: any; outputSchema: any }> = (await rpc(server.url, "tools/list")).json.result.tools
      const create = tools.find((t) => t.name === "loans_create")!.inputSchema
      expect(create.properties.shelf).toEqual({ type: "string", default: "new arrivals" })
      expect(create.properties.renewals).toMatchObject({ type: "integer", minimum: 0, default: 0 })
      expect(create.properties.status).toEqual({ type: "string", enum: ["out", "returned"], default: "out" })
      expect(create.properties.due).toMatchObject({ type: "string", default: "2027-01-01T00:00:00.000Z" })
      expect(create.properties.tags).toMatchObject({ type: "array", default: [] })
      expect(create.properties.note).not.toHaveProperty("default")
      for (const computed of ["stamped", "token"]) {
        expect(create.properties[computed], computed).not.toHaveProperty("default")
        expect(create.properties[computed].description, computed).toMatch(/computed at each create .*not a constant/)
      }
      expect(create.properties.copies).toMatchObject({ type: "integer", exclusiveMinimum: 0 })
      expect(create.required).toEqual(["title", "copies"])
      expect(tools.find((t) => t.name === "loans_get")!.outputSchema.properties.shelf.default).toBe("new arrivals")
      // A default applies on create only: an update or a filter that filled it in would change what was asked.
      expect(tools.find((t) => t.name === "loans_update")!.inputSchema.properties.shelf).toEqual({ type: "string" })
      expect(tools.find((t) => t.name === "loans_list")!.inputSchema.properties.where.properties.status).not.toHaveProperty("default")
      expect(tools.find((t) => t.name === "renew")!.inputSchema.properties.times).toMatchObject({ type: "integer", default: 1 })
      const read = await rpc(server.url, "resources/read", { uri: schemaUri("loans") })
      const schema = JSON.parse(read.json.result.contents[0].text).jsonSchema
      expect(schema.properties.renewals).toMatchObject({ type: "integer", minimum: 0, default: 0 })
      // A JSON Schema validator's view: the wrapper JSONSchema.make puts around a refined optional field is gone.
      expect(JSON.stringify(tools)).not.toContain("allOf")
    } finally {
      await server.close()
    }
  })
})
