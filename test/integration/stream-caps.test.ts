/**
 * Caps on streams: `/api/_events` readers per client and in all (429 past either); listen streams
 * spread over many source addresses still bounded by the global cap; and the global stream memory budget
 * (WO_STREAM_MEMORY) closing readers that stopped reading, whatever their address, while a reading stream
 * gets every notification.
 */
import * as nodeHttp from "node:http"
import { afterEach, describe, expect, it } from "vitest"
import type { Change } from "../../src/domain/events.ts"
import { OpenStreams } from "../../src/http/streams/open-streams.ts"
import { ChangeFeed } from "../../src/subscriptions/change-feed.ts"
import { listenBody, modernHeaders, openListen, rawListen } from "../../testkit/modern-client.ts"
import { apps, http, startServer } from "../../testkit/server.ts"

type Server = Awaited<ReturnType<typeof startServer>>
let server: Server | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

/** Opens `/api/_events` from a loopback source address; resolves with the status and a closer. */
const tail = (url: string, localAddress: string) =>
  new Promise<{ status: number; close: () => void; closed: Promise<void> }>((resolve, reject) => {
    const req = nodeHttp.get(`${url}/api/_events?from=1`, { localAddress, agent: false }, (res) => {
      const closed = new Promise<void>((r) => res.once("close", () => r()))
      res.resume()
      resolve({ status: res.statusCode ?? 0, close: () => req.destroy(), closed })
    })
    req.on("error", reject)
  })

/** A listen stream from `localAddress` that reads its first bytes and then never reads again. */
const stalledListen = (url: string, id: number, uris: ReadonlyArray<string>, localAddress: string) =>
  new Promise<{ close: () => void }>((resolve, reject) => {
    const req = nodeHttp.request(`${url}/mcp`, { method: "POST", headers: modernHeaders("subscriptions/listen"), localAddress, agent: false }, (res) => {
      expect(res.statusCode).toBe(200)
      res.once("data", () => {
        res.pause()
        resolve({ close: () => req.destroy() })
      })
    })
    req.on("error", reject)
    req.end(listenBody(id, uris))
  })

describe("/api/_events caps (WO_MAX_EVENT_TAILS_PER_CLIENT, WO_MAX_EVENT_TAILS)", () => {
  it("refuses a reader past the per-client cap and past the global cap with 429; a closed reader frees its slot", async () => {
    server = await startServer(apps.pricing, { maxEventTailsPerClient: 2, maxEventTails: 3 })
    const a1 = await tail(server.url, "127.0.0.1")
    const a2 = await tail(server.url, "127.0.0.1")
    const a3 = await tail(server.url, "127.0.0.1")
    expect([a1.status, a2.status, a3.status]).toEqual([200, 200, 429])
    const b1 = await tail(server.url, "127.0.0.2")
    expect(b1.status).toBe(200)
    // A third address is refused too: three readers are open in all.
    const c1 = await tail(server.url, "127.0.0.3")
    expect(c1.status).toBe(429)
    const refused = await http(`${server.url}/api/_events?from=1`)
    expect(refused.status).toBe(429)
    expect(refused.json.error).toBe("TooManyReaders")
    a1.close()
    await a1.closed
    let again = await tail(server.url, "127.0.0.3")
    for (let i = 0; again.status !== 200 && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 20)) // the server notices the close
      again = await tail(server.url, "127.0.0.3")
    }
    expect(again.status).toBe(200)
    for (const t of [a2, b1, again]) t.close()
  })
})

describe("many source addresses", () => {
  it("are still bounded by the global listen cap", async () => {
    server = await startServer(apps.pricing, { maxListensPerClient: 1, maxListenStreams: 4 })
    const open = []
    for (let i = 2; i <= 5; i++) open.push(await rawListen(server.url, i, ["wo://products/1"], `127.0.0.${i}`))
    expect(open.map((l) => l.status)).toEqual([200, 200, 200, 200])
    const sixth = await rawListen(server.url, 6, ["wo://products/1"], "127.0.0.6")
    expect(sixth.status).toBe(429)
    for (const l of open) l.close()
  })

  it("stalled readers on many addresses are closed by the memory budget; a reading stream gets everything", async () => {
    // A per-stream buffer too large to trip, so that only the global budget can close the stalled streams.
    server = await startServer(apps.pricing, { streamMemory: 1024 * 1024, streamBuffer: 1_000_000, maxListensPerClient: 1 })
    const uri = "wo://products/1"
    const stalled = []
    for (let i = 2; i <= 9; i++) stalled.push(await stalledListen(server.url, i, [uri], `127.0.0.${i}`))
    const reading = await openListen(server.url, "reader", [uri])
    expect((await reading.nextJson(10_000))?.json.method).toBe("notifications/subscriptions/acknowledged")
    let received = 0
    const TOTAL = 100_000
    const consume = (async () => {
      while ((await reading.nextJson(10_000)) !== undefined) if (++received === TOTAL) return
    })()
    const feed = server.runtime.runSync(ChangeFeed)
    for (let seq = 1; seq <= TOTAL; seq += 200) {
      const changes: Array<Change> = []
      for (let i = seq; i < seq + 200; i++) {
        changes.push({ uri, row: { id: "1", version: i, price: i }, event: { seq: 1_000_000 + i, at: 0, type: "products", id: "1", version: i, kind: "invoked", data: { price: i } } })
      }
      feed.publish(changes)
      await new Promise((r) => setImmediate(r))
    }
    await consume
    expect(received).toBe(TOTAL)
    // The server's open streams: only the reading one is left (a paused client does not see its close).
    const streams = server.runtime.runSync(OpenStreams)
    expect(streams.list().map((s) => s.owner), "every stalled stream was closed by the budget").toEqual(["reader"])
    reading.close()
    for (const s of stalled) s.close()
  })
})
