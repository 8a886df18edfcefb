/**
 * A batch makes one round trip to the primary: its idempotency keys are read in the append call (the function
 * answers the keys stored when the batch's picture is wrong), not by a read before it. Counted on the real `pg`
 * client of a node built as `wo run --store` builds it, over the shared test cluster.
 */
import { Effect, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { HttpServer } from "../../src/http/server.ts"
import { writeOnceLayer } from "../../src/runtime/runtime.ts"
import { loadSettings } from "../../src/support/config.ts"
import { observedPostgresLog } from "../../testkit/observed-pg.ts"
import { apps, http, tempDir } from "../../testkit/server.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the batch round-trip tests")

/** What the node's writer sends: calls of the append function, and reads of idempotency keys. */
interface Sent {
  appendCalls: number
  keyReads: number
}

const startNode = async (store: string) => {
  const sent: Sent = { appendCalls: 0, keyReads: 0 }
  const log = observedPostgresLog(store, {
    sent: (text) => {
      if (text.includes("append_batch(")) sent.appendCalls++
      else if (/from writeonce\.idempotency_keys where key/.test(text)) sent.keyReads++
    }
  })
  const settings = await Effect.runPromise(loadSettings({ dataDir: tempDir("wo-pg-trips-") }, { host: "127.0.0.1", port: 0, store }))
  const runtime = ManagedRuntime.make(writeOnceLayer(apps.pricing, settings, { logger: false, signals: false, log }))
  const { url } = await runtime.runPromise(HttpServer)
  return { url, sent, stop: () => runtime.dispose() }
}

describe.skipIf(!haveBinaries)("a batch's round trips to the primary", () => {
  let cluster: PgCluster
  let node: Awaited<ReturnType<typeof startNode>>

  beforeAll(async () => {
    cluster = await sharedCluster()
    node = await startNode(await cluster.createDatabase("wo_round_trips"))
  }, 120_000)

  afterAll(async () => {
    await node?.stop()
    cluster?.stop()
  })

  /** What one request sent to the primary, and its answer. */
  const measured = async (path: string, init: { method: string; body?: unknown; key: string; ifMatch?: number }) => {
    const before = { ...node.sent }
    const headers = { "idempotency-key": init.key, ...(init.ifMatch === undefined ? {} : { "if-match": `"${init.ifMatch}"` }) }
    const res = await http(`${node.url}${path}`, { method: init.method, body: init.body, headers })
    return { res, appendCalls: node.sent.appendCalls - before.appendCalls, keyReads: node.sent.keyReads - before.keyReads }
  }

  it("a keyed write is one call of the append function, with no read of its key before it", async () => {
    const created = await measured("/api/products", { method: "POST", body: { name: "p", price: 1, currency: "USD" }, key: "create-1" })
    expect(created.res.status).toBe(201)
    expect([created.appendCalls, created.keyReads]).toEqual([1, 0])
    for (let i = 0; i < 5; i++) {
      const priced = await measured(`/api/products/${created.res.json.id}/set_price`, { method: "POST", body: { price: 10 + i }, key: `price-${i}` })
      expect(priced.res.status).toBe(200)
      expect([priced.appendCalls, priced.keyReads]).toEqual([1, 0])
    }
  })

  it("a retry whose key is stored is answered from it: the append call reads the key and writes nothing", async () => {
    const created = await http(`${node.url}/api/products`, { method: "POST", body: { name: "q", price: 1, currency: "USD" } })
    const first = await measured(`/api/products/${created.json.id}/set_price`, { method: "POST", body: { price: 7 }, key: "retry-1" })
    expect(first.res.status).toBe(200)
    const retry = await measured(`/api/products/${created.json.id}/set_price`, { method: "POST", body: { price: 7 }, key: "retry-1" })
    expect(retry.res.status).toBe(200)
    expect(retry.res.headers.get("idempotent-replayed")).toBe("true")
    expect(retry.res.json).toEqual(first.res.json)
    expect([retry.appendCalls, retry.keyReads]).toEqual([1, 0])
  })

  it("a retry refused on today's rows (its write landed: the version moved) is answered from its key, in one read", async () => {
    const created = await http(`${node.url}/api/products`, { method: "POST", body: { name: "r", price: 1, currency: "USD" } })
    const first = await measured(`/api/products/${created.json.id}/set_price`, { method: "POST", body: { price: 3 }, key: "pinned-1", ifMatch: 1 })
    expect(first.res.status).toBe(200)
    // Decided again on today's row (version 2), the retry conflicts: the key read with it finds the first answer.
    const retry = await measured(`/api/products/${created.json.id}/set_price`, { method: "POST", body: { price: 3 }, key: "pinned-1", ifMatch: 1 })
    expect(retry.res.status, retry.res.text).toBe(200)
    expect(retry.res.headers.get("idempotent-replayed")).toBe("true")
    expect(retry.res.json).toEqual(first.res.json)
    expect([retry.appendCalls, retry.keyReads]).toEqual([0, 1])
  })
})
