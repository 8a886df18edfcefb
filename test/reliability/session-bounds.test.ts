/**
 * Bounded per-session state. Unbounded, 250 subscribes on one legacy session with 100,000-character URIs take
 * 43 s, each slower than the last, when each rewrites the session's whole subscription list to the store; RSS goes
 * from 147 MB to 620 MB and stays there after a restart.
 *
 * What holds: a URI is at most WO_MAX_URI_LENGTH bytes (-32602 before any work), a session's URIs are at most
 * WO_MAX_SUBSCRIPTION_BYTES in all, a subscribe writes one entry whatever the session holds, and an ended session
 * leaves nothing in the registry or the store. Counted, never timed: bytes appended to LevelDB's write-ahead log
 * per subscribe, entries in the store, the registry's counts, the server's RSS.
 */
import { ClassicLevel } from "classic-level"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { LevelDb } from "../../src/log/classic-level/level-db.ts"
import { SubscriptionRegistry } from "../../src/subscriptions/registry.ts"
import { openSession } from "../../testkit/legacy-client.ts"
import { listenBody, modernHeaders, openListen } from "../../testkit/modern-client.ts"
import { openSse } from "../../testkit/sse.ts"
import { rssKb } from "../../testkit/spawn.ts"
import { apps, http, rawRequest, ROOT, spawnServer, startServer, tempDir } from "../../testkit/server.ts"
import { sessionRequest } from "../../testkit/write-traffic.ts"

const servers: Array<{ close: () => Promise<void> }> = []
const start = async (...args: Parameters<typeof startServer>) => {
  const s = await startServer(...args)
  servers.push(s)
  return s
}
const spawned: Array<{ stop: () => Promise<unknown> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
  await Promise.all(spawned.splice(0).map((s) => s.stop()))
})
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const MAX = 2048
/** A URI of exactly `bytes` UTF-8 bytes: `prefix` padded with `pad`. */
const uriOf = (prefix: string, bytes: number, pad = "9") => prefix + pad.repeat(bytes - Buffer.byteLength(prefix))
const product = { name: "p", price: 1, currency: "USD" }

/** The session store's entries of the running in-process server (`s!` keys in its classic-level store). */
const storedSessionEntries = (server: Awaited<ReturnType<typeof startServer>>) =>
  server.runtime.runPromise(Effect.flatMap(LevelDb, (store) =>
    store.read("count", async (db) => {
      const keys: Array<string> = []
      for await (const key of db.keys({ gte: "s!", lt: "s!~" })) keys.push(key)
      return keys
    })))
const registryStats = (server: Awaited<ReturnType<typeof startServer>>) =>
  server.runtime.runPromise(Effect.map(SubscriptionRegistry, (r) => r.stats()))
/** The session's subscriptions as `GET /api/_agents` shows them (it shows the first 8 characters of the id). */
const agentSubscriptions = async (url: string, session: string): Promise<Array<string> | undefined> =>
  (await http(`${url}/api/_agents`)).json.sessions.find((s: any) => s.id === `${session.slice(0, 8)}…`)?.subscriptions

describe("URI length (WO_MAX_URI_LENGTH, default 2048 bytes): -32602 naming the limit, before any work", () => {
  it("legacy subscribe, unsubscribe and read, row and live-query URIs: exactly 2048 bytes is taken, one more is refused", async () => {
    const server = await start(apps.pricing)
    await http(`${server.url}/api/products`, { method: "POST", body: product })
    const session = await openSession(server.url)
    const call = (method: string, uri: string) => sessionRequest(server.url, session, method, { uri })
    const refusedAsTooLong = (res: Awaited<ReturnType<typeof call>>) => {
      expect(res.status).toBe(200)
      expect(res.json.error).toMatchObject({ code: -32602, message: `uri is longer than ${MAX} bytes (WO_MAX_URI_LENGTH=${MAX})` })
      expect(res.text.length, "the refusal does not echo the URI").toBeLessThan(500)
    }
    // A row URI names a canonical id (at most 12 digits), so a long one is refused for its id, not its length.
    expect((await call("resources/subscribe", uriOf("wo://products/", MAX))).json.error).toMatchObject({ code: -32602 })
    const liveQuery = uriOf("wo://products?name=", MAX, "x")
    const otherLiveQuery = uriOf("wo://products?name=y", MAX, "x")
    expect((await call("resources/subscribe", liveQuery)).json.result).toEqual({})
    expect((await call("resources/subscribe", otherLiveQuery)).json.result).toEqual({})
    refusedAsTooLong(await call("resources/subscribe", uriOf("wo://products/", MAX + 1)))
    refusedAsTooLong(await call("resources/subscribe", uriOf("wo://products?name=", MAX + 1, "x")))
    // Bytes, not characters: 1,030 two-byte characters are fewer than 2048 characters but more than 2048 bytes.
    refusedAsTooLong(await call("resources/subscribe", uriOf("wo://products?name=", MAX + 2, "é")))
    refusedAsTooLong(await call("resources/unsubscribe", uriOf("wo://products/", MAX + 1)))
    refusedAsTooLong(await call("resources/read", uriOf("wo://products/", MAX + 1)))
    expect((await call("resources/read", uriOf("wo://products?name=", MAX, "x"))).json.result.contents).toHaveLength(1)
    // Only the two at the limit were made.
    expect(await agentSubscriptions(server.url, session)).toEqual([liveQuery, otherLiveQuery])
  })

  it("a modern listen: a resourceSubscriptions URI of 2048 bytes is acknowledged, one of 2049 is refused", async () => {
    const server = await start(apps.pricing)
    const ok = await openListen(server.url, "ok", [uriOf("wo://products?name=", MAX, "x")])
    expect(ok.status).toBe(200)
    expect((await ok.nextJson())?.json.method).toBe("notifications/subscriptions/acknowledged")
    ok.close()
    for (const uri of [uriOf("wo://products/", MAX + 1), uriOf("wo://products?name=", MAX + 1, "x")]) {
      const refused = await rawRequest(`${server.url}/mcp`, { method: "POST", headers: modernHeaders("subscriptions/listen"), body: listenBody("long", ["wo://products/1", uri]) })
      expect(refused.status).toBe(200)
      expect(refused.json).toMatchObject({ jsonrpc: "2.0", id: "long", error: { code: -32602, message: expect.stringMatching(/WO_MAX_URI_LENGTH=2048/) } })
    }
    expect((await registryStats(server)).liveQueries).toBe(0)
  })
})

