/**
 * A node whose rows are a cache of PostgreSQL never blocks its event loop on the store: while the primary is paused
 * (SIGSTOP), a GET and an MCP get of rows the node does not hold, a write of one and an MCP resources/list wait
 * for the store, and
 * meanwhile the node goes on answering /healthz and GETs of a row it holds. A cluster of its own (its primary is
 * paused), one real `wo run` node. Order is asserted, never durations: the held reads all answer before any read of
 * the store does; a node that read the store with its thread blocked answers none of them until the store answers
 * or WO_STORE_TIMEOUT passes (it is long here, so the wait is the pause's, and the pause lasts as long as the test
 * needs). After the pause, the waiting requests are answered from the store, and the writer read ahead everything
 * its decision read (no read blocked the thread: `wo_row_store_sync_reads_total` stays 0).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { writePriceLog } from "../../testkit/pg-price-log.ts"
import { parsePrometheusText } from "../../testkit/prom-text.ts"
import { modernHeaders, MODERN_META } from "../../testkit/mcp.ts"
import { http, rawRequest } from "../../testkit/server.ts"
import type { Spawned } from "../../testkit/spawn.ts"
import { haveBinaries, startCluster, startNode, warnIfSkipped, type PgCluster } from "./pg-cluster.ts"

warnIfSkipped("the tests of a cache node's reads during a pause of the primary")

/** Longer than the test: a store read waits for the pause to end, it does not time out. */
const TIMEOUT_MS = 120_000
/** Held reads answered while the store reads wait. */
const HELD_READS = 20

describe.skipIf(!haveBinaries)("a node caching PostgreSQL's rows while the primary is paused", () => {
  let cluster: PgCluster
  let node: Spawned

  beforeAll(async () => {
    cluster = await startCluster()
    const store = await cluster.createDatabase("wo_cache_pause")
    // Written through the store's own append: the node starts holding none of them.
    await writePriceLog(store, { products: 10, events: 0 })
    node = await startNode(store, { WO_STORE_TIMEOUT: `${TIMEOUT_MS}ms` })
  }, 180_000)

  afterAll(async () => {
    cluster?.pause("primary", false)
    await node?.stop().catch(() => undefined)
    cluster?.stop()
  })

  it("answers /healthz and held rows while reads and a write of rows it does not hold wait for the store", async () => {
    const url = node.loopbackUrl
    // Product 1 read once: the cache holds it from now on.
    expect((await http(`${url}/api/products/1`)).json).toMatchObject({ id: "1", price: 1 })

    cluster.pause("primary", true)
    let resumed = false
    try {
      const order: Array<string> = []
      const waiting = [
        http(`${url}/api/products/2`).then((res) => (order.push("rest get"), res)),
        rawRequest(`${url}/mcp`, {
          method: "POST",
          headers: modernHeaders("tools/call", "products_get"),
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "products_get", arguments: { id: "3" }, _meta: MODERN_META } })
        }).then((res) => (order.push("mcp get"), res)),
        http(`${url}/api/products/4/set_price`, { method: "POST", body: { price: 7 } }).then((res) => (order.push("write"), res)),
        rawRequest(`${url}/mcp`, {
          method: "POST",
          headers: modernHeaders("resources/list"),
          body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "resources/list", params: { _meta: MODERN_META } })
        }).then((res) => (order.push("mcp list"), res))
      ] as const

      // One at a time, each answered before the next is sent: a node blocked on the store answers none.
      let held = 0
      while (held < HELD_READS && order.length === 0) {
        const [live, row] = await Promise.all([http(`${url}/healthz`), http(`${url}/api/products/1`)])
        expect(live.status).toBe(200)
        expect(row.json).toMatchObject({ id: "1" })
        held++
      }
      expect(order).toEqual([])
      expect(held).toBe(HELD_READS)

      cluster.pause("primary", false)
      resumed = true
      const [get, mcp, write, listed] = await Promise.all(waiting)
      expect(get.json).toMatchObject({ id: "2", price: 1 })
      expect(mcp.status).toBe(200)
      expect(JSON.parse(mcp.json.result.content[0].text)).toMatchObject({ id: "3", price: 1 })
      expect(write.status).toBe(200)
      expect(write.json).toMatchObject({ id: "4", price: 7, version: 2 })
      expect(listed.json.result.resources.map((r: { uri: string }) => r.uri)).toContain("wo://products/10")
    } finally {
      if (!resumed) cluster.pause("primary", false)
    }
    const metrics = await http(`${url}/metrics`)
    expect(parsePrometheusText(metrics.text).value("wo_row_store_sync_reads_total")).toBe(0)
  }, 180_000)
})
