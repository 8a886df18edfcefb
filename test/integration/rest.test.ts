import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { apps, http, rawRequest, startServer } from "../../testkit/server.ts"

const article = { title: "Hello", body: "First post", status: "draft", tags: ["intro"], author: { name: "Ann" } }

describe("REST over a real server", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  let pricing: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    server = await startServer(apps.blog)
    pricing = await startServer(apps.pricing)
  })
  afterAll(async () => {
    await server.close()
    await pricing.close()
  })

  it("creates, reads, updates and deletes a row", async () => {
    const created = await http(`${server.url}/api/articles`, { method: "POST", body: article })
    expect(created.status).toBe(201)
    expect(created.json).toEqual({ id: expect.any(String), version: 1, ...article })
    expect(created.headers.get("location")).toBe(`/api/articles/${created.json.id}`)
    const id = created.json.id
    const got = await http(`${server.url}/api/articles/${id}`)
    expect(got.text).toBe(created.text)
    const patched = await http(`${server.url}/api/articles/${id}`, { method: "PATCH", body: { status: "published" } })
    expect(patched.json).toMatchObject({ id, version: 2, status: "published", title: "Hello" })
    const deleted = await http(`${server.url}/api/articles/${id}`, { method: "DELETE" })
    expect(deleted.json).toEqual({ id, version: 3, deleted: true })
    expect((await http(`${server.url}/api/articles/${id}`)).status).toBe(404)
  })

  it("answers validation errors with 400 naming each field", async () => {
    const res = await http(`${server.url}/api/articles`, { method: "POST", body: { ...article, status: "gone", tags: "x", extra: 1 } })
    expect(res.status).toBe(400)
    expect(res.json.error).toBe("ValidationFailed")
    const paths = res.json.issues.map((i: any) => i.path.join("."))
    expect(paths).toEqual(expect.arrayContaining(["status", "tags", "extra"]))
  })

  it("answers an unknown id with 404", async () => {
    const res = await http(`${server.url}/api/articles/999999`)
    expect(res.status).toBe(404)
    expect(res.json).toEqual({ error: "NotFound", message: "articles 999999 not found" })
  })

  it("answers a stale If-Match with 412 and keeps the row", async () => {
    const { json: row } = await http(`${server.url}/api/articles`, { method: "POST", body: article })
    const res = await http(`${server.url}/api/articles/${row.id}`, { method: "PATCH", body: { title: "x" }, headers: { "if-match": '"7"' } })
    expect(res.status).toBe(412)
    expect(res.json).toMatchObject({ error: "VersionConflict", expected: 7, actual: 1 })
    expect((await http(`${server.url}/api/articles/${row.id}`)).json.title).toBe("Hello")
    const ok = await http(`${server.url}/api/articles/${row.id}`, { method: "PATCH", body: { title: "y" }, headers: { "if-match": '"1"' } })
    expect(ok.json.version).toBe(2)
  })

  it("answers 415 for a non-JSON body and 400 for malformed JSON", async () => {
    const wrongType = await http(`${server.url}/api/articles`, { method: "POST", body: "title=x", headers: { "content-type": "text/plain" } })
    expect(wrongType.status).toBe(415)
    expect(wrongType.json.error).toBe("UnsupportedMediaType")
    const bad = await http(`${server.url}/api/articles`, { method: "POST", body: "{nope" })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toBe("InvalidJson")
  })

  it("answers 413 for a body over the limit", async () => {
    const res = await http(`${server.url}/api/articles`, { method: "POST", body: JSON.stringify({ title: "x".repeat(4 * 1024 * 1024 + 10) }) })
    expect(res.status).toBe(413)
    expect(res.json.error).toBe("PayloadTooLarge")
  })

  it("routes only exposed operations: 405 with Allow, or 404", async () => {
    const { json: p } = await http(`${pricing.url}/api/products`, { method: "POST", body: { name: "Pen", price: 2, currency: "USD" } })
    const patch = await http(`${pricing.url}/api/products/${p.id}`, { method: "PATCH", body: { price: 3 } })
    expect(patch.status).toBe(405)
    expect(patch.headers.get("allow")).toBe("GET")
    expect((await http(`${pricing.url}/api/products/${p.id}/discount`, { method: "POST", body: {} })).status).toBe(404)
    expect((await http(`${pricing.url}/api/nothing`)).status).toBe(404)
    const set = await http(`${pricing.url}/api/products/${p.id}/set_price`, { method: "POST", body: { price: 4 } })
    expect(set.json).toMatchObject({ id: p.id, version: 2, price: 4 })
    const refused = await http(`${pricing.url}/api/products/${p.id}/set_price`, { method: "POST", body: { price: 0 } })
    // The method's own refusal (the params schema takes any number): the domain's answer, with its code.
    expect(refused.status).toBe(422)
    expect(refused.json).toEqual({ error: "Rejected", message: "price must be a positive number", code: "not_positive" })
  })

  it("serialises 100 concurrent set_price calls on one product: distinct versions, final 101", async () => {
    const { json: p } = await http(`${pricing.url}/api/products`, { method: "POST", body: { name: "Hot", price: 1, currency: "EUR" } })
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) => http(`${pricing.url}/api/products/${p.id}/set_price`, { method: "POST", body: { price: i + 1 } }))
    )
    const versions = results.map((r) => r.json.version)
    expect(new Set(versions).size).toBe(100)
    expect(Math.max(...versions)).toBe(101)
    expect((await http(`${pricing.url}/api/products/${p.id}`)).json.version).toBe(101)
  })

  it("walks 3 pages with inserts in between, losing and repeating nothing", async () => {
    const fresh = await startServer(apps.pricing)
    try {
      const create = (n: number) =>
        http(`${fresh.url}/api/products`, { method: "POST", body: { name: `p${n}`, price: n, currency: "USD" } })
      for (let i = 1; i <= 6; i++) await create(i)
      const seen: Array<string> = []
      let cursor: string | undefined
      let pages = 0
      do {
        const res = await http(`${fresh.url}/api/products?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)
        expect(res.status).toBe(200)
        seen.push(...res.json.items.map((r: any) => r.id))
        cursor = res.json.nextCursor
        pages++
        if (pages === 1) await create(7) // rows created mid-walk appear later in the walk
      } while (cursor)
      expect(pages).toBe(3)
      expect(seen).toEqual(["1", "2", "3", "4", "5", "6", "7"])
      const badCursor = await http(`${fresh.url}/api/products?cursor=garbage`)
      expect(badCursor.status).toBe(400)
      expect((await http(`${fresh.url}/api/products?limit=0`)).status).toBe(400)
    } finally {
      await fresh.close()
    }
  })

  it("answers a foreign Host with 403", async () => {
    const res = await rawRequest(`${server.url}/api/articles`, { headers: { host: "evil.example" } })
    expect(res.status).toBe(403)
    expect(res.json.error).toBe("Forbidden")
    expect((await rawRequest(`${server.url}/api/articles`, { headers: { host: "localhost:1" } })).status).toBe(200)
  })
})
