/**
 * The input and edge rules of "Never lose an acknowledged write", each against a real server:
 *  1. numbers are finite (`1e400` parses to Infinity, which JSON would store as null), on every write surface;
 *  2. `__proto__` and `constructor` keys are refused in MCP tool arguments as on REST;
 *  3. invalid UTF-8 bodies are refused, never decoded with U+FFFD;
 *  4. /mcp answers its edge refusals (403, 413) as JSON-RPC, REST keeps `{error, message}`;
 *  5. the Host header is parsed as an authority;
 *  6. the console bundle names no source path.
 * Bodies are written as JSON text: JSON.stringify cannot express 1e400, and would drop an own `__proto__`.
 */
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { inputIssues } from "../../src/domain/rules/input-rules.ts"
import { makeGuards } from "../../src/http/edge/guards.ts"
import { MCP_HEADERS, openSession, rawMcp } from "../../testkit/legacy-client.ts"
import { MODERN_META, modernHeaders } from "../../testkit/modern-client.ts"
import { apps, http, rawRequest, ROOT, startServer } from "../../testkit/server.ts"

type Server = Awaited<ReturnType<typeof startServer>>

const BODY_LIMIT = 4096
const JSON_TYPE = { "content-type": "application/json" }

let blog: Server
let pricing: Server
const sessions = new Map<string, string>()

beforeAll(async () => {
  ;[blog, pricing] = await Promise.all([startServer(apps.blog, { bodyLimit: BODY_LIMIT }), startServer(apps.pricing)])
  for (const s of [blog, pricing]) sessions.set(s.url, await openSession(s.url))
})
afterAll(async () => {
  await Promise.all([blog?.close(), pricing?.close()])
})

const send = (server: Server, method: string, path: string, body: string | Buffer) =>
  rawRequest(`${server.url}${path}`, { method, headers: JSON_TYPE, body })

let nextId = 1
const toolCallText = (tool: string, argsText: string, meta?: object) =>
  `{"jsonrpc":"2.0","id":${nextId++},"method":"tools/call","params":{"name":${JSON.stringify(tool)},"arguments":${argsText}` +
  `${meta === undefined ? "" : `,"_meta":${JSON.stringify(meta)}`}}}`

/** One tools/call in each era, with the arguments given as JSON text. */
const callBothEras = async (server: Server, tool: string, argsText: string) => ({
  legacy: await rawMcp(server.url, toolCallText(tool, argsText), { "mcp-session-id": sessions.get(server.url)!, "mcp-protocol-version": "2025-11-25" }),
  modern: await rawRequest(`${server.url}/mcp`, { method: "POST", headers: modernHeaders("tools/call", tool), body: toolCallText(tool, argsText, MODERN_META) })
})

/** Both eras answered the call with an isError result whose text says `expected`. */
const expectToolRefusal = async (server: Server, tool: string, argsText: string, expected: string) => {
  const answers = await callBothEras(server, tool, argsText)
  for (const [era, res] of Object.entries(answers)) {
    expect(res.status, `${era} ${tool} ${argsText}`).toBe(200)
    expect(res.json.result?.isError, `${era} ${tool} ${argsText}: ${res.text}`).toBe(true)
    expect(res.json.result.content[0].text, era).toContain(expected)
  }
  return answers
}

const count = async (server: Server, type: string) => (await http(`${server.url}/api/${type}`)).json.items.length

const ARTICLE = `"title":"t","body":"b","status":"draft","tags":["a"],"author":{"name":"A"}`