describe("subscription bytes (WO_MAX_SUBSCRIPTION_BYTES, default 1 MiB): -32602 past the total", () => {
  it("a session holds exactly the total; a refused subscription is not made; unsubscribing frees its bytes; a listen asks for at most the total", async () => {
    const server = await start(apps.pricing, { maxSubscriptionBytes: 100 })
    const session = await openSession(server.url)
    const [a, b, c] = ["wo://products?name=a", "wo://products?name=b", "wo://products?name=c"].map((p) => uriOf(p, 50, "x"))
    const sub = (uri: string, method = "resources/subscribe") => sessionRequest(server.url, session, method, { uri })
    expect((await sub(a)).json.result).toEqual({})
    expect((await sub(b)).json.result).toEqual({}) // 100 bytes: exactly the total
    const third = await sub(c)
    expect(third.json.error).toMatchObject({ code: -32602, message: expect.stringMatching(/more than 100 bytes of URIs \(WO_MAX_SUBSCRIPTION_BYTES=100\)/) })
    expect((await sub(a)).json.result).toEqual({}) // already held: no new bytes
    expect(await agentSubscriptions(server.url, session)).toEqual([a, b])
    expect((await sub(a, "resources/unsubscribe")).json.result).toEqual({})
    expect((await sub(c)).json.result).toEqual({})
    expect(await agentSubscriptions(server.url, session)).toEqual([b, c])

    const two = await openListen(server.url, "two", [a, b, a]) // duplicates count once
    expect((await two.nextJson())?.json.params.notifications.resourceSubscriptions).toEqual([a, b])
    two.close()
    const three = await rawRequest(`${server.url}/mcp`, { method: "POST", headers: modernHeaders("subscriptions/listen"), body: listenBody("three", [a, b, c]) })
    expect(three.json).toMatchObject({ id: "three", error: { code: -32602, message: expect.stringMatching(/WO_MAX_SUBSCRIPTION_BYTES=100/) } })
  })
})

describe("an ended session keeps nothing", () => {
  it("after DELETE and after idle expiry, nothing of its subscriptions is left in the registry or the store", async () => {
    const server = await start(apps.pricing, { sessionIdleMs: 1000 })
    const uris = ["wo://products/1", "wo://products/2", "wo://products?name=p"]
    const deleted = await openSession(server.url)
    for (const uri of uris) expect((await sessionRequest(server.url, deleted, "resources/subscribe", { uri })).json.result).toEqual({})
    // One header and one entry per subscription.
    expect(await storedSessionEntries(server)).toHaveLength(1 + uris.length)
    const stream = await openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": deleted } })
    expect(await registryStats(server)).toMatchObject({ uris: 3, subscriptions: 3, liveQueries: 1 })
    expect((await rawRequest(`${server.url}/mcp`, { method: "DELETE", headers: { "mcp-session-id": deleted } })).status).toBe(200)
    expect(await registryStats(server)).toMatchObject({ uris: 0, subscriptions: 0, liveQueries: 0 })
    expect(await storedSessionEntries(server)).toEqual([])
    stream.close()

    const idle = await openSession(server.url)
    for (const uri of uris) await sessionRequest(server.url, idle, "resources/subscribe", { uri })
    expect(await storedSessionEntries(server)).toHaveLength(1 + uris.length)
    const until = Date.now() + 10_000
    while ((await storedSessionEntries(server)).length > 0 && Date.now() < until) await sleep(100)
    expect(await storedSessionEntries(server)).toEqual([])
    expect((await http(`${server.url}/api/_agents`)).json.sessions).toEqual([])
    expect((await sessionRequest(server.url, idle, "ping")).status).toBe(404)
  })

  it("a session stored in format 1 (one record holding every subscription) still loads, and is upgraded to one entry per subscription", async () => {
    const dataDir = tempDir()
    const first = await start(apps.pricing, { dataDir })
    await http(`${first.url}/api/products`, { method: "POST", body: product })
    await first.close()
    const id = "format1-session-id-0123"
    const db = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8", createIfMissing: false })
    await db.put(`s!${id}`, JSON.stringify({ version: "2025-11-25", createdAt: 1, subscriptions: { "wo://products/1": 1, "wo://products?name=p": 1 } }), { sync: true })
    await db.close()

    const server = await start(apps.pricing, { dataDir })
    expect((await storedSessionEntries(server)).sort()).toEqual([`s!${id}`, `s!${id}!wo://products/1`, `s!${id}!wo://products?name=p`])
    const stream = await openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" } })
    expect(stream.status).toBe(200)
    await http(`${server.url}/api/products/1/set_price`, { method: "POST", body: { price: 2 } })
    const notified = [(await stream.nextJson())?.json.params.uri, (await stream.nextJson())?.json.params.uri]
    expect(notified).toEqual(["wo://products/1", "wo://products?name=p"])
    expect((await sessionRequest(server.url, id, "resources/unsubscribe", { uri: "wo://products/1" })).json.result).toEqual({})
    expect(await storedSessionEntries(server)).toEqual([`s!${id}`, `s!${id}!wo://products?name=p`])
    stream.close()
  })
})

