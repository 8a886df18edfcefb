/**
 * The REST row writes have two ways through the server: the direct route (no fiber per request: edge.ts,
 * DirectRoute) and the generic Effect routes (recorded servers, `wo dev`).
 * Both must answer the same: each request here is sent both ways, on the real runtime, and the status, headers
 * and body compared, for successes, validation errors, refusals, conflicts, missing rows and a failing store.
 * A row's GET takes the direct route too (answered at once from the row cache), and so do app commands.
 */
import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Catalog } from "../../src/domain/app-catalog.ts"
import { StoreFailed } from "../../src/domain/errors.ts"
import { Commands } from "../../src/commands/commands.ts"
import { WoConfig } from "../../src/support/config.ts"
import { Queries } from "../../src/projections/queries.ts"
import { makeRestRoutes } from "../../src/http/rest/rest.ts"
import type { EdgeRequest, EdgeResponse } from "../../src/http/edge/edge-types.ts"
import { LogFaults } from "../../testkit/log-faults.ts"
import { apps, rawRequest, startServer } from "../../testkit/server.ts"
import { library } from "../../testkit/library-app.ts"

type Server = Awaited<ReturnType<typeof startServer>>

const request = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): EdgeRequest => ({
  method,
  path,
  query: new URLSearchParams(),
  search: "",
  headers: { host: "127.0.0.1", ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
  body: Buffer.from(body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body)),
  remoteAddress: "127.0.0.1"
})

/** The server's REST routes, built over its own services (the same ones its edge serves). */
const routesOf = (server: Server) =>
  server.runtime.runPromise(Effect.gen(function* () {
    const settings = yield* WoConfig
    return makeRestRoutes(yield* Catalog, yield* Commands, yield* Queries, settings.maxJsonDepth)
  }))

type Routes = Awaited<ReturnType<typeof routesOf>>

const generic = (server: Server, routes: Routes, req: EdgeRequest) => server.runtime.runPromise(routes(req))

const direct = (routes: Routes, req: EdgeRequest) =>
  new Promise<EdgeResponse>((resolve, reject) => {
    const taken = routes.direct(req, { answer: resolve, failed: (cause) => reject(new Error(`failed: ${String(cause)}`)) })
    if (taken === undefined) reject(new Error(`the direct route did not take ${req.method} ${req.path}`))
  })

/** Status, headers and body; `ids` names row ids that differ between the two ways only because each wrote its own row. */
const shape = (response: EdgeResponse, ids: Record<string, string> = {}) => {
  if (response._tag !== "Buffered") throw new Error(`expected a buffered answer, got ${response._tag}`)
  let text = JSON.stringify({ status: response.status, headers: response.headers, body: JSON.parse(response.body ?? "null") })
  for (const [from, to] of Object.entries(ids)) text = text.replaceAll(from, to)
  return JSON.parse(text)
}

