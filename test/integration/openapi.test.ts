/**
 * `GET /api/_openapi.json`: the REST API as OpenAPI 3.1, from the catalog. It validates against the OpenAPI 3.1
 * schema (a well-kept validator, not our own reading of the spec), names every route the server serves for the
 * app, and nothing it does not: each operation it lists is routed (a real request is not 404 "no route" or 405).
 * With an access file, a principal sees the routes it may use, under the bearer scheme.
 */
import { Validator } from "@seriousme/openapi-schema-validator"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { http, startServer } from "../../testkit/server.ts"
import { rest, startWithAccess, tokenOf } from "../../testkit/access-server.ts"
import blog from "../../examples/blog/app.ts"

type Doc = {
  readonly openapi: string
  readonly paths: Record<string, Record<string, { readonly operationId?: string; readonly responses?: Record<string, unknown>; readonly parameters?: ReadonlyArray<{ readonly name?: string; readonly $ref?: string }> }>>
  readonly components: { readonly schemas: Record<string, any>; readonly securitySchemes?: Record<string, unknown> }
  readonly security?: ReadonlyArray<unknown>
}

const HTTP_METHODS = ["get", "post", "patch", "delete", "put"]

/** Every `METHOD path` the document lists. */
const operations = (doc: Doc) =>
  Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).filter((k) => HTTP_METHODS.includes(k)).map((m) => `${m.toUpperCase()} ${path}`)).sort()

const validate = async (doc: unknown) => {
  const result = await new Validator().validate(doc as never)
  return { valid: result.valid, errors: JSON.stringify(result.errors ?? []).slice(0, 2000) }
}

