/**
 * Seq-shifted batches on three real nodes (log/postgres/append.ts): nodes repricing different products at once
 * find the log's head moved by the others' commits, and the append function writes their batches after them (their
 * seqs shifted) instead of refusing them. A node's writer then cannot apply its own batch at once (its tailer stands
 * before the others' commits): its tailer reads the others' events, and the node applies its batch right after them
 * without reading it back. Nothing may be applied
 * twice or skipped: a subscriber on one node hears every change exactly once, in seq order, each node reads its own
 * writes, and every node converges on the log. Counts and order are asserted, never durations.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MCP_HEADERS, openSession } from "../../testkit/legacy-client.ts"
import { http } from "../../testkit/server.ts"
import { openSse } from "../../testkit/sse.ts"
import type { Spawned } from "../../testkit/spawn.ts"
import { waitFor } from "../../testkit/wait.ts"
import { haveBinaries, lagsOf, latestRows, sharedCluster, startNode, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the seq-shift cluster test")

/** A node's count of batches written after other nodes' commits, from its last `store:` line (Debug). */
const shiftedOf = (output: string) => Number([...output.matchAll(/(\d+) batches written after other nodes' commits/g)].pop()?.[1] ?? 0)
/** From a node's last `store:` line: the events its appends carried, and those its tailer took (read, or carried by notifications). */
const trafficOf = (output: string) => {
  const m = [...output.matchAll(/store: \d+ batches appended \((\d+) events\).*?read (\d+) events and took (\d+) from notifications/g)].pop()
  return { appended: Number(m?.[1] ?? 0), read: Number(m?.[2] ?? 0) + Number(m?.[3] ?? 0) }
}

describe.skipIf(!haveBinaries)("three nodes repricing different products at once (seq-shifted batches)", () => {
  let cluster: PgCluster
  const nodes: Array<Spawned> = []

  beforeAll(async () => {
    cluster = await sharedCluster()
    const store = await cluster.createDatabase("wo_shift")
    nodes.push(...(await Promise.all([0, 1, 2].map(() => startNode(store, { WO_LOG_LEVEL: "Debug" })))))
  }, 120_000)

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop().catch(() => undefined)))
    cluster?.stop()
  })

  it("writes each node's batch after the others' commits; every change is applied once, in order, on every node", async () => {
    const PER_NODE = 4
    const ids: Array<string> = []
    for (let i = 0; i < 3 * PER_NODE; i++) ids.push((await http(`${nodes[0].loopbackUrl}/api/products`, { method: "POST", body: { name: `p${i}`, price: 1, currency: "USD" } })).json.id)
    const created = await latestRows(cluster, "wo_shift")
    for (let k = 0; k < 3; k++) expect(await lagsOf(cluster, "wo_shift", nodes[k], created), `node ${k}`).toEqual([])

    // A subscriber on node 0 to every product.
    const base = nodes[0].loopbackUrl
    const session = await openSession(base)
    let rpc = 1
    for (const id of ids) {
      const res = await http(`${base}/mcp`, {
        method: "POST",
        headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
        body: { jsonrpc: "2.0", id: rpc++, method: "resources/subscribe", params: { uri: `wo://products/${id}` } }
      })
      expect(res.json.result).toEqual({})
    }
    const stream = await openSse(`${base}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } })
    try {
      // Node k reprices only its own products, 4 requests in flight per node, 25 rounds: the nodes never touch the
      // same entity, so every miss of the head is one the function can shift.
      let staleReads = 0
      let failed = 0
      const acked: Array<{ id: string; version: number }> = []
      const worker = async (k: number, w: number) => {
        for (let round = 0; round < 25; round++) {
          const id = ids[k * PER_NODE + w]
          const res = await http(`${nodes[k].loopbackUrl}/api/products/${id}/set_price`, { method: "POST", body: { price: 100 * round + w + 2 } })
          if (res.status !== 200) {
            failed++
            continue
          }
          acked.push({ id, version: res.json.version })
          const back = await http(`${nodes[k].loopbackUrl}/api/products/${id}`)
          if (back.json.version < res.json.version) staleReads++
        }
      }
      await Promise.all([0, 1, 2].flatMap((k) => Array.from({ length: PER_NODE }, (_, w) => worker(k, w))))
      expect(failed).toBe(0)
      expect(staleReads).toBe(0) // read-your-writes on the acking node, shifted batches included
      expect(acked.length).toBe(3 * PER_NODE * 25)

      // Some batches were shifted (the nodes wrote at once); each node logs its count every 2 s.
      expect(await waitFor(() => nodes.reduce((n, node) => n + shiftedOf(node.output()), 0) > 0, 10_000)).toBe(true)

      // The log: gap-free, each product at version 1 + 25.
      const [{ head, events }] = await cluster.sql("wo_shift", "select (select seq::int from writeonce.log_head) as head, count(*)::int as events from writeonce.events")
      expect(head).toBe(events)
      const latest = await latestRows(cluster, "wo_shift")
      expect([...latest.values()]).toEqual(Array(3 * PER_NODE).fill(26))
      for (let k = 0; k < 3; k++) expect(await lagsOf(cluster, "wo_shift", nodes[k], latest), `node ${k}`).toEqual([])

      // Each node's tailer took the other nodes' events, and read its own shifted batches only rarely (a read already on
      // its way when the append answered): its writer applied them itself, right after the others' events before
      // them. Before, every batch shifted past events the tailer had not read yet was read back. `appended` counts
      // every event a node's appends carried: no entry is refused here (no two nodes write one product).
      const ownReadBack = () => {
        const all: Array<number> = []
        for (const node of nodes) {
          const { appended, read } = trafficOf(node.output())
          all.push(read - (events - appended))
        }
        return all
      }
      // The nodes log their counts every 2 s while they change: each has converged (above), so the line after the
      // next 2 s is its last; it has read all of the others' events then.
      await new Promise((r) => setTimeout(r, 2500))
      expect(await waitFor(() => ownReadBack().every((n) => n >= 0), 10_000)).toBe(true)
      const readBack = ownReadBack().reduce((a, n) => a + n, 0)
      const shifted = nodes.reduce((n, node) => n + shiftedOf(node.output()), 0)
      expect(readBack, `own events read back, with ${shifted} batches shifted`).toBeLessThanOrEqual(Math.max(4, shifted / 4))

      // Node 0's subscriber heard each of the 300 changes once, in seq order, whichever node wrote it.
      const heard: Array<number> = []
      for (let i = 0; i < acked.length; i++) {
        const m = await stream.nextJson(10_000)
        if (m === undefined) break
        heard.push(Number(m.id!.slice(4)))
      }
      expect(heard.length).toBe(acked.length)
      expect([...heard].sort((x, y) => x - y)).toEqual(heard)
      expect(new Set(heard).size).toBe(heard.length)
      expect(await stream.nextJson(300)).toBeUndefined()
    } finally {
      stream.close()
    }
  })
})