describe("250 subscribes with max-length URIs on one legacy session (a real `wo run`)", () => {
  /** The newest write-ahead log file of a LevelDB dir and its size: LevelDB appends every write to it. */
  const wal = (dir: string) => {
    const name = fs.readdirSync(dir).filter((f) => /^\d+\.log$/.test(f)).sort().at(-1)!
    return { name, size: fs.statSync(path.join(dir, name)).size }
  }

  it("each subscribe appends the same few bytes, RSS stays bounded, a restart loads them all, and a DELETE leaves nothing stored", async () => {
    const dataDir = tempDir()
    const appDir = path.join(ROOT, "examples/pricing")
    let wo = await spawnServer(appDir, dataDir)
    spawned.push(wo)
    await http(`${wo.loopbackUrl}/api/products`, { method: "POST", body: product })
    const session = await openSession(wo.loopbackUrl)
    const uris = Array.from({ length: 250 }, (_, k) => uriOf(`wo://products?name=${k + 1}-`, MAX, "x"))
    await sessionRequest(wo.loopbackUrl, session, "resources/subscribe", { uri: uris[0] }) // the first may find a cold server
    const rssBefore = rssKb(wo.pid)
    const appended: Array<number> = []
    for (const uri of uris.slice(1)) {
      const before = wal(dataDir)
      const res = await sessionRequest(wo.loopbackUrl, session, "resources/subscribe", { uri })
      expect(res.json.result).toEqual({})
      const after = wal(dataDir)
      if (after.name === before.name) appended.push(after.size - before.size) // a new log file: not comparable
    }
    // O(1) per call: one entry (the URI as its key, plus LevelDB's record framing), the 2nd subscribe as the 250th.
    // Before, the whole list was rewritten each time: the 250th appended over 500 KB.
    expect(appended.length).toBeGreaterThan(200)
    expect(Math.max(...appended)).toBeLessThan(MAX + 256)
    expect(Math.max(...appended) - Math.min(...appended)).toBeLessThan(64)
    // The 250 URIs are 500 KB; 100 MB is a generous bound for a loaded machine's allocator and GC timing
    // (before: 147 MB -> 620 MB with 100,000-character URIs).
    expect(rssKb(wo.pid) - rssBefore).toBeLessThan(100 * 1024)
    expect(await agentSubscriptions(wo.loopbackUrl, session)).toHaveLength(250)

    // A restart loads the session with every subscription, and its stream is notified.
    await wo.stop()
    wo = await spawnServer(appDir, dataDir)
    spawned.push(wo)
    expect((await agentSubscriptions(wo.loopbackUrl, session))?.sort()).toEqual([...uris].sort())
    expect((await sessionRequest(wo.loopbackUrl, session, "resources/subscribe", { uri: "wo://products/1" })).json.result).toEqual({})
    const stream = await openSse(`${wo.loopbackUrl}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } })
    await http(`${wo.loopbackUrl}/api/products/1/set_price`, { method: "POST", body: { price: 2 } })
    expect((await stream.nextJson())?.json.params.uri).toBe("wo://products/1")
    expect(rssKb(wo.pid) - rssBefore).toBeLessThan(100 * 1024)

    expect((await rawRequest(`${wo.loopbackUrl}/mcp`, { method: "DELETE", headers: { "mcp-session-id": session } })).status).toBe(200)
    stream.close()
    expect((await http(`${wo.loopbackUrl}/api/_agents`)).json.sessions).toEqual([])
    await wo.stop()
    const db = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8", createIfMissing: false })
    const left: Array<string> = []
    for await (const key of db.keys({ gte: "s!", lt: "s!~" })) left.push(key)
    await db.close()
    expect(left).toEqual([])
  }, 120_000)
})
