/**
 * The direct /mcp route (transport.ts `direct`: tools/call and resources/read without a fiber) answers as the
 * fiber route does. The same call with a progressToken is served the fiber way (as SSE), so each case is asked
 * both ways, on both eras, over a real server, and the two results must be the same.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { JsonScan } from "../../src/http/edge/json-scan.ts"
import { openSession } from "../../testkit/legacy-client.ts"
import { LEGACY_VERSION, MCP_HEADERS, modernRequest } from "../../testkit/mcp.ts"
import { apps, http, startServer } from "../../testkit/server.ts"
import { sseDataPayloads } from "../../testkit/sse.ts"

type Era = "modern" | "legacy"

describe("the direct /mcp route answers as the fiber route", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  let session: string
  let nextId = 1
  beforeAll(async () => {
    server = await startServer(apps.pricing)
    session = await openSession(server.url)
    for (const name of ["a", "b"]) {
      const res = await http(`${server.url}/api/products`, { method: "POST", body: { name, price: 10, currency: "USD" } })
      expect(res.status).toBe(201)
    }
  })
  afterAll(() => server.close())

  /** One request; `progress`: with a progressToken, so the fiber route serves it as SSE. The JSON-RPC answer. */
  const call = async (era: Era, method: string, params: Record<string, unknown>, progress = false): Promise<any> => {
    const id = nextId++
    const name = (params.name ?? params.uri) as string
    const extraMeta = progress ? { progressToken: `t${id}` } : {}
    const req = era === "modern"
      ? modernRequest({ id, method, params, name, encodeName: true })
      : { headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION }, body: JSON.stringify({ jsonrpc: "2.0", id, method, params }) }
    const body = progress
      ? JSON.stringify((({ params: p, ...rest }) => ({ ...rest, params: { ...p, _meta: { ...p._meta, ...extraMeta } } }))(JSON.parse(req.body)))
      : req.body
    const res = await http(`${server.url}/mcp`, { method: "POST", headers: req.headers, body })
    if (!progress) {
      expect(res.headers.get("content-type")).toBe("application/json")
      return { status: res.status, message: res.json }
    }
    // A protocol error (an unknown tool) is answered before the call runs: as JSON on both routes.
    if (res.headers.get("content-type") === "application/json") return { status: res.status, message: res.json }
    expect(res.headers.get("content-type")).toContain("text/event-stream")
    const messages = sseDataPayloads(res.text).map((d) => JSON.parse(d)).filter((m) => m.id !== undefined)
    return { status: res.status, message: messages[0] }
  }
  const both = async (era: Era, method: string, params: Record<string, unknown>) => {
    const direct = await call(era, method, params)
    const fiber = await call(era, method, params, true)
    const { id: _a, ...directMessage } = direct.message
    const { id: _b, ...fiberMessage } = fiber.message
    expect(directMessage).toEqual(fiberMessage)
    return direct
  }

  for (const era of ["modern", "legacy"] as const) {
    it(`${era}: reads and refused arguments`, async () => {
      const got = await both(era, "tools/call", { name: "products_get", arguments: { id: "1" } })
      expect(got.status).toBe(200)
      expect(got.message.result.content[0].text).toBe((await http(`${server.url}/api/products/1`)).text)
      for (const args of [{ id: "99" }, { id: "" }, {}, { id: "1", extra: true }, { id: 1 }]) {
        expect((await both(era, "tools/call", { name: "products_get", arguments: args })).message.result.isError).toBe(true)
      }
      for (const args of [{ id: "1", price: 5, expectedVersion: 0 }, { id: "1", price: 5, expectedVersion: 1.5 }, { id: "1", price: 5, expectedVersion: "1" }, { price: 5 }, { id: "", price: 5 }, { id: "1", price: "x" }, { id: "1", price: 5, expectedVersion: 99 }, { id: "99", price: 5 }]) {
        const refused = await both(era, "tools/call", { name: "products_set_price", arguments: args })
        expect(refused.message.result.isError).toBe(true)
      }
      const unknown = await both(era, "tools/call", { name: "nope", arguments: {} })
      expect(unknown.message.error.code).toBe(-32602)
    })

    it(`${era}: writes, resource reads and what the direct route leaves to the fiber route`, async () => {
      const before = JSON.parse((await http(`${server.url}/api/products/2`)).text)
      const set = await call(era, "tools/call", { name: "products_set_price", arguments: { id: "2", price: 42, expectedVersion: before.version } })
      expect(set.message.result.structuredContent).toEqual({ ...before, price: 42, version: before.version + 1 })
      expect(set.message.result.content[0].text).toBe((await http(`${server.url}/api/products/2`)).text)
      // resources/read: the row, as REST serves it; the schema; a missing row in its era's code.
      const row = await call(era, "resources/read", { uri: "wo://products/2" })
      expect(row.message.result.contents[0].text).toBe((await http(`${server.url}/api/products/2`)).text)
      if (era === "modern") expect(row.message.result).toMatchObject({ ttlMs: 0, cacheScope: "private", resultType: "complete" })
      const schema = await call(era, "resources/read", { uri: "wo://schema/products" })
      expect(JSON.parse(schema.message.result.contents[0].text)).toMatchObject({ type: "products" })
      const missing = await call(era, "resources/read", { uri: "wo://products/99" })
      expect(missing.status).toBe(200)
      expect(missing.message.error.code).toBe(era === "modern" ? -32602 : -32002)
      // A list is read the fiber way, as is every other method.
      const list = await call(era, "resources/read", { uri: "wo://products?order=-price" })
      expect(JSON.parse(list.message.result.contents[0].text).items[0]).toMatchObject({ id: "2" })
      const tools = await call(era, "tools/list", {})
      expect(tools.message.result.tools.map((t: { name: string }) => t.name)).toContain("products_get")
    })
  }

  it("reads a body's bytes once: the shape the edge scanned as it arrived is the one the depth check uses", async () => {
    const feed = vi.spyOn(JsonScan.prototype, "feed")
    try {
      const scanned = async (headers: Record<string, string>, message: Record<string, unknown>) => {
        const body = JSON.stringify(message)
        feed.mockClear()
        const res = await http(`${server.url}/mcp`, { method: "POST", headers, body })
        expect(res.status).toBe(200)
        return feed.mock.calls.reduce((n, [chunk]) => n + chunk.length, 0) / Buffer.byteLength(body)
      }
      const get = { name: "products_get", arguments: { id: "1" } }
      const modern = (method: string, params: Record<string, unknown>, name?: string) => {
        const req = modernRequest({ id: 7, method, params, name })
        return scanned(req.headers, JSON.parse(req.body))
      }
      const legacy = { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION }
      // The direct route (tools/call), and a method it reads and leaves to the fiber route (tools/list).
      expect(await modern("tools/call", get, "products_get")).toBe(1)
      expect(await modern("tools/list", {})).toBe(1)
      expect(await scanned(legacy, { jsonrpc: "2.0", id: 8, method: "tools/call", params: get })).toBe(1)
      expect(await scanned(legacy, { jsonrpc: "2.0", id: 9, method: "tools/list", params: {} })).toBe(1)
    } finally {
      feed.mockRestore()
    }
  })

  it("legacy: a refused admission is answered on the direct route with the fiber route's status", async () => {
    const body = JSON.stringify({ jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "products_get", arguments: { id: "1" } } })
    const unknown = await http(`${server.url}/mcp`, { method: "POST", headers: { ...MCP_HEADERS, "mcp-session-id": "nope" }, body })
    expect(unknown.status).toBe(404)
    const missing = await http(`${server.url}/mcp`, { method: "POST", headers: { ...MCP_HEADERS }, body })
    expect(missing.status).toBe(400)
    expect(missing.json).toMatchObject({ id: 3, error: { code: -32600 } })
    const badVersion = await http(`${server.url}/mcp`, { method: "POST", headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "1999-01-01" }, body })
    expect(badVersion.status).toBe(400)
  })
})
