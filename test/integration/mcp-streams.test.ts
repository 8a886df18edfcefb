import { Deferred, Effect, Layer } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { LevelDb } from "../../src/log/classic-level/level-db.ts"
import { eventKey } from "../../src/log/classic-level/log-keys.ts"
import { LogFaults } from "../../testkit/log-faults.ts"
import { MCP_HEADERS, openSession } from "../../testkit/legacy-client.ts"
import { openSse } from "../../testkit/sse.ts"
import { apps, http, rawRequest, startServer, tempDir } from "../../testkit/server.ts"

const servers: Array<{ close: () => Promise<void> }> = []
const start = async (...args: Parameters<typeof startServer>) => {
  const s = await startServer(...args)
  servers.push(s)
  return s
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

let ids = 100
const post = (url: string, session: string, method: string, params?: unknown, version = "2025-11-25") =>
  http(`${url}/mcp`, {
    method: "POST",
    headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": version },
    body: { jsonrpc: "2.0", id: ids++, method, ...(params === undefined ? {} : { params }) }
  })
const getStream = (url: string, session: string, lastEventId?: string) =>
  openSse(`${url}/mcp`, {
    headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25", ...(lastEventId ? { "last-event-id": lastEventId } : {}) }
  })
const createProduct = async (url: string, price = 1) =>
  (await http(`${url}/api/products`, { method: "POST", body: { name: "p", price, currency: "USD" } })).json
const setPrice = (url: string, id: string, price: number) =>
  http(`${url}/api/products/${id}/set_price`, { method: "POST", body: { price } })

describe("legacy sessions", () => {
  it("mints a random session id, requires it, and ends it with DELETE", async () => {
    const server = await start(apps.pricing)
    const a = await openSession(server.url)
    const b = await openSession(server.url)
    expect(a).not.toBe(b)
    expect(a).toMatch(/^[\x21-\x7e]{22,}$/)
    expect(Buffer.from(a, "base64url").length * 8).toBeGreaterThanOrEqual(128)
    expect((await post(server.url, a, "ping")).json.result).toEqual({})
    // A supported version other than the session's is served as the session's.
    expect((await post(server.url, a, "ping", undefined, "2025-03-26")).status).toBe(200)
    expect((await post(server.url, a, "ping", undefined, "2031-01-01")).status).toBe(400)
    const del = await rawRequest(`${server.url}/mcp`, { method: "DELETE", headers: { "mcp-session-id": a } })
    expect(del.status).toBe(200)
    expect((await post(server.url, a, "ping")).status).toBe(404)
    expect((await rawRequest(`${server.url}/mcp`, { method: "DELETE", headers: { "mcp-session-id": a } })).status).toBe(404)
    expect((await post(server.url, b, "ping")).status).toBe(200)
  })

  it("caps the number of sessions and expires idle ones", async () => {
    const server = await start(apps.pricing, { maxSessions: 2, sessionIdleMs: 1000 })
    const initialize = () =>
      http(`${server.url}/mcp`, {
        method: "POST",
        headers: MCP_HEADERS,
        body: { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "x" } } }
      })
    // A session with an open GET stream is in use and never expires, so each is held that way as soon as it
    // exists: however slow the machine, no slot is freed by expiry while the cap is checked.
    const a = await openSession(server.url)
    const aStream = await getStream(server.url, a)
    const b = await openSession(server.url)
    const bStream = await getStream(server.url, b)
    expect([aStream.status, bStream.status]).toEqual([200, 200])
    const third = await initialize()
    expect(third.status).toBe(503)
    expect(third.json.error.message).toMatch(/WO_MAX_SESSIONS/)
    expect(third.headers.get("mcp-session-id")).toBeNull()

    // Now only a is idle (b's stream keeps b in use), so the one slot that can free up is a's, once it expires.
    // Wait for that by asking for a session (which touches neither a nor b), not for some time.
    aStream.close()
    let room = await initialize()
    for (const until = Date.now() + 30_000; room.status === 503 && Date.now() < until; room = await initialize()) {
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(room.status).toBe(200) // room again
    expect(room.headers.get("mcp-session-id")).toBeTruthy()
    expect((await post(server.url, a, "ping")).status).toBe(404) // expired
    expect((await post(server.url, b, "ping")).status).toBe(200) // in use all along: kept, though idle as long as a
    bStream.close()
  })
})