describe("REST writes: the direct route answers as the generic routes do", () => {
  let pricing: Server
  let blog: Server
  let pricingRoutes: Routes
  let blogRoutes: Routes
  let lending: Server
  let lendingRoutes: Routes
  let failWrites = false
  beforeAll(async () => {
    const faults = Layer.succeed(LogFaults, {
      beforeWrite: () => (failWrites ? Effect.fail(new StoreFailed({ reason: "the disk is gone (test)" })) : Effect.void)
    })
    pricing = await startServer(apps.pricing, {}, faults)
    blog = await startServer(apps.blog)
    pricingRoutes = await routesOf(pricing)
    blogRoutes = await routesOf(blog)
    lending = await startServer(library)
    lendingRoutes = await routesOf(lending)
  })
  afterAll(async () => {
    await pricing?.close()
    await blog?.close()
    await lending?.close()
  })

  /** The same request both ways, on rows that start alike; the answers with the ids made equal. */
  const bothWays = async (server: Server, routes: Routes, make: (id: string) => EdgeRequest, ids: [string, string]) => {
    const viaGeneric = await generic(server, routes, make(ids[0]))
    const viaDirect = await direct(routes, make(ids[1]))
    const same = (id: string) => ({ [`/${id}"`]: '/ID"', [`"id":"${id}"`]: '"id":"ID"', [`s ${id} is at`]: "s ID is at" })
    return { generic: shape(viaGeneric, same(ids[0])), direct: shape(viaDirect, same(ids[1])) }
  }
  const product = { name: "lamp", price: 12, currency: "EUR" }
  const createProduct = async () => {
    const answer = shape(await direct(pricingRoutes, request("POST", "/api/products", product)))
    expect(answer.status).toBe(201)
    return answer.body.id as string
  }

  it("a create: 201 with the row, its ETag and Location (each way its own id)", async () => {
    const viaGeneric = shape(await generic(pricing, pricingRoutes, request("POST", "/api/products", product)))
    const id = viaGeneric.body.id
    const viaDirect = shape(await direct(pricingRoutes, request("POST", "/api/products", product)), { [`/${Number(id) + 1}"`]: `/${id}"`, [`"id":"${Number(id) + 1}"`]: `"id":"${id}"` })
    expect(viaGeneric.status).toBe(201)
    expect(viaDirect).toEqual(viaGeneric)
  })

  it("a method call (set_price): 200 with the row; a refusal 422; a stale If-Match 412; a missing row 404", async () => {
    const ids: [string, string] = [await createProduct(), await createProduct()]
    const ok = await bothWays(pricing, pricingRoutes, (id) => request("POST", `/api/products/${id}/set_price`, { price: 30 }), ids)
    expect(ok.generic.status).toBe(200)
    expect(ok.generic.body).toMatchObject({ version: 2, price: 30 })
    expect(ok.direct).toEqual(ok.generic)
    const refused = await bothWays(pricing, pricingRoutes, (id) => request("POST", `/api/products/${id}/set_price`, { price: 0 }), ids)
    expect(refused.generic).toMatchObject({ status: 422 })
    expect(refused.generic.body).toMatchObject({ error: "Rejected", code: "not_positive" })
    expect(refused.direct).toEqual(refused.generic)
    const stale = await bothWays(pricing, pricingRoutes, (id) => request("POST", `/api/products/${id}/set_price`, { price: 5 }, { "if-match": '"1"' }), ids)
    expect(stale.generic).toMatchObject({ status: 412 })
    expect(stale.direct).toEqual(stale.generic)
    const missing = await bothWays(pricing, pricingRoutes, (id) => request("POST", `/api/products/${id}/set_price`, { price: 5 }), ["999999", "999999"])
    expect(missing.generic).toMatchObject({ status: 404 })
    expect(missing.direct).toEqual(missing.generic)
  })

  it("bad input: 400 for invalid fields, unknown keys, bad JSON, a bad If-Match; 415 for another content type", async () => {
    const cases = [
      request("POST", "/api/products", { name: "", price: -1, currency: "GBP", extra: 1 }),
      request("POST", "/api/products", "{ not json"),
      request("POST", "/api/products", "[1]"),
      request("POST", "/api/products", "name=x", { "content-type": "text/plain" }),
      request("POST", "/api/products/1/set_price", { price: "high" }),
      request("POST", "/api/products/1/set_price", { price: 3 }, { "if-match": "W/\"1\"" })
    ]
    const statuses = []
    for (const req of cases) {
      const viaGeneric = shape(await generic(pricing, pricingRoutes, req))
      expect(shape(await direct(pricingRoutes, req))).toEqual(viaGeneric)
      statuses.push(viaGeneric.status)
    }
    expect(statuses).toEqual([400, 400, 400, 415, 400, 400])
  })

  it("a failing store: 503 StoreUnavailable both ways, and the next write succeeds", async () => {
    const ids: [string, string] = [await createProduct(), await createProduct()]
    failWrites = true
    try {
      const failed = await bothWays(pricing, pricingRoutes, (id) => request("POST", `/api/products/${id}/set_price`, { price: 7 }), ids)
      expect(failed.generic).toMatchObject({ status: 503 })
      expect(failed.generic.body).toMatchObject({ error: "StoreUnavailable" })
      expect(failed.direct).toEqual(failed.generic)
      const create = request("POST", "/api/products", product)
      expect(shape(await direct(pricingRoutes, create))).toEqual(shape(await generic(pricing, pricingRoutes, create)))
    } finally {
      failWrites = false
    }
    const after = await bothWays(pricing, pricingRoutes, (id) => request("POST", `/api/products/${id}/set_price`, { price: 7 }), ids)
    expect(after.generic).toMatchObject({ status: 200 })
    expect(after.direct).toEqual(after.generic)
  })

  it("an update and a delete (with If-Match): 200 with the row, then the deletion; a conflict 412", async () => {
    const article = { title: "Hello", body: "First post", status: "draft", tags: ["intro"], author: { name: "Ann" } }
    const created = await Promise.all([0, 1].map(() => direct(blogRoutes, request("POST", "/api/articles", article))))
    const ids = created.map((c) => shape(c).body.id) as [string, string]
    const patched = await bothWays(blog, blogRoutes, (id) => request("PATCH", `/api/articles/${id}`, { status: "published" }, { "if-match": '"1"' }), ids)
    expect(patched.generic).toMatchObject({ status: 200 })
    expect(patched.direct).toEqual(patched.generic)
    const conflict = await bothWays(blog, blogRoutes, (id) => request("PATCH", `/api/articles/${id}`, { title: "x" }, { "if-match": '"1"' }), ids)
    expect(conflict.generic).toMatchObject({ status: 412 })
    expect(conflict.direct).toEqual(conflict.generic)
    const deleted = await bothWays(blog, blogRoutes, (id) => request("DELETE", `/api/articles/${id}`, undefined, { "if-match": '"2"' }), ids)
    expect(deleted.generic.body).toMatchObject({ version: 3, deleted: true })
    expect(deleted.direct).toEqual(deleted.generic)
  })

  it("an app command (lend): 200 with every change; a refusal 422; bad params 400; each way its own rows", async () => {
    const make = async (copies: number) => {
      const book = shape(await direct(lendingRoutes, request("POST", "/api/books", { title: `b${copies}` }))).body.id as string
      if (copies > 0) await direct(lendingRoutes, request("POST", `/api/books/${book}/add_copies`, { n: copies }))
      return book
    }
    const member = shape(await direct(lendingRoutes, request("POST", "/api/members", { name: "Ann" }))).body.id as string
    const lend = (book: string) => request("POST", "/api/_commands/lend", { book, member })
    // The two ways lend two books alike; the loans' ids and the correlations differ only because each made its own.
    const books = [await make(1), await make(1)]
    const viaGeneric = shape(await generic(lending, lendingRoutes, lend(books[0])))
    const viaDirect = shape(await direct(lendingRoutes, lend(books[1])))
    expect(viaGeneric.status).toBe(200)
    expect(viaGeneric.body.changes.map((c: { type: string; kind: string }) => `${c.type} ${c.kind}`)).toEqual(["books invoked", "loans created"])
    const same = (a: typeof viaGeneric) => ({ ...a, body: { ...a.body, correlation: "C", changes: a.body.changes.map((c: { row: object }) => ({ ...c, id: "ID", row: { ...c.row, id: "ID", book: "B" } })) } })
    expect(same(viaDirect)).toEqual(same(viaGeneric))
    expect(viaDirect.headers).toEqual(viaGeneric.headers)
    // No copy left: refused both ways alike, nothing written.
    const refused = await bothWays(lending, lendingRoutes, (book) => lend(book), [books[0], books[1]])
    expect(refused.generic).toMatchObject({ status: 422, body: { error: "Rejected", code: "no_copies" } })
    expect(refused.direct).toEqual(refused.generic)
    for (const bad of [request("POST", "/api/_commands/lend", { book: 1, member, extra: true }), request("POST", "/api/_commands/lend", "{ not json")]) {
      const answer = shape(await generic(lending, lendingRoutes, bad))
      expect(answer.status).toBe(400)
      expect(shape(await direct(lendingRoutes, bad))).toEqual(answer)
    }
  })

  it("a row's GET: the row as its write answered it, byte for byte, with its ETag; the new row after a change; 404", async () => {
    const id = await createProduct()
    const written = await direct(pricingRoutes, request("POST", `/api/products/${id}/set_price`, { price: 31 }))
    for (let i = 0; i < 2; i++) { // the second read is answered from what the first made
      const viaDirect = await direct(pricingRoutes, request("GET", `/api/products/${id}`))
      const viaGeneric = await generic(pricing, pricingRoutes, request("GET", `/api/products/${id}`))
      for (const answer of [viaDirect, viaGeneric]) {
        if (answer._tag !== "Buffered" || written._tag !== "Buffered") throw new Error("expected buffered answers")
        expect(answer.status).toBe(200)
        expect(answer.body).toBe(written.body)
        expect(answer.headers).toEqual({ "content-type": "application/json", etag: '"2"', "content-length": String(Buffer.byteLength(written.body!)) })
      }
    }
    await direct(pricingRoutes, request("POST", `/api/products/${id}/set_price`, { price: 32 }))
    const changed = shape(await direct(pricingRoutes, request("GET", `/api/products/${id}`)))
    expect(changed).toMatchObject({ status: 200, headers: { etag: '"3"' }, body: { version: 3, price: 32 } })
    const missing = await bothWays(pricing, pricingRoutes, (id) => request("GET", `/api/products/${id}`), ["999999", "999999"])
    expect(missing.generic).toMatchObject({ status: 404, body: { error: "NotFound" } })
    expect(missing.direct).toEqual(missing.generic)
  })

  it("a row's GET over HTTP keeps the Host and Origin checks", async () => {
    const id = await createProduct()
    expect((await rawRequest(`${pricing.url}/api/products/${id}`)).status).toBe(200)
    for (const refused of [{ host: "evil.example" }, { origin: "http://evil.example" }] as Array<Record<string, string>>) {
      const res = await rawRequest(`${pricing.url}/api/products/${id}`, { headers: refused })
      expect(res.status, JSON.stringify(refused)).toBe(403)
      expect(res.json).toMatchObject({ error: "Forbidden" })
    }
  })

  it("routes /api/<type>[/<id>[/<method>]] alone: an empty or a fourth segment is 404 both ways; escaped segments are decoded", async () => {
    const id = await createProduct()
    for (const path of ["/api/", "/api/products/", "/api//1", `/api/products//set_price`, `/api/products/${id}/`, `/api/products/${id}/set_price/`, `/api/products/${id}/set_price/x`]) {
      expect(pricingRoutes.direct(request("POST", path, { price: 3 }), { answer: () => {}, failed: () => {} }), path).toBeUndefined()
      const answer = shape(await generic(pricing, pricingRoutes, request("POST", path, { price: 3 })))
      expect(answer, path).toMatchObject({ status: 404, body: { error: "NotFound", message: `no route for POST ${path}` } })
    }
    const escaped = await bothWays(pricing, pricingRoutes, (i) => request("POST", `/api/%70roducts/${i}/set%5Fprice`, { price: 7 }), [id, id])
    expect(escaped.generic).toMatchObject({ status: 200, body: { id: "ID", version: 2, price: 7 } })
    expect(escaped.direct).toMatchObject({ status: 200, body: { id: "ID", version: 3, price: 7 } })
  })

  it("leaves to the generic routes what is not a row write (keyed or not) or a row's GET", () => {
    const taken = (req: EdgeRequest) => pricingRoutes.direct(req, { answer: () => {}, failed: () => {} }) !== undefined
    expect(taken(request("GET", "/api/products/1"))).toBe(true)
    expect(taken(request("GET", "/api/products"))).toBe(false)
    expect(taken(request("GET", "/api/products/1/set_price"))).toBe(false)
    expect(taken(request("GET", "/api/nothing/1"))).toBe(false)
    // A keyed write is taken too (test/unit/rest-keyed-direct.test.ts: it answers as the generic route does).
    expect(taken(request("POST", "/api/products", product, { "idempotency-key": "k-1" }))).toBe(true)
    expect(taken(request("POST", "/api/products/1/nothing", {}))).toBe(false)
    expect(taken(request("PATCH", "/api/products/1", {}))).toBe(false) // pricing exposes no update
    expect(taken(request("POST", "/api/nothing", {}))).toBe(false)
    expect(taken(request("POST", "/api/products", "{ not json"))).toBe(true) // answered 400 at once
    const lendingTaken = (req: EdgeRequest) => lendingRoutes.direct(req, { answer: () => {}, failed: () => {} }) !== undefined
    expect(lendingTaken(request("POST", "/api/_commands/lend", "{ not json"))).toBe(true) // answered 400 at once
    expect(lendingTaken(request("POST", "/api/_commands/lend", {}, { "idempotency-key": "k-2" }))).toBe(true)
    expect(lendingTaken(request("GET", "/api/_commands/lend"))).toBe(false) // 405 the generic way
    expect(lendingTaken(request("POST", "/api/_commands/nothing", {}))).toBe(false) // 404 the generic way
  })
})
