/**
 * Every limit at its edge: exactly at the limit is accepted, one past it is refused the documented way. The
 * defaults and the environment variable names are checked through loadSettings; the edges run against a real
 * server, mostly with small limits so the edges are cheap (the body limit and JSON depth also at their defaults).
 * Not repeated here (test/integration/mcp-streams.test.ts has them): the basic session cap, basic idle expiry
 * and the resumable overflow of a legacy stream; nor the URI length and subscription bytes edges
 * (test/reliability/session-bounds.test.ts has them).
 */
import { ConfigProvider, Deferred, Effect, Layer } from "effect"
import * as nodeHttp from "node:http"
import * as net from "node:net"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { LogFaults } from "../../testkit/log-faults.ts"
import { loadSettings, type Settings } from "../../src/support/config.ts"
import { Sessions } from "../../src/http/mcp/sessions.ts"
import { MCP_HEADERS, openSession } from "../../testkit/legacy-client.ts"
import { listenBody, modernHeaders, openListen, rawListen, SUBSCRIPTION_ID } from "../../testkit/modern-client.ts"
import { openSse } from "../../testkit/sse.ts"
import { apps, http, rawRequest, startServer } from "../../testkit/server.ts"
import { sessionRequest } from "../../testkit/write-traffic.ts"

const servers: Array<{ close: () => Promise<void> }> = []
const start = async (...args: Parameters<typeof startServer>) => {
  const s = await startServer(...args)
  servers.push(s)
  return s
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const waitFor = async (check: () => Promise<boolean> | boolean, ms = 3000) => {
  const until = Date.now() + ms
  while (!(await check()) && Date.now() < until) await sleep(25)
  return check()
}

describe("settings: every limit has a documented default and an environment variable", () => {
  const load = (env: Record<string, string>) =>
    Effect.runPromise(
      Effect.either(loadSettings({ dataDir: "/tmp/unused" })).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env)))))
    )
  const table: ReadonlyArray<readonly [string, keyof Settings, number]> = [
    ["WO_BODY_LIMIT", "bodyLimit", 4 * 1024 * 1024],
    ["WO_MAX_JSON_DEPTH", "maxJsonDepth", 64],
    ["WO_MAX_SESSIONS", "maxSessions", 10_000],
    ["WO_MAX_LISTENS_PER_CLIENT", "maxListensPerClient", 64],
    ["WO_MAX_LISTEN_STREAMS", "maxListenStreams", 10_000],
    ["WO_MAX_SUBSCRIPTIONS", "maxSubscriptions", 1000],
    ["WO_MAX_URI_LENGTH", "maxUriLength", 2048],
    ["WO_MAX_SUBSCRIPTION_BYTES", "maxSubscriptionBytes", 1024 * 1024],
    ["WO_SESSION_IDLE_MS", "sessionIdleMs", 30 * 60_000],
    ["WO_STREAM_BUFFER", "streamBuffer", 1024],
    ["WO_REQUEST_TIMEOUT_MS", "requestTimeoutMs", 30_000]
  ]
  it("has the defaults of the README", async () => {
    const settings = await load({})
    expect(settings._tag).toBe("Right")
    if (settings._tag !== "Right") return
    for (const [, field, value] of table) expect(settings.right[field], field).toBe(value)
    expect(settings.right.authToken).toBeUndefined()
    expect(settings.right.insecure).toBe(false)
  })
  it("reads each from its variable and refuses a value that is not a positive integer", async () => {
    for (const [name, field] of table) {
      const set = await load({ [name]: "7" })
      expect(set._tag === "Right" && set.right[field], name).toBe(7)
      for (const bad of ["0", "-1", "many", "1.5"]) expect((await load({ [name]: bad }))._tag, `${name}=${bad}`).toBe("Left")
    }
    const token = await load({ WO_AUTH_TOKEN: "t0k" })
    expect(token._tag === "Right" && token.right.authToken).toBe("t0k")
  })
})