describe("subscriptions and the GET stream", () => {
  it("notifies each committed change once, only to the session subscribed, whatever made it", async () => {
    const server = await start(apps.pricing)
    const watcher = await openSession(server.url)
    const other = await openSession(server.url)
    expect((await post(server.url, watcher, "resources/subscribe", { uri: "wo://products/1" })).json.result).toEqual({})
    expect((await post(server.url, watcher, "resources/subscribe", { uri: "test://watched-resource" })).json.result).toEqual({})
    expect((await post(server.url, other, "resources/subscribe", { uri: "wo://products/2" })).json.result).toEqual({})
    const stream = await getStream(server.url, watcher)
    const otherStream = await getStream(server.url, other)
    expect(stream.status).toBe(200)
    expect(stream.headers["content-type"]).toBe("text/event-stream")
    expect(stream.headers["x-accel-buffering"]).toBe("no")

    await createProduct(server.url) // id 1: did not exist when subscribed
    const created = await stream.nextJson()
    expect(created?.json).toEqual({ jsonrpc: "2.0", method: "notifications/resources/updated", params: { uri: "wo://products/1" } })
    expect(created?.id).toMatch(/^get-\d+$/)
    await setPrice(server.url, "1", 5) // REST method
    await post(server.url, other, "tools/call", { name: "products_set_price", arguments: { id: "1", price: 6 } }) // MCP method
    expect((await stream.nextJson())?.json.params.uri).toBe("wo://products/1")
    expect((await stream.nextJson())?.json.params.uri).toBe("wo://products/1")
    expect(await stream.nextJson(300)).toBeUndefined() // exactly once each
    expect(await otherStream.nextJson(300)).toBeUndefined() // never broadcast to other sessions

    await post(server.url, watcher, "resources/unsubscribe", { uri: "wo://products/1" })
    await setPrice(server.url, "1", 7)
    expect(await stream.nextJson(300)).toBeUndefined()
    stream.close()
    otherStream.close()
  })

  it("notifies a delete", async () => {
    const server = await start(apps.blog)
    const session = await openSession(server.url)
    const { json: row } = await http(`${server.url}/api/articles`, { method: "POST", body: { title: "t", body: "b", status: "draft", tags: [], author: { name: "A" } } })
    await post(server.url, session, "resources/subscribe", { uri: `wo://articles/${row.id}` })
    const stream = await getStream(server.url, session)
    await http(`${server.url}/api/articles/${row.id}`, { method: "DELETE" })
    expect((await stream.nextJson())?.json.params.uri).toBe(`wo://articles/${row.id}`)
    stream.close()
  })

  it("replaces the first GET stream with the second", async () => {
    const server = await start(apps.pricing)
    const session = await openSession(server.url)
    await post(server.url, session, "resources/subscribe", { uri: "wo://products/1" })
    const first = await getStream(server.url, session)
    const second = await getStream(server.url, session)
    expect(await first.next(1000)).toBeUndefined()
    expect(first.ended()).toBe(true)
    await createProduct(server.url)
    expect((await second.nextJson())?.json.params.uri).toBe("wo://products/1")
    second.close()
  })

  it("sends heartbeats on an idle stream", async () => {
    const server = await start(apps.pricing, { heartbeatMs: 100 })
    const session = await openSession(server.url)
    const stream = await openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session }, comments: true })
    expect((await stream.next(1000))?.comment).toBe("heartbeat")
    expect((await stream.next(1000))?.comment).toBe("heartbeat")
    stream.close()
  })
})

