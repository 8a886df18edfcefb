/**
 * The request deadline: WO_STORE_TIMEOUT bounds the whole wait of a request, from its arrival to its answer, whatever
 * batches are ahead of it. A cluster of its own (its primary is paused), one node with a 2 s bound, and writers that
 * keep sending keyed writes over REST and MCP through a pause of the primary of three bounds: every request is
 * answered (200, or 503 with Retry-After) within the bound plus a second of its arrival, and after the pause every
 * write that got no 200, retried with its key, is done exactly once. Counts are asserted; the durations asserted are
 * the deadline itself, with a slack for a loaded machine.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { IDEMPOTENCY_KEY_META } from "../../src/commands/idempotency.ts"
import { MODERN_META, modernHeaders } from "../../testkit/mcp.ts"
import { http, rawRequest } from "../../testkit/server.ts"
import type { Spawned } from "../../testkit/spawn.ts"
import { haveBinaries, startCluster, startNode, warnIfSkipped, type PgCluster } from "./pg-cluster.ts"

warnIfSkipped("the request deadline tests")

const DB = "wo_deadline"
const TIMEOUT_MS = 2_000
/** The pause of the primary: three bounds, as the 15 s stop was three of the default 5 s. */
const PAUSE_MS = 3 * TIMEOUT_MS
/**
 * The bound every answer must meet, from the client's send to its answer: the timeout plus the 1 s the budget
 * allows, plus 1 s more of slack for this loaded test machine (2 cores shared by several suites): the client's own
 * event loop and the node's are both measured here. Today's code answers writes after up to three bounds (6 s).
 */
const BOUND_MS = TIMEOUT_MS + 1_000 + 1_000
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

interface Sent {
  readonly key: string
  readonly price: number
  readonly product: string
  readonly via: "rest" | "mcp"
  readonly status: number
  /** REST: the Retry-After header and the message; MCP: the answer's error text (a store error's message). */
  readonly detail: string
  readonly ms: number
  /** Sent while the primary was paused. */
  readonly duringPause: boolean
}

