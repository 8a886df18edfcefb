import { describe, expect, it } from "vitest"
import type { Change } from "../../src/domain/events.ts"
import { ChangeFeed } from "../../src/subscriptions/change-feed.ts"
import { MCP_HEADERS, openSession } from "../../testkit/legacy-client.ts"
import { openSse } from "../../testkit/sse.ts"
import { apps, http, startServer } from "../../testkit/server.ts"

const TOTAL = 100_000
const CHUNK = 200

describe("isolation: a client that never reads stalls only itself", () => {
  it("keeps memory bounded and the other client's notifications flowing through 100k changes", async () => {
    const server = await startServer(apps.pricing, { streamBuffer: 1024 })
    try {
      const uri = "wo://products/1"
      const subscribe = async () => {
        const session = await openSession(server.url)
        await http(`${server.url}/mcp`, {
          method: "POST",
          headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
          body: { jsonrpc: "2.0", id: 1, method: "resources/subscribe", params: { uri } }
        })
        return openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session } })
      }
      const stalled = await subscribe()
      stalled.pause()
      const healthy = await subscribe()
      let received = 0
      const reading = (async () => {
        while ((await healthy.nextJson(5000)) !== undefined) if (++received === TOTAL) return
      })()

      // Publish straight into the change feed, as the writer does after each durable batch, but faster than the
      // disk allows, so the registry and the streams are what is under test.
      const feed = server.runtime.runSync(ChangeFeed)
      global.gc?.()
      const heapBefore = process.memoryUsage().heapUsed
      let peakHeap = heapBefore
      for (let seq = 1; seq <= TOTAL; seq += CHUNK) {
        const changes: Array<Change> = []
        for (let i = seq; i < seq + CHUNK; i++) {
          changes.push({ uri, row: { id: "1", version: i, price: i }, event: { seq: 1_000_000 + i, at: 0, type: "products", id: "1", version: i, kind: "invoked", data: { price: i } } })
        }
        feed.publish(changes)
        await new Promise((r) => setImmediate(r))
        peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed)
      }
      await reading
      expect(received).toBe(TOTAL)
      // The stalled stream was closed at its buffer's bound instead of holding 100k notifications.
      stalled.resume()
      let stalledReceived = 0
      while ((await stalled.nextJson(1000)) !== undefined) stalledReceived++
      expect(stalled.ended()).toBe(true)
      expect(stalledReceived).toBeLessThan(TOTAL)
      expect(peakHeap - heapBefore).toBeLessThan(64 * 1024 * 1024)
      healthy.close()
    } finally {
      await server.close()
    }
  })
})
