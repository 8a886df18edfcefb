/**
 * A whole view's REST read under an access file (the pricing sample's products_by_currency): answered without a
 * fiber (view-routes.ts, the router's direct path) and the generic way (HEAD, the list) alike, each only to a
 * principal granted `view:products_by_currency`; 401 without a credential, 403 naming the grant without the grant.
 * Over a real server on port 0.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import pricing from "../../examples/pricing/app.ts"
import { accessFileText, rest, tokenOf } from "../../testkit/access-server.ts"
import { http, startServer, tempDir } from "../../testkit/server.ts"

const VIEW = "/api/_views/products_by_currency"

describe("a whole view read over REST, with an access file", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    const file = path.join(tempDir("wo-view-reads-"), "access.json")
    fs.writeFileSync(file, accessFileText([
      { name: "reader", grants: ["view:products_by_currency"] },
      { name: "clerk", grants: ["products:*"] }
    ]))
    server = await startServer(pricing, { accessFile: file })
    for (const currency of ["USD", "EUR", "USD"]) {
      expect((await rest(server.url, "POST", "/api/products", tokenOf("clerk"), { name: `p-${currency}`, price: 1, currency })).status).toBe(201)
    }
  })
  afterAll(() => server?.close())

  it("answers a granted principal the view's value with its etag, GET and HEAD alike", async () => {
    const got = await rest(server.url, "GET", VIEW, tokenOf("reader"))
    expect(got.status).toBe(200)
    expect(got.json).toEqual({ name: "products_by_currency", seq: 3, value: { USD: 2, EUR: 1 } })
    expect(got.headers.get("etag")).toBe('"3"')
    expect(got.headers.get("cache-control")).toBe("no-store")
    const head = await http(`${server.url}${VIEW}`, { method: "HEAD", headers: { authorization: `Bearer ${tokenOf("reader")}` } })
    expect([head.status, head.headers.get("etag")]).toEqual([200, '"3"'])
    const listed = await rest(server.url, "GET", "/api/_views", tokenOf("reader"))
    expect(listed.json.views.map((v: { name: string }) => v.name)).toEqual(["products_by_currency"])
  })

  it("refuses a principal without the grant (403, naming it) and a request without a credential (401)", async () => {
    const refused = await rest(server.url, "GET", VIEW, tokenOf("clerk"))
    expect(refused.status).toBe(403)
    expect(refused.text).toContain("view:products_by_currency")
    expect((await rest(server.url, "GET", VIEW, undefined)).status).toBe(401)
    // The list shows the clerk none of the views it may not read.
    expect((await rest(server.url, "GET", "/api/_views", tokenOf("clerk"))).json.views).toEqual([])
  })

  it("answers 404 for a view that does not exist, to a principal that may read it", async () => {
    const file = path.join(tempDir("wo-view-reads-admin-"), "access.json")
    fs.writeFileSync(file, accessFileText([{ name: "ops", grants: ["admin"] }]))
    const admin = await startServer(pricing, { accessFile: file })
    try {
      const missing = await rest(admin.url, "GET", "/api/_views/no_such_view", tokenOf("ops"))
      expect(missing.status).toBe(404)
      expect(missing.json.error).toBe("NotFound")
    } finally {
      await admin.close()
    }
  })
})