describe.skipIf(!haveBinaries)("a request's deadline while the primary is paused", () => {
  let cluster: PgCluster
  let node: Spawned
  const products: Array<string> = []

  beforeAll(async () => {
    cluster = await startCluster()
    const store = await cluster.createDatabase(DB)
    node = await startNode(store, { WO_STORE_TIMEOUT: `${TIMEOUT_MS}ms` })
    for (let i = 0; i < 4; i++) {
      const created = await http(`${node.loopbackUrl}/api/products`, { method: "POST", body: { name: `p${i}`, price: 1, currency: "USD" } })
      expect(created.status).toBe(201)
      products.push(created.json.id)
    }
  }, 180_000)

  afterAll(async () => {
    await node?.stop().catch(() => undefined)
    cluster?.stop()
  })

  let nextPrice = 100
  /** One keyed set_price (REST or MCP); its answer and how long it took. */
  const send = async (w: { key: string; price: number; product: string; via: "rest" | "mcp" }, duringPause: boolean): Promise<Sent> => {
    const started = performance.now()
    if (w.via === "rest") {
      const res = await http(`${node.loopbackUrl}/api/products/${w.product}/set_price`, { method: "POST", body: { price: w.price }, headers: { "idempotency-key": w.key } })
      return { ...w, status: res.status, detail: `${res.headers.get("retry-after") ?? "no Retry-After"} ${res.json?.message ?? ""}`, ms: performance.now() - started, duringPause }
    }
    // The key beside the protocol's own `_meta` keys (the testkit's request builder sets `_meta` whole).
    const res = await rawRequest(`${node.loopbackUrl}/mcp`, {
      method: "POST",
      headers: modernHeaders("tools/call", "products_set_price"),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: w.price,
        method: "tools/call",
        params: { name: "products_set_price", arguments: { id: w.product, price: w.price }, _meta: { ...MODERN_META, [IDEMPOTENCY_KEY_META]: w.key } }
      })
    })
    const result = res.json?.result
    // An MCP write is done when its tool answers without isError; a store error is an isError result (or an error).
    const status = res.status === 200 && result !== undefined && result.isError !== true ? 200 : 503
    const detail = result?.content?.[0]?.text ?? res.json?.error?.message ?? res.text
    return { ...w, status, detail, ms: performance.now() - started, duringPause }
  }

  it("answers every request within WO_STORE_TIMEOUT + 1 s of its arrival, and a retry with its key settles each write once", async () => {
    const sent: Array<Sent> = []
    let paused = false
    let stopped = false
    const worker = async (w: number) => {
      for (let i = 0; !stopped; i++) {
        const price = nextPrice++
        const write = { key: `deadline-${price}`, price, product: products[w % products.length], via: w % 3 === 2 ? "mcp" as const : "rest" as const }
        sent.push(await send(write, paused))
      }
    }
    // Reads too: a row (this node's memory) and its history (read from the store).
    const reads: Array<{ path: string; status: number; ms: number }> = []
    const reader = async () => {
      for (let i = 0; !stopped; i++) {
        const path = `/api/products/${products[i % products.length]}${i % 2 === 0 ? "/history?limit=2" : ""}`
        const started = performance.now()
        const res = await http(`${node.loopbackUrl}${path}`)
        reads.push({ path, status: res.status, ms: performance.now() - started })
        await pause(100)
      }
    }
    const workers = [...Array.from({ length: 9 }, (_, w) => worker(w)), reader(), reader()]
    while (sent.filter((s) => s.status === 200).length < 30) await pause(50)

    cluster.pause(cluster.primary(), true)
    paused = true
    try {
      await pause(PAUSE_MS)
    } finally {
      paused = false
      cluster.pause(cluster.primary(), false)
    }
    const atResume = sent.length
    while (sent.slice(atResume).filter((s) => s.status === 200).length < 30) await pause(50)
    stopped = true
    await Promise.all(workers)

    const during = sent.filter((s) => s.duringPause)
    const late = sent.filter((s) => s.ms > BOUND_MS).map((s) => `${s.via} ${s.key}: ${s.status} after ${Math.round(s.ms)} ms`)
    const worst = Math.max(...sent.map((s) => s.ms))
    console.info(`paused ${PAUSE_MS} ms: ${sent.length} writes, ${during.length} sent during the pause, ` +
      `${sent.filter((s) => s.status !== 200).length} not done (${sent.filter((s) => /it was not written/.test(s.detail)).length} not reached by the writer); worst answer ${Math.round(worst)} ms (bound ${TIMEOUT_MS} + 1000 ms)`)
    const lateReads = reads.filter((r) => r.ms > BOUND_MS).map((r) => `GET ${r.path}: ${r.status} after ${Math.round(r.ms)} ms`)
    console.info(`${reads.length} reads, ${reads.filter((r) => r.status !== 200).length} not 200; worst ${Math.round(Math.max(...reads.map((r) => r.ms)))} ms`)
    expect(late).toEqual([])
    expect(lateReads).toEqual([])
    expect(reads.filter((r) => r.status !== 200 && r.status !== 503)).toEqual([])
    // Writes were sent throughout the pause, and those were refused, not held.
    expect(during.length).toBeGreaterThanOrEqual(9)
    expect(during.filter((s) => s.status === 503).length).toBeGreaterThanOrEqual(9)
    // Every refusal is a 503 with Retry-After (REST) or a store error (MCP): nothing else failed.
    expect(sent.filter((s) => s.status !== 200 && s.status !== 503)).toEqual([])
    // Each says whether the write may have landed (retry with its key) or was not written.
    const says = /the store is unavailable: .*(retry it with the same idempotency key|it was not written, retry it)/
    expect(sent.filter((s) => s.status === 503 && s.via === "rest" && !/^1 /.test(s.detail))).toEqual([])
    expect(sent.filter((s) => s.status === 503 && !says.test(s.detail)).map((s) => `${s.via}: ${s.detail}`)).toEqual([])

    const eventsByPrice = async () => {
      const events = await cluster.sql<{ price: string; n: string }>(DB, "select data->>'price' as price, count(*) as n from writeonce.events where type = 'products' and kind = 'invoked' group by 1")
      return new Map(events.map((e) => [Number(e.price), Number(e.n)]))
    }
    // A write answered "not written" (the writer had not reached it) never lands: it was dropped from the queue.
    const notWritten = sent.filter((s) => s.status === 503 && /it was not written/.test(s.detail))
    const before = await eventsByPrice()
    expect(notWritten.filter((s) => before.has(s.price)).map((s) => s.key)).toEqual([])

    // After the pause: each write not answered 200, retried with its key until it is, is done once; each answered
    // 200 is in the log once (no loss, no duplicate).
    for (const s of sent) {
      let answer = s
      for (let i = 0; answer.status !== 200 && i < 50; i++) {
        await pause(100)
        answer = await send(s, false)
      }
      expect(answer.status, `${s.key} was never answered 200`).toBe(200)
    }
    const counts = await eventsByPrice()
    expect(sent.filter((s) => counts.get(s.price) !== 1).map((s) => `${s.key}: ${counts.get(s.price) ?? 0} events`)).toEqual([])
  }, 240_000)
})