/** A create body of exactly `bytes` bytes (ASCII). */
const articleOfSize = (bytes: number) => {
  const base = { title: "big", body: "", status: "draft", tags: [], author: { name: "A" } }
  const pad = bytes - JSON.stringify(base).length
  return JSON.stringify({ ...base, body: "x".repeat(pad) })
}
/** A tools/call articles_create envelope of exactly `bytes` bytes. */
const toolCallOfSize = (bytes: number) => {
  const envelope = (body: string) =>
    JSON.stringify({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "articles_create", arguments: { title: "big", body, status: "draft", tags: [], author: { name: "A" } } } })
  return envelope("x".repeat(bytes - envelope("").length))
}

/** Sends a body in pieces with chunked transfer encoding (no Content-Length). */
const sendChunked = (url: string, headers: Record<string, string>, body: string, pieces = 4) =>
  new Promise<{ status: number; json: any }>((resolve, reject) => {
    const req = nodeHttp.request(url, { method: "POST", headers: { ...headers, "transfer-encoding": "chunked" } }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (c: string) => (text += c))
      res.on("end", () => resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined }))
    })
    req.on("error", reject)
    const size = Math.ceil(body.length / pieces)
    for (let i = 0; i < pieces - 1; i++) req.write(body.slice(i * size, (i + 1) * size))
    req.end(body.slice((pieces - 1) * size))
  })

describe("body size (WO_BODY_LIMIT, default 4 MiB): 413 JSON one byte past it", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    server = await startServer(apps.blog) // the default limit
  })
  afterAll(async () => {
    await server.close()
  })
  const LIMIT = 4 * 1024 * 1024
  const JSON_TYPE = { "content-type": "application/json" }

  it("REST, with Content-Length and chunked: exactly 4 MiB is created, 4 MiB + 1 is 413", async () => {
    const atLimit = articleOfSize(LIMIT)
    expect(Buffer.byteLength(atLimit)).toBe(LIMIT)
    const ok = await rawRequest(`${server.url}/api/articles`, { method: "POST", headers: JSON_TYPE, body: atLimit })
    expect(ok.status).toBe(201)
    expect(ok.json.body.length).toBeGreaterThan(LIMIT - 100)
    const over = await rawRequest(`${server.url}/api/articles`, { method: "POST", headers: JSON_TYPE, body: articleOfSize(LIMIT + 1) })
    expect(over.status).toBe(413)
    expect(over.headers["content-type"]).toBe("application/json")
    expect(over.json).toEqual({ error: "PayloadTooLarge", message: `request body exceeds ${LIMIT} bytes` })

    expect((await sendChunked(`${server.url}/api/articles`, JSON_TYPE, atLimit)).status).toBe(201)
    const chunkedOver = await sendChunked(`${server.url}/api/articles`, JSON_TYPE, articleOfSize(LIMIT + 1))
    expect(chunkedOver.status).toBe(413)
    expect(chunkedOver.json.error).toBe("PayloadTooLarge")
    // Only the two bodies at the limit were written.
    expect((await http(`${server.url}/api/articles`)).json.items).toHaveLength(2)
  })

  it("MCP: a tools/call of exactly 4 MiB runs, one byte more is 413", async () => {
    const session = await openSession(server.url)
    const headers = { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
    const ok = await rawRequest(`${server.url}/mcp`, { method: "POST", headers, body: toolCallOfSize(LIMIT) })
    expect(ok.status).toBe(200)
    expect(ok.json.result.isError).toBeUndefined()
    expect(ok.json.result.structuredContent.version).toBe(1)
    const over = await rawRequest(`${server.url}/mcp`, { method: "POST", headers, body: toolCallOfSize(LIMIT + 1) })
    expect(over.status).toBe(413)
    expect(over.json).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } })
    expect((await sendChunked(`${server.url}/mcp`, headers, toolCallOfSize(LIMIT + 1))).status).toBe(413)
  })

  it("a small WO_BODY_LIMIT has the same edge", async () => {
    const small = await start(apps.blog, { bodyLimit: 300 })
    expect((await rawRequest(`${small.url}/api/articles`, { method: "POST", headers: JSON_TYPE, body: articleOfSize(300) })).status).toBe(201)
    const over = await rawRequest(`${small.url}/api/articles`, { method: "POST", headers: JSON_TYPE, body: articleOfSize(301) })
    expect(over.status).toBe(413)
    expect(over.json.message).toMatch(/exceeds 300 bytes/)
  })
})