describe("inputIssues: one walk for non-finite numbers and reserved keys", () => {
  it("names the path of each problem, array indexes as strings", () => {
    expect(inputIssues(JSON.parse(`{"a":1,"b":[0,{"c":1e400}],"d":{"e":-1e400}}`))).toEqual([
      { path: ["b", "1", "c"], message: "must be a finite number" },
      { path: ["d", "e"], message: "must be a finite number" }
    ])
    expect(inputIssues({ x: Number.NaN })).toEqual([{ path: ["x"], message: "must be a finite number" }])
    expect(inputIssues(JSON.parse(`{"__proto__":{"p":1},"n":{"constructor":1}}`))).toEqual([
      { path: ["__proto__"], message: "is a reserved key, not allowed in input" },
      { path: ["n", "constructor"], message: "is a reserved key, not allowed in input" }
    ])
  })
  it("keeps the first 20 issues and counts the rest (a body of a million bad numbers costs a count)", () => {
    const issues = inputIssues(JSON.parse(`[${Array(1000).fill("1e400").join(",")}]`))
    expect(issues).toHaveLength(20)
    expect(issues[19]).toEqual({ path: ["19"], message: "must be a finite number" })
    expect(issues.omitted).toBe(980)
  })
  it("passes plain data, the reserved names as values, and large finite numbers", () => {
    expect(inputIssues(JSON.parse(`{"a":[1.5,-0,1e308,null,true,"__proto__"],"b":{"c":"constructor"},"proto":{}}`))).toEqual([])
    expect(inputIssues(undefined)).toEqual([])
  })
})

describe("numbers are finite on every write surface", () => {
  it("REST create and method invocation: 400 ValidationFailed naming the field; nothing is written", async () => {
    const lamp = await send(pricing, "POST", "/api/products", `{"name":"Lamp","price":10,"currency":"USD"}`)
    expect(lamp.status).toBe(201)
    for (const bad of ["1e400", "-1e400"]) {
      const create = await send(pricing, "POST", "/api/products", `{"name":"Big","price":${bad},"currency":"USD"}`)
      expect(create.status, bad).toBe(400)
      expect(create.json.error).toBe("ValidationFailed")
      expect(create.json.issues).toEqual([{ path: ["price"], message: "must be a finite number" }])
      expect(create.json.message).toContain("price: must be a finite number")

      const invoke = await send(pricing, "POST", `/api/products/${lamp.json.id}/set_price`, `{"price":${bad}}`)
      expect(invoke.status, bad).toBe(400)
      expect(invoke.json).toMatchObject({ error: "ValidationFailed", issues: [{ path: ["price"], message: "must be a finite number" }] })
    }
    const after = await http(`${pricing.url}/api/products/${lamp.json.id}`)
    expect(after.json).toMatchObject({ price: 10, version: 1 })
    expect(await count(pricing, "products")).toBe(1)
    // The largest finite numbers still go through.
    const huge = await send(pricing, "POST", "/api/products", `{"name":"Huge","price":1e308,"currency":"USD"}`)
    expect(huge.status).toBe(201)
    expect(huge.json.price).toBe(1e308)
  })

  it("REST create and PATCH: nested fields and array items are named by their path", async () => {
    const created = await send(blog, "POST", "/api/articles", `{${ARTICLE}}`)
    expect(created.status).toBe(201)
    const before = await count(blog, "articles")
    const nested = await send(blog, "POST", "/api/articles", `{"title":"t","body":"b","status":"draft","tags":[],"author":{"name":"A","email":1e400}}`)
    expect(nested.status).toBe(400)
    expect(nested.json.issues).toEqual([{ path: ["author", "email"], message: "must be a finite number" }])
    const patch = await send(blog, "PATCH", `/api/articles/${created.json.id}`, `{"tags":["x",-1e400],"author":{"name":1e400}}`)
    expect(patch.status).toBe(400)
    expect(patch.json.issues).toEqual([
      { path: ["tags", "1"], message: "must be a finite number" },
      { path: ["author", "name"], message: "must be a finite number" }
    ])
    expect(await count(blog, "articles")).toBe(before)
    expect((await http(`${blog.url}/api/articles/${created.json.id}`)).json.version).toBe(1)
  })

  it("MCP create, update and method tools, both eras: an isError result naming the field", async () => {
    const before = await count(blog, "articles")
    await expectToolRefusal(blog, "articles_create", `{"title":"t","body":"b","status":"draft","tags":[],"author":{"name":1e400}}`, "author.name: must be a finite number")
    const target = await send(blog, "POST", "/api/articles", `{${ARTICLE}}`)
    await expectToolRefusal(blog, "articles_update", `{"id":"${target.json.id}","author":{"name":"A","email":-1e400}}`, "author.email: must be a finite number")
    expect(await count(blog, "articles")).toBe(before + 1)
    expect((await http(`${blog.url}/api/articles/${target.json.id}`)).json.version).toBe(1)

    const product = await send(pricing, "POST", "/api/products", `{"name":"Mug","price":4,"currency":"EUR"}`)
    for (const bad of ["1e400", "-1e400"]) {
      await expectToolRefusal(pricing, "products_set_price", `{"id":"${product.json.id}","price":${bad}}`, "price: must be a finite number")
    }
    expect((await http(`${pricing.url}/api/products/${product.json.id}`)).json).toMatchObject({ price: 4, version: 1 })
  })
})

