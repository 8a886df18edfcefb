import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { openSse } from "../../testkit/sse.ts"
import { apps, http, rawRequest, startServer } from "../../testkit/server.ts"

const META = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} }
const headersFor = (method: string, name?: string, extra: Record<string, string> = {}) => ({
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": "2026-07-28",
  "mcp-method": method,
  ...(name !== undefined ? { "mcp-name": name } : {}),
  ...extra
})
let ids = 1
const modern = (url: string, method: string, params: Record<string, unknown> = {}, name?: string, extra?: Record<string, string>) =>
  rawRequest(`${url}/mcp`, { method: "POST", headers: headersFor(method, name, extra), body: JSON.stringify({ jsonrpc: "2.0", id: ids++, method, params: { ...params, _meta: META } }) })
const base64Name = (s: string) => `=?base64?${Buffer.from(s, "utf8").toString("base64")}?=`

describe("MCP 2026-07-28 (modern era) beside the legacy era", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  let id: string
  beforeAll(async () => {
    server = await startServer(apps.pricing)
    id = (await http(`${server.url}/api/products`, { method: "POST", body: { name: "Mug", price: 4, currency: "USD" } })).json.id
  })
  afterAll(async () => {
    await server.close()
  })

  it("is stateless: no session minted or echoed, GET and DELETE are 405, legacy-only methods unknown", async () => {
    const res = await modern(server.url, "tools/list", {}, undefined, { "mcp-session-id": "ignored", "last-event-id": "get-1" })
    expect(res.status).toBe(200)
    expect(res.headers["mcp-session-id"]).toBeUndefined()
    expect(res.json.result.resultType).toBe("complete")
    for (const method of ["ping", "logging/setLevel", "resources/subscribe", "prompts/list"]) {
      const r = await modern(server.url, method)
      expect(r.status, method).toBe(404)
      expect(r.json.error.code).toBe(-32601)
    }
    const del = await rawRequest(`${server.url}/mcp`, { method: "DELETE", headers: { "mcp-protocol-version": "2026-07-28" } })
    expect(del.status).toBe(405)
  })

  it("carries caching hints that are true: long for the catalog, zero for rows", async () => {
    const tools = (await modern(server.url, "tools/list")).json.result
    expect(tools).toMatchObject({ ttlMs: 300000, cacheScope: "public" })
    const templates = (await modern(server.url, "resources/templates/list")).json.result
    expect(templates.ttlMs).toBeGreaterThan(0)
    const list = (await modern(server.url, "resources/list")).json.result
    expect(list.ttlMs).toBe(0)
    const uri = `wo://products/${id}`
    const read = (await modern(server.url, "resources/read", { uri }, uri)).json.result
    expect(read).toMatchObject({ ttlMs: 0, resultType: "complete", _meta: { "io.modelcontextprotocol/serverInfo": { name: "pricing" } } })
  })

  it("answers a missing resource with -32602 and data.uri, HTTP 200", async () => {
    const uri = "wo://products/999999"
    const res = await modern(server.url, "resources/read", { uri }, uri)
    expect(res.status).toBe(200)
    expect(res.json.error).toMatchObject({ code: -32602, data: { uri } })
  })

  it("decodes the base64 sentinel in Mcp-Name and rejects a malformed one", async () => {
    const uri = `wo://products/${id}`
    expect((await modern(server.url, "resources/read", { uri }, base64Name(uri))).status).toBe(200)
    const bad = await modern(server.url, "resources/read", { uri }, "=?base64?SGVs!!!bG8=?=")
    expect(bad.status).toBe(400)
    expect(bad.json.error.code).toBe(-32020)
    const literal = await modern(server.url, "resources/read", { uri }, "SGVsbG8=")
    expect(literal.json.error.code).toBe(-32020)
    const missing = await modern(server.url, "tools/call", { name: "products_get", arguments: { id } })
    expect(missing.json.error.code).toBe(-32020)
  })

  it("accepts a POSTed notification without Mcp-Method (202)", async () => {
    const res = await rawRequest(`${server.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28" },
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "listen:0", _meta: META } })
    })
    expect(res.status).toBe(202)
    expect(res.text).toBe("")
  })

  it("listen: ack first, subscriptionId on every message, only the requested types", async () => {
    const listen = await openSse(`${server.url}/mcp`, {
      method: "POST",
      headers: headersFor("subscriptions/listen"),
      body: JSON.stringify({ jsonrpc: "2.0", id: "L1", method: "subscriptions/listen", params: { _meta: META, notifications: { resourceSubscriptions: [`wo://products/${id}`], toolsListChanged: true } } })
    })
    const lists = await openSse(`${server.url}/mcp`, {
      method: "POST",
      headers: headersFor("subscriptions/listen"),
      body: JSON.stringify({ jsonrpc: "2.0", id: 77, method: "subscriptions/listen", params: { _meta: META, notifications: { resourcesListChanged: true } } })
    })
    const ack = await listen.nextJson()
    expect(ack?.json).toEqual({
      jsonrpc: "2.0",
      method: "notifications/subscriptions/acknowledged",
      params: { notifications: { resourceSubscriptions: [`wo://products/${id}`] }, _meta: { "io.modelcontextprotocol/subscriptionId": "L1" } }
    })
    expect((await lists.nextJson())?.json.params._meta["io.modelcontextprotocol/subscriptionId"]).toBe(77)

    await http(`${server.url}/api/products/${id}/set_price`, { method: "POST", body: { price: 5 } })
    const created = await http(`${server.url}/api/products`, { method: "POST", body: { name: "New", price: 1, currency: "USD" } })
    const updated = await listen.nextJson()
    expect(updated?.json).toEqual({
      jsonrpc: "2.0",
      method: "notifications/resources/updated",
      params: { uri: `wo://products/${id}`, _meta: { "io.modelcontextprotocol/subscriptionId": "L1" } }
    })
    expect(await listen.nextJson(300)).toBeUndefined() // the new row is not subscribed, and no list type was asked for
    const changed = await lists.nextJson()
    expect(changed?.json).toEqual({
      jsonrpc: "2.0",
      method: "notifications/resources/list_changed",
      params: { _meta: { "io.modelcontextprotocol/subscriptionId": 77 } }
    })
    expect(await lists.nextJson(300)).toBeUndefined() // a set_price does not change the list
    expect(created.status).toBe(201)
    listen.close()
    lists.close()
  })

  it("streams progress only on the request's own response, then the complete result", async () => {
    const res = await openSse(`${server.url}/mcp`, {
      method: "POST",
      headers: headersFor("tools/call", "products_set_price"),
      body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "products_set_price", arguments: { id, price: 9 }, _meta: { ...META, progressToken: "t" } } })
    })
    const messages = []
    for (let m = await res.nextJson(); m !== undefined; m = await res.nextJson()) messages.push(m.json)
    expect(messages.slice(0, 3).map((m) => m.params.message)).toEqual(["accepted", "decided", "durable"])
    expect(messages[3]).toMatchObject({ id: 5, result: { resultType: "complete", structuredContent: { price: 9 } } })
    expect(messages).toHaveLength(4)
  })
})