describe("resumption from the durable log", () => {
  it("replays exactly what the stream missed after Last-Event-ID, then goes on live", async () => {
    const server = await start(apps.pricing)
    const session = await openSession(server.url)
    await createProduct(server.url) // 1
    await createProduct(server.url) // 2, never subscribed
    await post(server.url, session, "resources/subscribe", { uri: "wo://products/1" })
    const first = await getStream(server.url, session)
    await setPrice(server.url, "1", 2)
    const seen = await first.nextJson()
    first.close()
    await new Promise((r) => setTimeout(r, 50))
    await setPrice(server.url, "1", 3) // missed
    await setPrice(server.url, "2", 3) // not subscribed
    await setPrice(server.url, "1", 4) // missed
    const resumed = await getStream(server.url, session, seen!.id)
    const replayed = [await resumed.nextJson(), await resumed.nextJson()]
    expect(replayed.map((m) => m?.json.params.uri)).toEqual(["wo://products/1", "wo://products/1"])
    const seqs = [seen!.id, ...replayed.map((m) => m!.id)].map((id) => Number(id!.slice(4)))
    expect(seqs[1]).toBeGreaterThan(seqs[0])
    expect(seqs[2]).toBeGreaterThan(seqs[1])
    expect(await resumed.nextJson(300)).toBeUndefined()
    await setPrice(server.url, "1", 5)
    expect((await resumed.nextJson())?.json.params.uri).toBe("wo://products/1")
    resumed.close()
  })

  it("ends the resumed stream visibly when the log cannot be read, instead of going on live past a gap", async () => {
    const server = await start(apps.pricing)
    const session = await openSession(server.url)
    await createProduct(server.url) // seq 1
    await post(server.url, session, "resources/subscribe", { uri: "wo://products/1" })
    await setPrice(server.url, "1", 2) // seq 2: the client saw up to here
    await setPrice(server.url, "1", 3) // seq 3: missed, and then damaged on disk
    await server.runtime.runPromise(
      Effect.flatMap(LevelDb, (store) => store.write("damage", (db) => db.put(eventKey(3), "00000000{}")))
    )
    const resumed = await getStream(server.url, session, "get-2")
    expect(await resumed.nextJson(5000)).toBeUndefined()
    expect(resumed.ended()).toBe(true) // closed: the client reconnects from get-2, nothing skipped silently
    await setPrice(server.url, "1", 4)
    expect(await resumed.nextJson(300)).toBeUndefined()
  })

  it("keeps sessions and subscriptions across a restart, and replays what was missed", async () => {
    const dataDir = tempDir()
    const first = await startServer(apps.pricing, { dataDir })
    await createProduct(first.url)
    const session = await openSession(first.url)
    await post(first.url, session, "resources/subscribe", { uri: "wo://products/1" })
    const stream = await getStream(first.url, session)
    await setPrice(first.url, "1", 2)
    const seen = await stream.nextJson()
    stream.close()
    await setPrice(first.url, "1", 3) // missed before the restart
    await first.close()

    const second = await start(apps.pricing, { dataDir })
    await setPrice(second.url, "1", 4) // missed after the restart
    const resumed = await getStream(second.url, session, seen!.id)
    expect(resumed.status).toBe(200)
    const missed = [await resumed.nextJson(), await resumed.nextJson()]
    expect(missed.map((m) => m?.json.params.uri)).toEqual(["wo://products/1", "wo://products/1"])
    expect(await resumed.nextJson(300)).toBeUndefined()
    resumed.close()
  })
})

describe("streamed responses", () => {
  it("answers a tools/call with a progressToken as SSE: priming, accepted, decided, durable, result", async () => {
    const server = await start(apps.pricing)
    const { id } = await createProduct(server.url)
    const session = await openSession(server.url)
    const res = await openSse(`${server.url}/mcp`, {
      method: "POST",
      headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "products_set_price", arguments: { id, price: 8 }, _meta: { progressToken: "p1" } } })
    })
    expect(res.headers["content-type"]).toBe("text/event-stream")
    expect(res.headers["cache-control"]).toBe("no-cache")
    const priming = await res.next()
    expect(priming?.id).toBeTruthy()
    expect(priming?.data).toBe("")
    const stages = [await res.nextJson(), await res.nextJson(), await res.nextJson()].map((m) => m?.json.params)
    expect(stages.map((p) => p.message)).toEqual(["accepted", "decided", "durable"])
    expect(stages.map((p) => p.progress)).toEqual([1, 2, 3])
    expect(stages.every((p) => p.progressToken === "p1" && p.total === 3)).toBe(true)
    const result = await res.nextJson()
    expect(result?.json).toMatchObject({ id: 9, result: { structuredContent: { id, price: 8, version: 2 } } })
    expect(await res.next(500)).toBeUndefined()
    expect(res.ended()).toBe(true)
  })

  it("sends no priming event before 2025-11-25", async () => {
    const server = await start(apps.pricing)
    const { id } = await createProduct(server.url)
    const session = await openSession(server.url, "2025-06-18")
    const res = await openSse(`${server.url}/mcp`, {
      method: "POST",
      headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/call", params: { name: "products_get", arguments: { id }, _meta: { progressToken: 7 } } })
    })
    const first = await res.next()
    expect(first?.data).not.toBe("")
  })
})