describe("__proto__ and constructor keys are refused on MCP exactly as on REST", () => {
  const cases = [
    { label: "__proto__ at the top", extra: `,"__proto__":{"polluted":true}`, path: "__proto__" },
    { label: "__proto__ with a scalar", extra: `,"__proto__":1`, path: "__proto__" },
    { label: "constructor at the top", extra: `,"constructor":{"prototype":{}}`, path: "constructor" }
  ]

  it("create: REST 400 and an MCP isError with the same message, both eras; nothing is written", async () => {
    const before = await count(blog, "articles")
    for (const c of cases) {
      const rest = await send(blog, "POST", "/api/articles", `{${ARTICLE}${c.extra}}`)
      expect(rest.status, c.label).toBe(400)
      expect(rest.json.error).toBe("ValidationFailed")
      expect(rest.json.issues).toEqual([{ path: [c.path], message: "is a reserved key, not allowed in input" }])
      const mcp = await expectToolRefusal(blog, "articles_create", `{${ARTICLE}${c.extra}}`, `${c.path}: is a reserved key`)
      expect(mcp.legacy.json.result.content[0].text).toBe(rest.json.message)
      expect(mcp.modern.json.result.content[0].text).toBe(rest.json.message)
    }
    const nested = `{"title":"t","body":"b","status":"draft","tags":[],"author":{"name":"A","__proto__":{"email":"x"}}}`
    expect((await send(blog, "POST", "/api/articles", nested)).json.issues).toEqual([{ path: ["author", "__proto__"], message: "is a reserved key, not allowed in input" }])
    await expectToolRefusal(blog, "articles_create", nested, "author.__proto__: is a reserved key")
    expect(await count(blog, "articles")).toBe(before)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })

  it("update and method tools, both eras, and the read tools' arguments", async () => {
    const target = await send(blog, "POST", "/api/articles", `{${ARTICLE}}`)
    const id = target.json.id
    for (const c of cases) {
      const rest = await send(blog, "PATCH", `/api/articles/${id}`, `{"title":"u"${c.extra}}`)
      expect(rest.status, c.label).toBe(400)
      const mcp = await expectToolRefusal(blog, "articles_update", `{"id":"${id}","title":"u"${c.extra}}`, `${c.path}: is a reserved key`)
      expect(mcp.legacy.json.result.content[0].text).toBe(rest.json.message)
    }
    expect((await http(`${blog.url}/api/articles/${id}`)).json).toMatchObject({ title: "t", version: 1 })

    const product = await send(pricing, "POST", "/api/products", `{"name":"Pen","price":2,"currency":"USD"}`)
    await expectToolRefusal(pricing, "products_set_price", `{"id":"${product.json.id}","price":3,"__proto__":{}}`, "__proto__: is a reserved key")
    expect((await http(`${pricing.url}/api/products/${product.json.id}`)).json).toMatchObject({ price: 2, version: 1 })

    // The read tools refuse any argument they do not declare, this one included.
    await expectToolRefusal(blog, "articles_get", `{"id":"${id}","__proto__":{}}`, "__proto__")
    await expectToolRefusal(blog, "articles_list", `{"__proto__":{"limit":1}}`, "__proto__")
  })
})