/** `depth` levels of nesting, alternating arrays and objects. */
const nest = (depth: number): string => (depth === 0 ? "1" : depth % 2 ? `[${nest(depth - 1)}]` : `{"a":${nest(depth - 1)}}`)

describe("JSON nesting (WO_MAX_JSON_DEPTH, default 64): REST 400 InvalidJson, MCP 400 -32600", () => {
  it("at the default: depth 64 is parsed, 65 is refused, on both surfaces", async () => {
    const server = await start(apps.blog)
    const session = await openSession(server.url)
    // REST: the body object is level 1, so `extra` holds 63 more (64) or 64 more (65).
    const rest = (depth: number) =>
      rawRequest(`${server.url}/api/articles`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: `{"title":"t","body":"b","status":"draft","tags":[],"author":{"name":"A"},"extra":${nest(depth - 1)}}`
      })
    const at = await rest(64)
    expect(at.json.error).not.toBe("InvalidJson") // parsed; then judged by the schema
    const past = await rest(65)
    expect(past.status).toBe(400)
    expect(past.json.error).toBe("InvalidJson")
    expect(past.json.message).toMatch(/deeper than 64 levels \(WO_MAX_JSON_DEPTH\)/)
    // MCP: the envelope is level 1 and params level 2, so `x` holds depth - 2.
    const mcp = (depth: number) =>
      rawRequest(`${server.url}/mcp`, {
        method: "POST",
        headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
        body: `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":${nest(depth - 2)}}}`
      })
    const pong = await mcp(64)
    expect(pong.status).toBe(200)
    expect(pong.json).toEqual({ jsonrpc: "2.0", id: 3, result: {} })
    const deep = await mcp(65)
    expect(deep.status).toBe(400)
    expect(deep.json).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } })
    // Brackets inside strings are not nesting.
    const strings = await rawRequest(`${server.url}/mcp`, {
      method: "POST",
      headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 4, method: "ping", params: { x: "[".repeat(500) + "{\\\"".repeat(100) } })
    })
    expect(strings.json.result).toEqual({})
  })

  it("a small limit: a create at exactly the depth is created, one level more is refused", async () => {
    const server = await start(apps.blog, { maxJsonDepth: 2 })
    const body = (author: string) => `{"title":"t","body":"b","status":"draft","tags":[],"author":${author}}`
    const ok = await rawRequest(`${server.url}/api/articles`, { method: "POST", headers: { "content-type": "application/json" }, body: body(`{"name":"A"}`) })
    expect(ok.status).toBe(201)
    const deep = await rawRequest(`${server.url}/api/articles`, { method: "POST", headers: { "content-type": "application/json" }, body: body(`{"name":"A","email":["x"]}`) })
    expect(deep.status).toBe(400)
    expect(deep.json.error).toBe("InvalidJson") // the depth check comes before the schema
    // MCP at 4: envelope, params, arguments, author.
    const mcpServer = await start(apps.blog, { maxJsonDepth: 4 })
    const session = await openSession(mcpServer.url)
    const call = (author: unknown) =>
      sessionRequest(mcpServer.url, session, "tools/call", { name: "articles_create", arguments: { title: "t", body: "b", status: "draft", tags: [], author } })
    const created = await call({ name: "A" })
    expect(created.json.result.structuredContent).toMatchObject({ id: "1", version: 1 })
    const refused = await call({ name: "A", email: { nested: true } })
    expect(refused.status).toBe(400)
    expect(refused.json.error.code).toBe(-32600)
    expect(refused.json.error.message).toMatch(/WO_MAX_JSON_DEPTH/)
    expect((await http(`${mcpServer.url}/api/articles`)).json.items).toHaveLength(1)
  })
})

const initialize = (url: string) =>
  http(`${url}/mcp`, {
    method: "POST",
    headers: MCP_HEADERS,
    body: { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "edge", version: "1" } } }
  })