describe("the OpenAPI document of an open server (blog)", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  let doc: Doc
  beforeAll(async () => {
    server = await startServer(blog)
    const res = await http(`${server.url}/api/_openapi.json`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("application/json")
    doc = res.json
  }, 60_000)
  afterAll(() => server?.close())

  it("is valid OpenAPI 3.1", async () => {
    expect(doc.openapi).toBe("3.1.0")
    expect(await validate(doc)).toEqual({ valid: true, errors: "[]" })
  })

  it("names every route of the app, and no credential scheme on an open server", () => {
    expect(operations(doc)).toEqual([
      "DELETE /api/articles/{id}",
      "GET /api/_events",
      "GET /api/_views",
      "GET /api/_views/articles_by_status",
      "GET /api/articles",
      "GET /api/articles/{id}",
      "GET /api/articles/{id}/history",
      "GET /healthz",
      "GET /livez",
      "GET /readyz",
      "PATCH /api/articles/{id}",
      "POST /api/articles"
    ])
    expect(doc.components.securitySchemes).toBeUndefined()
    expect(doc.security).toBeUndefined()
  })

  it("describes bodies, list parameters, headers and refusals from the catalog", () => {
    const list = doc.paths["/api/articles"].get
    // Each filterable field: equality, the four range operators, in (no null: every field of an article is required).
    const filters = (field: string) => [field, `${field}[gt]`, `${field}[gte]`, `${field}[lt]`, `${field}[lte]`, `${field}[in]`]
    expect(list.parameters!.map((p) => p.name ?? p.$ref)).toEqual(["limit", "#/components/parameters/Cursor", "order", ...filters("title"), ...filters("body"), ...filters("status")])
    const create = doc.paths["/api/articles"].post as any
    expect(create.requestBody.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/articles.create" })
    expect(doc.components.schemas["articles.create"].required).toEqual(["title", "body", "status", "tags", "author"])
    expect(doc.components.schemas["articles.create"].properties.status).toEqual({ type: "string", enum: ["draft", "published"] })
    expect(create.parameters).toEqual([{ $ref: "#/components/parameters/IdempotencyKey" }])
    expect(Object.keys(create.responses).sort()).toEqual(["201", "400", "413", "415", "422", "503"])
    expect(create.responses["201"].headers).toMatchObject({ ETag: {}, Location: {} })
    const patch = doc.paths["/api/articles/{id}"].patch as any
    expect(patch.parameters).toEqual([{ $ref: "#/components/parameters/IfMatch" }, { $ref: "#/components/parameters/IdempotencyKey" }])
    expect(Object.keys(patch.responses).sort()).toEqual(["200", "400", "404", "409", "412", "413", "415", "422", "503"])
    expect(doc.components.schemas["articles.update"].required).toBeUndefined()
    expect(doc.components.schemas["_views.articles_by_status"].properties.value).toMatchObject({ type: "object" })
  })

  it("lists only routes the server serves: each is routed", async () => {
    const created = await http(`${server.url}/api/articles`, {
      method: "POST",
      body: { title: "T", body: "b", status: "draft", tags: [], author: { name: "Ann" } }
    })
    expect(created.status).toBe(201)
    for (const op of operations(doc)) {
      const [method, template] = op.split(" ")
      const item = doc.paths[template][method.toLowerCase()] as any
      if (item.responses["200"]?.content?.["text/event-stream"] !== undefined) continue // a stream never ends
      const res = await http(`${server.url}${template.replace("{id}", created.json.id)}`, {
        method,
        ...(method === "POST" || method === "PATCH" ? { body: {} } : {})
      })
      expect([op, res.status, res.json?.message]).not.toEqual([op, 404, `no route for ${method} ${template.replace("{id}", created.json.id)}`])
      expect([op, res.status]).not.toEqual([op, 405])
      expect(Object.keys(item.responses)).toContain(String(res.status))
    }
  }, 60_000)

  it("takes GET only", async () => {
    const res = await http(`${server.url}/api/_openapi.json`, { method: "POST", body: {} })
    expect(res.status).toBe(405)
  })
})

describe("the OpenAPI document with an access file (library)", () => {
  let server: Awaited<ReturnType<typeof startWithAccess>>
  beforeAll(async () => {
    server = await startWithAccess([
      { name: "ops", grants: ["admin"] },
      { name: "shelf", grants: ["books:read"] },
      { name: "desk", grants: ["books:read", "members:read", "loans:read", "command:lend"] }
    ])
  }, 60_000)
  afterAll(() => server?.close())

  const docOf = async (name: string) => {
    const res = await rest(server.url, "GET", "/api/_openapi.json", tokenOf(name))
    expect(res.status).toBe(200)
    return res.json as Doc
  }

  it("needs a credential", async () => {
    expect((await rest(server.url, "GET", "/api/_openapi.json", undefined)).status).toBe(401)
  })

  it("shows the admin every exposed route, under the bearer scheme, with 401/403/429", async () => {
    const doc = await docOf("ops")
    expect(await validate(doc)).toEqual({ valid: true, errors: "[]" })
    expect(doc.components.securitySchemes).toEqual({ bearer: expect.objectContaining({ type: "http", scheme: "bearer" }) })
    expect(doc.security).toEqual([{ bearer: [] }])
    const ops = operations(doc)
    // The types' exposure lists: books and members are never deleted over REST; loans are read-only (commands write them).
    expect(ops.filter((o) => o.includes("/api/books") || o.includes("/api/loans") || o.includes("_commands"))).toEqual([
      "GET /api/books",
      "GET /api/books/{id}",
      "GET /api/books/{id}/history",
      "GET /api/loans",
      "GET /api/loans/{id}",
      "GET /api/loans/{id}/history",
      "PATCH /api/books/{id}",
      "POST /api/_commands/lend",
      "POST /api/_commands/return",
      "POST /api/books",
      "POST /api/books/{id}/add_copies"
    ])
    const lend = doc.paths["/api/_commands/lend"].post as any
    expect(Object.keys(lend.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "403", "404", "409", "422", "429", "503"]))
    expect(doc.components.schemas["_commands.lend"].required).toEqual(["book", "member"])
    // A guarded field is set by methods only: not in the create or update bodies.
    expect(Object.keys(doc.components.schemas["books.create"].properties)).toEqual(["title", "author"])
    expect(doc.paths["/healthz"].get).toMatchObject({ security: [] })
  })

  it("shows a principal only what it may use", async () => {
    const shelf = await docOf("shelf")
    expect(await validate(shelf)).toEqual({ valid: true, errors: "[]" })
    expect(operations(shelf).filter((o) => o.includes("/api/"))).toEqual([
      "GET /api/_events",
      "GET /api/books",
      "GET /api/books/{id}",
      "GET /api/books/{id}/history"
    ])
    expect(Object.keys(shelf.components.schemas).filter((s) => s.startsWith("members") || s.startsWith("_commands"))).toEqual([])
    const desk = operations(await docOf("desk"))
    expect(desk).toContain("POST /api/_commands/lend")
    expect(desk).not.toContain("POST /api/_commands/return")
    expect(desk).not.toContain("POST /api/books")
  })
})