describe("invalid UTF-8 bodies get 400, never U+FFFD", () => {
  const withBytes = (before: string, bytes: ReadonlyArray<number>, after: string) =>
    Buffer.concat([Buffer.from(before), Buffer.from(bytes), Buffer.from(after)])
  const INVALID = [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0x80], [0xe2, 0x82]] as const

  it("REST: 400 with a JSON error body; nothing is written", async () => {
    const before = await count(blog, "articles")
    for (const bytes of INVALID) {
      const res = await send(blog, "POST", "/api/articles", withBytes(`{"title":"caf`, bytes, `","body":"b","status":"draft","tags":[],"author":{"name":"A"}}`))
      expect(res.status, bytes.join(" ")).toBe(400)
      expect(res.headers["content-type"]).toBe("application/json")
      expect(res.json).toMatchObject({ error: "InvalidJson" })
      expect(res.json.message).toContain("UTF-8")
    }
    expect(await count(blog, "articles")).toBe(before)
    // Valid multi-byte text is kept exactly.
    const title = "café ✓ 🙂"
    const ok = await send(blog, "POST", "/api/articles", Buffer.from(`{"title":"${title}","body":"b","status":"draft","tags":[],"author":{"name":"A"}}`))
    expect(ok.status).toBe(201)
    expect((await http(`${blog.url}/api/articles/${ok.json.id}`)).json.title).toBe(title)
  })

  it("/mcp, both eras: 400 with a JSON-RPC parse error", async () => {
    const before = await count(blog, "articles")
    // The bytes go where the title's "@" is.
    const args = `{"title":"caf@","body":"b","status":"draft","tags":[],"author":{"name":"A"}}`
    const at = (text: string, bytes: ReadonlyArray<number>) => withBytes(text.slice(0, text.indexOf("@")), bytes, text.slice(text.indexOf("@") + 1))
    for (const bytes of INVALID) {
      const legacy = await rawRequest(`${blog.url}/mcp`, {
        method: "POST",
        headers: { ...MCP_HEADERS, "mcp-session-id": sessions.get(blog.url)!, "mcp-protocol-version": "2025-11-25" },
        body: at(toolCallText("articles_create", args), bytes)
      })
      const modern = await rawRequest(`${blog.url}/mcp`, {
        method: "POST",
        headers: modernHeaders("tools/call", "articles_create"),
        body: at(toolCallText("articles_create", args, MODERN_META), bytes)
      })
      for (const res of [legacy, modern]) {
        expect(res.status, bytes.join(" ")).toBe(400)
        expect(res.json).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } })
        expect(res.json.error.message).toContain("UTF-8")
      }
    }
    expect(await count(blog, "articles")).toBe(before)
  })
})