describe("sessions (WO_MAX_SESSIONS, default 10000): initialize 503 past the cap", () => {
  it("takes exactly the cap, refuses without minting, and a DELETE frees a slot at once", async () => {
    const server = await start(apps.pricing, { maxSessions: 3 })
    const ids = [await openSession(server.url), await openSession(server.url), await openSession(server.url)]
    const refused = await initialize(server.url)
    expect(refused.status).toBe(503)
    expect(refused.headers.get("mcp-session-id")).toBeNull()
    expect(refused.headers.get("retry-after")).toBe("1")
    expect(refused.json).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code: -32603, message: expect.stringMatching(/WO_MAX_SESSIONS=3/) } })
    expect((await rawRequest(`${server.url}/mcp`, { method: "DELETE", headers: { "mcp-session-id": ids[0] } })).status).toBe(200)
    expect((await initialize(server.url)).status).toBe(200) // the freed slot
    expect((await initialize(server.url)).status).toBe(503) // and only that one
    for (const id of ids.slice(1)) expect((await sessionRequest(server.url, id, "ping")).status).toBe(200)
  })
})

describe("listen streams (WO_MAX_LISTENS_PER_CLIENT, default 64; WO_MAX_LISTEN_STREAMS, default 10000): 429", () => {
  it("caps each client address and the total, with a JSON-RPC error, and frees a slot when a stream closes", async () => {
    const server = await start(apps.pricing, { maxListensPerClient: 2, maxListenStreams: 3 })
    const uris = ["wo://products/1"]
    const a1 = await rawListen(server.url, 1, uris, "127.0.0.1")
    const a2 = await rawListen(server.url, 2, uris, "127.0.0.1")
    for (const l of [a1, a2]) {
      expect(l.status).toBe(200)
      expect(l.first.method).toBe("notifications/subscriptions/acknowledged")
    }
    const a3 = await rawListen(server.url, 3, uris, "127.0.0.1")
    expect(a3.status).toBe(429)
    expect(a3.first).toMatchObject({ jsonrpc: "2.0", id: 3, error: { code: -32600, message: expect.stringMatching(/WO_MAX_LISTENS_PER_CLIENT=2/) } })
    // Another client address still has room, up to the total.
    const b1 = await rawListen(server.url, 4, uris, "127.0.0.2")
    expect(b1.status).toBe(200)
    const c1 = await rawListen(server.url, 5, uris, "127.0.0.3")
    expect(c1.status).toBe(429)
    expect(c1.first.error.message).toMatch(/WO_MAX_LISTEN_STREAMS=3/)
    // Closing a stream frees its slot (the server notices the close).
    a1.close()
    await a1.closed
    let again: Awaited<ReturnType<typeof rawListen>> | undefined
    expect(await waitFor(async () => {
      again?.close()
      again = await rawListen(server.url, 6, uris, "127.0.0.1")
      return again.status === 200
    })).toBe(true)
    for (const l of [a2, b1, again!]) l.close()
  })
})

describe("subscriptions (WO_MAX_SUBSCRIPTIONS, default 1000): -32602 past the cap", () => {
  it("a session takes exactly the cap; a refused subscription is not half made; unsubscribing frees a slot", async () => {
    const server = await start(apps.pricing, { maxSubscriptions: 3 })
    const session = await openSession(server.url)
    const sub = (n: number, method = "resources/subscribe") => sessionRequest(server.url, session, method, { uri: `wo://products/${n}` })
    for (const n of [1, 2, 3]) expect((await sub(n)).json.result).toEqual({})
    const fourth = await sub(4)
    expect(fourth.status).toBe(200)
    expect(fourth.json.error).toMatchObject({ code: -32602, message: expect.stringMatching(/WO_MAX_SUBSCRIPTIONS=3/) })
    expect((await sub(2)).json.result).toEqual({}) // already held: no new slot needed
    const stream = await openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } })
    for (let i = 1; i <= 4; i++) await http(`${server.url}/api/products`, { method: "POST", body: { name: "p", price: i, currency: "USD" } })
    const uris = [(await stream.nextJson())?.json.params.uri, (await stream.nextJson())?.json.params.uri, (await stream.nextJson())?.json.params.uri]
    expect(uris).toEqual(["wo://products/1", "wo://products/2", "wo://products/3"])
    expect(await stream.nextJson(300)).toBeUndefined() // products/4 was refused, so never notified
    expect((await sub(1, "resources/unsubscribe")).json.result).toEqual({})
    expect((await sub(4)).json.result).toEqual({})
    stream.close()
  })

  it("a listen asks for at most the cap (duplicates count once)", async () => {
    const server = await start(apps.pricing, { maxSubscriptions: 3 })
    const three = ["wo://products/1", "wo://products/2", "wo://products/3"]
    const ok = await openListen(server.url, "ok", three)
    expect(ok.status).toBe(200)
    expect((await ok.nextJson())?.json.params.notifications.resourceSubscriptions).toEqual(three)
    ok.close()
    const dup = await openListen(server.url, "dup", [...three, "wo://products/2"])
    expect((await dup.nextJson())?.json.params.notifications.resourceSubscriptions).toEqual(three)
    dup.close()
    const four = await rawRequest(`${server.url}/mcp`, { method: "POST", headers: modernHeaders("subscriptions/listen"), body: listenBody("four", [...three, "wo://products/4"]) })
    expect(four.status).toBe(200)
    expect(four.json).toMatchObject({ jsonrpc: "2.0", id: "four", error: { code: -32602, message: expect.stringMatching(/WO_MAX_SUBSCRIPTIONS=3/) } })
  })
})

