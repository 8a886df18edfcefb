/**
 * Authentication (WO_AUTH_TOKEN) on /mcp and /api/*, and the refusal to listen beyond loopback without it.
 * Only loopback and 0.0.0.0 are ever bound here, and only 127.0.0.1 is ever connected to.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MCP_HEADERS } from "../../testkit/legacy-client.ts"
import { modernHeaders, MODERN_META } from "../../testkit/modern-client.ts"
import { runWo, spawnWo } from "../../testkit/spawn.ts"
import { apps, http, rawRequest, ROOT, startServer, tempDir } from "../../testkit/server.ts"

const TOKEN = "t0ken-with-enough-entropy-4f9c"
const REALM = 'Bearer realm="writeonce"'
const article = { title: "Authed", body: "b", status: "draft", tags: [], author: { name: "A" } }
const initializeBody = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } })

describe("WO_AUTH_TOKEN protects /mcp and /api/*", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    server = await startServer(apps.blog, { authToken: TOKEN })
  })
  afterAll(async () => {
    await server.close()
  })

  const wrong = [undefined, "", `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, "Bearer", `Basic ${Buffer.from(`u:${TOKEN}`).toString("base64")}`, TOKEN, `Bearer ${TOKEN} extra`]

  it("answers 401 with WWW-Authenticate to a missing or wrong token, on REST", async () => {
    for (const authorization of wrong) {
      const headers: Record<string, string> = { "content-type": "application/json", ...(authorization === undefined ? {} : { authorization }) }
      for (const [method, p, body] of [["GET", "/api/articles"], ["POST", "/api/articles", JSON.stringify(article)], ["GET", "/api/_rows"], ["GET", "/api/nope/1"]] as const) {
        const res = await rawRequest(`${server.url}${p}`, { method, headers, body })
        expect(res.status, `${method} ${p} with ${authorization}`).toBe(401)
        expect(res.headers["www-authenticate"]).toBe(REALM)
        expect(res.json).toMatchObject({ error: "Unauthorized" })
      }
    }
    expect((await http(`${server.url}/api/articles`, { headers: { authorization: `Bearer ${TOKEN}` } })).json.items).toEqual([]) // nothing was written
  })

  it("answers 401 with a JSON-RPC error on /mcp, both eras and every method", async () => {
    for (const authorization of wrong) {
      const auth: Record<string, string> = authorization === undefined ? {} : { authorization }
      const requests = [
        { method: "POST", headers: { ...MCP_HEADERS, ...auth }, body: initializeBody },
        { method: "POST", headers: { ...modernHeaders("tools/list"), ...auth }, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: { _meta: MODERN_META } }) },
        { method: "GET", headers: { accept: "text/event-stream", "mcp-session-id": "x", ...auth } },
        { method: "DELETE", headers: { "mcp-session-id": "x", ...auth } }
      ]
      for (const r of requests) {
        const res = await rawRequest(`${server.url}/mcp`, r)
        expect(res.status, `${r.method} with ${authorization}`).toBe(401)
        expect(res.headers["www-authenticate"]).toBe(REALM)
        expect(res.json).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600, message: expect.stringMatching(/bearer token/) } })
      }
    }
  })

  it("serves the right token (scheme case-insensitive), and leaves /healthz open", async () => {
    for (const authorization of [`Bearer ${TOKEN}`, `bearer ${TOKEN}`, `BEARER  ${TOKEN}`]) {
      const created = await http(`${server.url}/api/articles`, { method: "POST", body: article, headers: { authorization } })
      expect(created.status, authorization).toBe(201)
    }
    const init = await rawRequest(`${server.url}/mcp`, { method: "POST", headers: { ...MCP_HEADERS, authorization: `Bearer ${TOKEN}` }, body: initializeBody })
    expect(init.status).toBe(200)
    expect(init.headers["mcp-session-id"]).toBeTruthy()
    expect((await http(`${server.url}/healthz`)).status).toBe(200)
  })

  it("the SDK v1 client passes it through requestInit headers; without it, connecting fails", async () => {
    const client = new Client({ name: "auth-test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }))
    try {
      const created = await client.callTool({ name: "articles_create", arguments: { ...article, title: "From SDK v1" } })
      expect(created.isError).toBeFalsy()
      expect((created.structuredContent as { title: string }).title).toBe("From SDK v1")
    } finally {
      await client.close()
    }
    const anonymous = new Client({ name: "anonymous", version: "1.0.0" })
    await expect(anonymous.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)))).rejects.toThrow(/401|nauthorized|bearer/i)
    await anonymous.close().catch(() => {})
  })

  it("the SDK v2 client (modern, pinned 2026-07-28) passes it the same way", async () => {
    const client = new ClientV2({ name: "auth-test-v2", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
    await client.connect(new TransportV2(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }))
    try {
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name)).toContain("articles_create")
    } finally {
      await client.close()
    }
  })
})

describe("listening beyond loopback needs a token", () => {
  const blog = path.join(ROOT, "examples/blog")
  const clean = { WO_AUTH_TOKEN: undefined, WO_INSECURE: undefined }

  it("refuses 0.0.0.0 without a token: exit 1 and a clear reason", async () => {
    const run = await runWo(["run", blog, "--data", tempDir(), "--listen", "0.0.0.0:0"], { env: clean })
    expect(run.timedOut).toBe(false)
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/refusing to listen on 0\.0\.0\.0 without WO_AUTH_TOKEN/)
    expect(run.stdout).not.toMatch(/serving app/)
  })

  it("serves 0.0.0.0 with --insecure or WO_INSECURE=1, and stops cleanly", async () => {
    for (const [args, env] of [[["--insecure"], clean], [[], { ...clean, WO_INSECURE: "1" }]] as const) {
      const server = await spawnWo(["run", blog, "--data", tempDir(), "--listen", "0.0.0.0:0", ...args], { env })
      try {
        expect(server.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+$/)
        expect((await http(`${server.loopbackUrl}/api/articles`)).status).toBe(200) // unauthenticated, as asked
      } finally {
        expect(await server.stop("SIGTERM")).toBe(0)
      }
    }
  })

  it("serves 0.0.0.0 with a token, and then requires it", async () => {
    const server = await spawnWo(["run", blog, "--data", tempDir(), "--listen", "0.0.0.0:0"], { env: { ...clean, WO_AUTH_TOKEN: TOKEN } })
    try {
      const anonymous = await http(`${server.loopbackUrl}/api/articles`)
      expect(anonymous.status).toBe(401)
      expect(anonymous.headers.get("www-authenticate")).toBe(REALM)
      expect((await http(`${server.loopbackUrl}/api/articles`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200)
    } finally {
      expect(await server.stop("SIGTERM")).toBe(0)
    }
  })
})
