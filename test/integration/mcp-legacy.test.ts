import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { callTool, openSession, rawMcp, rpc } from "../../testkit/legacy-client.ts"
import { apps, http, startServer } from "../../testkit/server.ts"

const article = (n: number) => ({ title: `Post ${n}`, body: "text", status: "draft", tags: [], author: { name: "Ann" } })

describe("MCP legacy era over a real server", () => {
  let blog: Awaited<ReturnType<typeof startServer>>
  let pricing: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    blog = await startServer(apps.blog, { defaultPageSize: 3 })
    pricing = await startServer(apps.pricing)
  })
  afterAll(async () => {
    await blog.close()
    await pricing.close()
  })

  it("negotiates the version and declares capabilities honestly", async () => {
    for (const v of ["2025-03-26", "2025-06-18", "2025-11-25"]) {
      const res = await rpc(blog.url, "initialize", { protocolVersion: v, capabilities: {}, clientInfo: { name: "t", version: "1" } })
      expect(res.json.result.protocolVersion).toBe(v)
    }
    const res = await rpc(blog.url, "initialize", { protocolVersion: "2024-01-01", capabilities: {}, clientInfo: { name: "t" } })
    expect(res.json.result).toMatchObject({
      protocolVersion: "2025-11-25",
      capabilities: { tools: {}, resources: { subscribe: true } },
      serverInfo: { name: "blog", version: expect.any(String) }
    })
    expect(res.json.result.instructions).toContain("articles_create")
    expect((await rpc(blog.url, "ping")).json.result).toEqual({})
  })

  it("answers the error matrix with the contract's statuses and codes", async () => {
    const get = await rawMcp(blog.url, "", {}, "GET")
    expect(get.status).toBe(400) // no session
    expect(get.json.error.code).toBe(-32600)
    expect((await rawMcp(blog.url, "", {}, "DELETE")).status).toBe(400)
    expect((await rawMcp(blog.url, "", {}, "PUT")).status).toBe(405)
    const session = await openSession(blog.url)
    const badVersion = await rawMcp(blog.url, JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" }), { "mcp-protocol-version": "1999-01-01", "mcp-session-id": session })
    expect(badVersion.status).toBe(400)
    expect(badVersion.json.id).toBe(7)
    const origin = await rawMcp(blog.url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }), { origin: "http://evil.example", ...{ "mcp-session-id": session } })
    expect(origin.status).toBe(403)
    const localOrigin = await rawMcp(blog.url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }), { origin: "http://localhost:3000", "mcp-session-id": session })
    expect(localOrigin.status).toBe(200)
    const host = await rawMcp(blog.url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }), { host: "evil.example:80" })
    expect(host.status).toBe(403)
    const noSession = await rawMcp(blog.url, JSON.stringify({ jsonrpc: "2.0", id: 8, method: "tools/list" }))
    expect(noSession.status).toBe(400)
    expect(noSession.json).toMatchObject({ id: 8, error: { code: -32600 } })
    const unknownSession = await rawMcp(blog.url, JSON.stringify({ jsonrpc: "2.0", id: 8, method: "tools/list" }), { "mcp-session-id": "nope" })
    expect(unknownSession.status).toBe(404)
    const batch = await rawMcp(blog.url, JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "ping" }]))
    expect(batch.json).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } })
    const malformed = await rawMcp(blog.url, "{not json")
    expect(malformed.headers["content-type"]).toBe("application/json")
    expect(malformed.json).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } })
    const withSession = { "mcp-session-id": session }
    const notRpc = await rawMcp(blog.url, JSON.stringify({ jsonrpc: "2.0", id: 3 }))
    expect(notRpc.json).toMatchObject({ id: 3, error: { code: -32600 } })
    const unknown = await rawMcp(blog.url, JSON.stringify({ jsonrpc: "2.0", id: 4, method: "nope/nope" }), withSession)
    expect(unknown.json).toMatchObject({ id: 4, error: { code: -32601 } })
    const badParams = await rawMcp(blog.url, JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: 5 } }), withSession)
    expect(badParams.json).toMatchObject({ id: 5, error: { code: -32602 } })
    expect((await rawMcp(blog.url, "{}", { accept: "application/json" })).status).toBe(406)
    expect((await rawMcp(blog.url, "{}", { "content-type": "text/plain" })).status).toBe(415)
    const note = await rawMcp(blog.url, JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }), withSession)
    expect(note.status).toBe(202)
    expect(note.text).toBe("")
    expect((await rawMcp(blog.url, JSON.stringify({ jsonrpc: "2.0", id: 9, result: {} }), withSession)).status).toBe(202)
  })

  it("lists exactly the exposed tools, in a stable order, with schemas and annotations", async () => {
    const blogTools = (await rpc(blog.url, "tools/list")).json.result.tools
    expect(blogTools.map((t: any) => t.name)).toEqual(["articles_list", "articles_get", "articles_create", "articles_update", "articles_delete", "view_articles_by_status"])
    const create = blogTools.find((t: any) => t.name === "articles_create")
    expect(create.inputSchema.properties.status).toEqual({ type: "string", enum: ["draft", "published"] })
    expect(create.inputSchema.properties.author.required).toEqual(["name"])
    expect(create.inputSchema.required).not.toContain("email")
    expect(blogTools.find((t: any) => t.name === "articles_get").annotations.readOnlyHint).toBe(true)
    expect(blogTools.find((t: any) => t.name === "articles_delete").annotations.destructiveHint).toBe(true)
    const pricingTools = (await rpc(pricing.url, "tools/list")).json.result.tools
    expect(pricingTools.map((t: any) => t.name)).toEqual(["products_list", "products_get", "products_set_price", "view_products_by_currency"])
    const setPrice = pricingTools.find((t: any) => t.name === "products_set_price")
    expect(setPrice.inputSchema.required).toEqual(["id", "price"])
  })

  it("serves the same row bytes through tools, resources and REST", async () => {
    const { json: row, text: restCreate } = await http(`${pricing.url}/api/products`, { method: "POST", body: { name: "Pen", price: 2, currency: "USD" } })
    const set = await callTool(pricing.url, "products_set_price", { id: row.id, price: 3 })
    expect(set.structuredContent).toMatchObject({ id: row.id, version: 2, price: 3 })
    expect(restCreate).toContain('"version":1')
    const rest = await http(`${pricing.url}/api/products/${row.id}`)
    const tool = await callTool(pricing.url, "products_get", { id: row.id })
    expect(tool.content[0].text).toBe(rest.text)
    expect(tool.structuredContent).toEqual(rest.json)
    const read = await rpc(pricing.url, "resources/read", { uri: `wo://products/${row.id}` })
    expect(read.json.result.contents[0].text).toBe(rest.text)
  })

  it("reports tool failures as isError results with REST's messages", async () => {
    const { json: row } = await http(`${pricing.url}/api/products`, { method: "POST", body: { name: "Cup", price: 5, currency: "EUR" } })
    const restRefused = await http(`${pricing.url}/api/products/${row.id}/set_price`, { method: "POST", body: { price: -1 } })
    const refused = await callTool(pricing.url, "products_set_price", { id: row.id, price: -1 })
    expect(refused.isError).toBe(true)
    expect(refused.content[0].text).toBe(`${restRefused.json.message} (Rejected: ${restRefused.json.code}). Read products ${row.id} with products_get to see its current state before trying again.`)
    const missing = await callTool(pricing.url, "products_get", { id: "424242" })
    expect(missing).toMatchObject({ isError: true, content: [{ text: "products 424242 not found (NotFound). Find an existing id with products_list." }] })
    const stale = await callTool(pricing.url, "products_set_price", { id: row.id, price: 9, expectedVersion: 9 })
    expect(stale.isError).toBe(true)
    expect(stale.content[0].text).toBe(
      `products ${row.id} is at version 1, not the expected 9 (VersionConflict). Read it again with products_get; if the change still applies, retry with expectedVersion 1.`
    )
    const badArgs = await callTool(pricing.url, "products_get", { id: 5 })
    expect(badArgs.isError).toBe(true)
    const unknown = await rpc(pricing.url, "tools/call", { name: "products_create", arguments: {} })
    expect(unknown.json.error.code).toBe(-32602)
  })

  it("walks 3 pages of articles_list and of resources/list, each item exactly once", async () => {
    for (let i = 1; i <= 7; i++) await callTool(blog.url, "articles_create", article(i))
    const ids: Array<string> = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await callTool(blog.url, "articles_list", cursor ? { cursor } : {})
      ids.push(...page.structuredContent.items.map((r: any) => r.id))
      cursor = page.structuredContent.nextCursor
      pages++
    } while (cursor)
    expect(pages).toBe(3)
    expect(ids).toEqual(["1", "2", "3", "4", "5", "6", "7"])

    const uris: Array<string> = []
    let rcursor: string | undefined
    let rpages = 0
    do {
      const res = (await rpc(blog.url, "resources/list", rcursor ? { cursor: rcursor } : {})).json.result
      uris.push(...res.resources.map((r: any) => r.uri))
      rcursor = res.nextCursor
      rpages++
    } while (rcursor)
    expect(rpages).toBe(3)
    expect(uris).toEqual(["wo://schema/articles", "wo://views/articles_by_status", ...ids.map((id) => `wo://articles/${id}`)])
    expect(new Set(uris).size).toBe(uris.length)
  })

  it("serves templates, schema resources and -32002 for unknown resources", async () => {
    const templates = (await rpc(blog.url, "resources/templates/list")).json.result.resourceTemplates
    expect(templates.map((t: any) => t.uriTemplate)).toEqual(["wo://articles/{id}", "wo://articles{?title,body,status,order,limit}", "wo://articles/{id}/history"])
    const schema = JSON.parse((await rpc(blog.url, "resources/read", { uri: "wo://schema/articles" })).json.result.contents[0].text)
    expect(schema.fields).toEqual(["title", "body", "status", "tags", "author"])
    expect(schema.jsonSchema.properties.status.enum).toEqual(["draft", "published"])
    for (const uri of ["wo://articles/99999", "wo://nothing/1", "test://x", "wo://articles/99999/history"]) {
      const res = await rpc(blog.url, "resources/read", { uri })
      expect(res.status).toBe(200)
      expect(res.json.error).toMatchObject({ code: -32002, data: { uri } })
    }
  })
})