describe("idle sessions (WO_SESSION_IDLE_MS, default 30 min): 404 after expiry", () => {
  it("activity and an open GET stream keep a session; an idle one is gone for POST, GET and DELETE", async () => {
    // The busy session is pinged every 250 ms against a 2 s window: a loaded machine's stall of the test process
    // would have to pass 1.75 s to let it expire. It is pinged until the idle one is swept (counted in the process,
    // without a request that would touch it), not for a fixed time.
    const server = await start(apps.pricing, { sessionIdleMs: 2000 })
    const sessions = server.runtime.runSync(Sessions)
    const busy = await openSession(server.url)
    const streaming = await openSession(server.url)
    const idle = await openSession(server.url)
    const stream = await openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": streaming } })
    expect(stream.status).toBe(200)
    expect(sessions.count()).toBe(3)
    for (let t = 0; t < 400 && sessions.count() === 3; t++) {
      await sleep(250)
      expect((await sessionRequest(server.url, busy, "ping")).status, `busy session at ${t * 250} ms`).toBe(200)
    }
    expect(sessions.count()).toBe(2)
    expect(stream.ended()).toBe(false)
    stream.close()
    expect((await sessionRequest(server.url, streaming, "ping")).status).toBe(200)
    expect((await sessionRequest(server.url, idle, "ping")).status).toBe(404)
    const get = await rawRequest(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": idle } })
    expect(get.status).toBe(404)
    expect(get.json.error.code).toBe(-32600)
    expect((await rawRequest(`${server.url}/mcp`, { method: "DELETE", headers: { "mcp-session-id": idle } })).status).toBe(404)
  })
})

describe("per-stream buffer (WO_STREAM_BUFFER, default 1024): closed on overflow", () => {
  // One durable batch delivers its notices synchronously, before the stream's writer can drain any. The
  // writer of an idle stream is already waiting on the buffer, so the first notice goes straight to it and
  // the next N fill the buffer: a batch of N + 1 changes to a watched row is the most an idle stream can
  // take, and N + 2 overflows it. The burst is one batch by construction, whatever the machine's load: a first
  // write (on another row) is held at the disk until every write of the burst has reported "accepted" (queued
  // for the writer, through an MCP progressToken), then the disk is released.
  const N = 8
  const setup = async () => {
    let gate: Deferred.Deferred<void> | undefined
    const batches: Array<number> = []
    const faults = Layer.succeed(LogFaults, {
      beforeWrite: (events: number) => Effect.suspend(() => (batches.push(events), gate ? Deferred.await(gate) : Effect.void))
    })
    const server = await start(apps.pricing, { streamBuffer: N }, faults)
    for (let i = 1; i <= 2; i++) await http(`${server.url}/api/products`, { method: "POST", body: { name: "p", price: 1, currency: "USD" } })
    const session = await openSession(server.url)
    const writer = await openSession(server.url) // sends the burst; subscribed to nothing
    await sessionRequest(server.url, session, "resources/subscribe", { uri: "wo://products/1" })
    const get = await openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } })
    const listen = await openListen(server.url, "buf", ["wo://products/1"])
    expect((await listen.nextJson())?.json.method).toBe("notifications/subscriptions/acknowledged")
    let version1 = 1 // products/1 as created above
    const burst = async (k: number) => {
      gate = Effect.runSync(Deferred.make<void>())
      const heldAt = batches.length
      const held = http(`${server.url}/api/products/2/set_price`, { method: "POST", body: { price: 2 } })
      expect(await waitFor(() => batches.length === heldAt + 1, 30_000)).toBe(true) // the writer now waits on the gate
      const before = batches.length
      const writes = await Promise.all(Array.from({ length: k }, (_, i) =>
        openSse(`${server.url}/mcp`, {
          method: "POST",
          headers: { ...MCP_HEADERS, "mcp-session-id": writer, "mcp-protocol-version": "2025-11-25" },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 500 + i,
            method: "tools/call",
            params: { name: "products_set_price", arguments: { id: "1", price: 10 + i }, _meta: { progressToken: i } }
          })
        })))
      for (const w of writes) expect((await w.nextJson(10_000))?.json.params.message).toBe("accepted")
      expect(batches.length, "nothing else reached the disk while it was held").toBe(before)
      const open = gate
      gate = undefined
      Effect.runSync(Deferred.succeed(open, undefined))
      expect((await held).status).toBe(200)
      const versions: Array<number> = []
      for (const w of writes) {
        let last: any
        for (let m = await w.nextJson(10_000); m !== undefined; m = await w.nextJson(10_000)) last = m.json
        versions.push(last?.result?.structuredContent?.version)
      }
      versions.sort((a, b) => a - b)
      expect(versions, "every write of the burst committed").toEqual(Array.from({ length: k }, (_, i) => version1 + 1 + i))
      version1 += k
      expect(batches.slice(before), "the burst must be one durable batch").toEqual([k])
    }
    /**
     * The notices of a stream: `count` of them (each awaited with a deadline no slow machine reaches), then any
     * more until the stream ends or stays quiet for a moment. The caller asserts the count and `ended()`; the
     * quiet moment can only let an extra notice go unseen on a loaded machine, never fail a good run.
     */
    const drain = async (s: Awaited<ReturnType<typeof openSse>>, count: number) => {
      const got: Array<any> = []
      while (got.length < count) {
        const m = await s.nextJson(10_000)
        if (m === undefined) break
        got.push(m.json)
      }
      for (let m = await s.nextJson(300); m !== undefined; m = await s.nextJson(300)) got.push(m.json)
      return got
    }
    return { server, get, listen, burst, drain }
  }

  it("a burst filling the buffer exactly (N, plus the one in the writer's hands) is kept, and the stream stays open", async () => {
    const { server, get, listen, burst, drain } = await setup()
    await burst(N + 1)
    const fromGet = await drain(get, N + 1)
    const fromListen = await drain(listen, N + 1)
    expect(fromGet).toHaveLength(N + 1)
    expect(fromListen).toHaveLength(N + 1)
    expect(fromListen.every((m) => m.method === "notifications/resources/updated" && m.params._meta[SUBSCRIPTION_ID] === "buf")).toBe(true)
    expect(get.ended() || listen.ended()).toBe(false)
    await http(`${server.url}/api/products/1/set_price`, { method: "POST", body: { price: 99 } })
    expect((await get.nextJson())?.json.params.uri).toBe("wo://products/1")
    expect((await listen.nextJson())?.json.params.uri).toBe("wo://products/1")
    get.close()
    listen.close()
  })

  it("one notice more closes both streams after those that fit; a listen closed by overflow gets no result", async () => {
    const { get, listen, burst, drain } = await setup()
    await burst(N + 2)
    const fromGet = await drain(get, N + 1)
    const fromListen = await drain(listen, N + 1)
    expect(get.ended()).toBe(true)
    expect(listen.ended()).toBe(true)
    expect(fromGet).toHaveLength(N + 1)
    expect(fromListen).toHaveLength(N + 1)
    expect(fromListen.some((m) => "result" in m)).toBe(false)
  })
})