describe("bounded buffers: an overflowing stream is closed, others are untouched", () => {
  it("closes the stream whose buffer overflows; its client resumes with Last-Event-ID and loses nothing", async () => {
    // One durable batch delivers its notices synchronously, before a stream's writer can drain any, so a batch
    // of more than streamBuffer + 1 changes to watched rows overflows the buffer (the exact edge is in
    // test/reliability/limits.test.ts). The burst must be one batch whatever the machine's load: the first
    // write is held at the disk until each of the other 63 has reported "accepted" (queued for the writer).
    const batches: Array<number> = []
    let hold: { readonly entered: Deferred.Deferred<void>; readonly gate: Deferred.Deferred<void> } | undefined
    const heldDisk = Layer.succeed(LogFaults, {
      beforeWrite: (events: number) =>
        Effect.suspend(() => {
          batches.push(events)
          const h = hold
          hold = undefined
          return h === undefined ? Effect.void : Deferred.succeed(h.entered, undefined).pipe(Effect.zipRight(Deferred.await(h.gate)))
        })
    })
    const server = await start(apps.blog, { streamBuffer: 16 }, heldDisk)
    const flooded = await openSession(server.url)
    const calm = await openSession(server.url)
    const writer = await openSession(server.url)
    for (let i = 1; i <= 64; i++) await post(server.url, flooded, "resources/subscribe", { uri: `wo://articles/${i}` })
    await post(server.url, calm, "resources/subscribe", { uri: "wo://articles/1" })
    const floodedStream = await getStream(server.url, flooded)
    const calmStream = await getStream(server.url, calm)

    const article = { title: "t", body: "b", status: "draft", tags: [], author: { name: "A" } }
    const h = { entered: Effect.runSync(Deferred.make<void>()), gate: Effect.runSync(Deferred.make<void>()) }
    hold = h
    const before = batches.length
    const first = http(`${server.url}/api/articles`, { method: "POST", body: article }) // article 1
    await Effect.runPromise(Deferred.await(h.entered)) // the writer now waits on the gate
    const burst = await Promise.all(Array.from({ length: 63 }, (_, i) =>
      openSse(`${server.url}/mcp`, {
        method: "POST",
        headers: { ...MCP_HEADERS, "mcp-session-id": writer, "mcp-protocol-version": "2025-11-25" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1000 + i, method: "tools/call", params: { name: "articles_create", arguments: article, _meta: { progressToken: i } } })
      })))
    for (const call of burst) expect((await call.nextJson(10_000))?.json.params.message).toBe("accepted")
    Effect.runSync(Deferred.succeed(h.gate, undefined))
    expect((await first).status).toBe(201)
    const created: Array<string> = []
    for (const call of burst) {
      let last: any
      for (let m = await call.nextJson(10_000); m !== undefined; m = await call.nextJson(10_000)) last = m.json
      created.push(String(last?.result?.structuredContent?.id))
    }
    expect(created.sort()).toEqual(Array.from({ length: 63 }, (_, i) => String(i + 2)).sort())
    expect(batches.slice(before), "the held write, then the burst as one durable batch").toEqual([1, 63])

    // The flooded stream ends (read until the server closes it; at most 64 notices can come).
    const got: Array<{ id?: string; json: any }> = []
    for (let m = await floodedStream.nextJson(10_000); m !== undefined && got.length < 64; m = await floodedStream.nextJson(10_000)) got.push(m)
    expect(floodedStream.ended()).toBe(true) // closed by the server, not buffered without bound
    expect(got.length).toBeLessThan(64)
    expect((await calmStream.nextJson(10_000))?.json.params.uri).toBe("wo://articles/1")
    expect(calmStream.ended()).toBe(false)

    // Resuming gets exactly the rest: read until all 64 are in hand, then nothing more may come.
    const resumed = await getStream(server.url, flooded, got.length ? got[got.length - 1].id : "get-0")
    const rest: Array<string> = []
    while (got.length + rest.length < 64) {
      const m = await resumed.nextJson(10_000)
      if (m === undefined) break
      rest.push(m.json.params.uri)
    }
    expect(await resumed.nextJson(300)).toBeUndefined() // nothing twice
    const all = [...got.map((m) => m.json.params.uri), ...rest].sort()
    expect(all).toEqual(Array.from({ length: 64 }, (_, i) => `wo://articles/${i + 1}`).sort())
    resumed.close()
    calmStream.close()
  })
})