describe("edge refusals: JSON-RPC on /mcp, {error, message} on REST", () => {
  const rpcRefusal = (code = -32600) => ({ jsonrpc: "2.0", id: null, error: { code } })
  const pad = "x".repeat(BODY_LIMIT + 1)

  it("413: /mcp answers a JSON-RPC error, with Content-Length and chunked", async () => {
    const body = toolCallText("articles_create", `{"title":"${pad}"}`)
    const headers = { ...MCP_HEADERS, "mcp-session-id": sessions.get(blog.url)!, "mcp-protocol-version": "2025-11-25" }
    const declared = await rawRequest(`${blog.url}/mcp`, { method: "POST", headers, body })
    expect(declared.status).toBe(413)
    expect(declared.headers["content-type"]).toBe("application/json")
    expect(declared.json).toEqual({ ...rpcRefusal(), error: { code: -32600, message: `request body exceeds ${BODY_LIMIT} bytes` } })
    const chunked = await rawRequest(`${blog.url}/mcp?x=1`, { method: "POST", headers: { ...headers, "transfer-encoding": "chunked" }, body })
    expect(chunked.status).toBe(413)
    expect(chunked.json).toMatchObject(rpcRefusal())
  })

  it("413: REST keeps its own shape", async () => {
    const res = await send(blog, "POST", "/api/articles", `{"title":"${pad}"}`)
    expect(res.status).toBe(413)
    expect(res.json).toEqual({ error: "PayloadTooLarge", message: `request body exceeds ${BODY_LIMIT} bytes` })
  })

  it("403 for Host or Origin: /mcp answers a JSON-RPC error, REST keeps its own shape", async () => {
    const ping = JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" })
    const refusals: ReadonlyArray<Record<string, string>> = [{ host: "evil.example" }, { origin: "http://evil.example" }]
    for (const refused of refusals) {
      const mcp = await rawMcp(blog.url, ping, { ...refused, "mcp-session-id": sessions.get(blog.url)! })
      expect(mcp.status, JSON.stringify(refused)).toBe(403)
      expect(mcp.headers["content-type"]).toBe("application/json")
      expect(mcp.json, JSON.stringify(refused)).toMatchObject(rpcRefusal())
      expect(mcp.json.error.message).toMatch(/Host|Origin/)
      const rest = await rawRequest(`${blog.url}/api/articles`, { headers: refused })
      expect(rest.status).toBe(403)
      expect(rest.json).toMatchObject({ error: "Forbidden" })
    }
  })

  it("a request target URL cannot parse is a 400, and the server keeps serving", async () => {
    expect(await rawTarget(blog.url, "http://[::1/x")).toMatch(/^HTTP\/1\.1 400/)
    expect((await http(`${blog.url}/api/articles`)).status).toBe(200)
  })
})

/** Sends a request line with a raw target (node's client would normalise it); resolves with the status line. */
const rawTarget = (url: string, target: string) => {
  const { hostname, port } = new URL(url)
  return new Promise<string>((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(`GET ${target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`))
    let text = ""
    socket.setEncoding("utf8")
    socket.on("data", (c: string) => (text += c))
    socket.on("close", () => resolve(text.split("\r\n")[0]))
    socket.on("error", reject)
  })
}

describe("the Host header is parsed as an authority", () => {
  it("refuses an authority with more after the name; accepts names, ports and bracketed IPv6", async () => {
    for (const host of ["127.0.0.1:1@evil.com", "[::1]evil", "localhost@evil.com", "localhost:80:80", "localhost:", "::1", "localhost/x", "[::1"]) {
      expect((await rawRequest(`${blog.url}/api/articles`, { headers: { host } })).status, host).toBe(403)
    }
    for (const host of ["localhost", "localhost:8080", "127.0.0.1:80", "[::1]:8080", "[::1]", "LOCALHOST:1"]) {
      expect((await rawRequest(`${blog.url}/api/articles`, { headers: { host } })).status, host).toBe(200)
    }
  })

  it("applies the same parse to WO_HOSTS names and a bound address", () => {
    const guards = makeGuards({ host: "::1", allowedHosts: ["Example.com"], mcpOrigins: [] })
    expect(guards.hostAllowed("example.com:443")).toBe(true)
    expect(guards.hostAllowed("example.com.evil:443")).toBe(false)
    expect(guards.hostAllowed("example.com:443@evil")).toBe(false)
    expect(guards.hostAllowed("[::1]:9")).toBe(true)
    expect(guards.hostAllowed(undefined)).toBe(false)
  })
})

describe("the console bundle", () => {
  it("names no source path", async () => {
    const res = await http(`${pricing.url}/console/console.js`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("javascript")
    expect(res.text.length).toBeGreaterThan(1000)
    expect(res.text).not.toContain("src/")
    expect(res.text).not.toContain(ROOT)
    // esbuild heads each module with a comment naming it: never an absolute path.
    const markers = res.text.split("\n").filter((line) => line.startsWith("// "))
    expect(markers.length).toBeGreaterThan(0)
    for (const marker of markers) expect(marker).not.toMatch(/^\/\/ (\/|[A-Za-z]:\\)/)
  })
})