describe("request timeout on a stalled request (WO_REQUEST_TIMEOUT_MS, default 30 s): 408 or close", () => {
  const TIMEOUT = 1000
  /** Writes `head` on a raw socket, then waits for the answer or the close; resolves with what came and when. */
  const stall = (port: number, head: string, rest?: { afterMs: number; text: string }) =>
    new Promise<{ ms: number; text: string }>((resolve) => {
      const started = Date.now()
      const socket = net.connect(port, "127.0.0.1")
      let text = ""
      socket.setEncoding("utf8")
      socket.on("data", (c: string) => (text += c))
      socket.on("close", () => resolve({ ms: Date.now() - started, text }))
      socket.on("error", () => {})
      socket.write(head)
      if (rest) setTimeout(() => socket.write(rest.text), rest.afterMs)
      // A complete answer on a keep-alive socket does not close it: end it once it is in.
      socket.on("data", () => /\r\n\r\n[\s\S]*\}$/.test(text) && socket.end())
    })

  it("answers 408 or closes a request whose body stalls, and one whose headers stall, after the timeout", async () => {
    const server = await start(apps.blog, { requestTimeoutMs: TIMEOUT })
    const port = Number(new URL(server.url).port)
    const body = `{"title":"slow","body":"b","status":"draft","tags":[],"author":{"name":"S"}}`
    const [bodyStall, headerStall] = await Promise.all([
      stall(port, `POST /api/articles HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`),
      stall(port, `POST /api/articles HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl`)
    ])
    for (const r of [bodyStall, headerStall]) {
      expect(r.ms).toBeGreaterThanOrEqual(TIMEOUT - 50)
      expect(r.ms).toBeLessThan(TIMEOUT + 3000)
      expect(r.text === "" || /^HTTP\/1\.1 408/.test(r.text), r.text).toBe(true)
    }
    expect((await http(`${server.url}/api/articles`)).json.items).toEqual([]) // the stalled create never ran
  })

  it("serves a slow body that completes within the timeout, and never times out a response stream", async () => {
    const server = await start(apps.blog, { requestTimeoutMs: TIMEOUT })
    const port = Number(new URL(server.url).port)
    const body = `{"title":"slow","body":"b","status":"draft","tags":[],"author":{"name":"S"}}`
    const session = await openSession(server.url)
    await sessionRequest(server.url, session, "resources/subscribe", { uri: "wo://articles/1" })
    const stream = await openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session } })
    const slow = await stall(
      port,
      `POST /api/articles HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
      { afterMs: TIMEOUT / 2, text: body.slice(10) }
    )
    expect(slow.text).toMatch(/^HTTP\/1\.1 201/)
    await sleep(TIMEOUT * 1.5) // the GET stream has now been open for over twice the request timeout
    expect(stream.ended()).toBe(false)
    expect((await stream.nextJson())?.json.params.uri).toBe("wo://articles/1")
    await http(`${server.url}/api/articles/1`, { method: "PATCH", body: { title: "later" } })
    expect((await stream.nextJson())?.json.params.uri).toBe("wo://articles/1")
    stream.close()
  })
})

describe("one GET stream per session: only a real GET takes the session's stream", () => {
  it("a HEAD /mcp with the session id neither opens a stream nor ends the session's GET stream", async () => {
    const server = await start(apps.pricing)
    const session = await openSession(server.url)
    await sessionRequest(server.url, session, "resources/subscribe", { uri: "wo://products/1" })
    const get = await openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session } })
    expect(get.status).toBe(200)
    const head = await rawRequest(`${server.url}/mcp`, { method: "HEAD", headers: { accept: "text/event-stream", "mcp-session-id": session } })
    expect(head.text).toBe("")
    await sleep(200)
    expect(get.ended()).toBe(false)
    await http(`${server.url}/api/products`, { method: "POST", body: { name: "p", price: 1, currency: "USD" } })
    expect((await get.nextJson())?.json.params.uri).toBe("wo://products/1")
    get.close()
  })
})
