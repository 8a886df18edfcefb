/**
 * Idempotency keys on a shared PostgreSQL log, two `wo` nodes (examples/pricing), one cluster start: a keyed write
 * retried on the other node gets the stored answer; the same key sent to both nodes at once writes once (the
 * append reads the keys under the head lock); a node killed with -9 under keyed traffic, its unanswered writes
 * retried on the other node, and then the primary killed with -9 and a standby promoted under the same traffic:
 * every intended write is in the log exactly once, and every retry is answered as the first time.
 */
import { Effect, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PgConnection, pgConnectionLayer } from "../../src/log/postgres/connection.ts"
import { appendBatch } from "../../src/log/postgres/append.ts"
import { Duplicate, type AppendBatch, type AppendEntry } from "../../src/log/event-log.ts"
import { KeyedClient, type KeyedWrite } from "../../testkit/keyed-client.ts"
import { http } from "../../testkit/server.ts"
import { runWo, type Spawned } from "../../testkit/spawn.ts"
import { haveBinaries, restartDiverged, startCluster, startNode, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the idempotency cluster tests")

const DB = "wo_idem"

describe.skipIf(!haveBinaries)("idempotency keys on one PostgreSQL log, two nodes", () => {
  let cluster: PgCluster
  let store = ""
  const nodes: Array<Spawned | undefined> = []
  const url = (i: number) => nodes[i]!.loopbackUrl
  const keyed = (i: number, path: string, body: unknown, key: string) => http(`${url(i)}${path}`, { method: "POST", body, headers: { "idempotency-key": key } })

  beforeAll(async () => {
    cluster = await startCluster()
    store = await cluster.createDatabase(DB)
    nodes.push(...(await Promise.all([startNode(store), startNode(store)])))
  }, 120_000)

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n?.stop().catch(() => undefined)))
    cluster?.stop()
  })

  /** Events per key: a create carries its key as the name, a set_price as its price (`prices`: key by price). */
  const eventsPerKey = async (prices: ReadonlyMap<number, string>) => {
    const rows = await cluster.sql<{ kind: string; name: string | null; price: string | null }>(DB,
      "select kind, data->>'name' as name, data->>'price' as price from writeonce.events")
    const perKey = new Map<string, number>()
    for (const r of rows) {
      const key = r.kind === "created" ? r.name! : prices.get(Number(r.price))
      if (key !== undefined) perKey.set(key, (perKey.get(key) ?? 0) + 1)
    }
    return perKey
  }

  it("a keyed write retried on the other node gets the stored answer; another request under the key is 422", async () => {
    const first = await keyed(0, "/api/products", { name: "x-1", price: 5, currency: "USD" }, "x-1")
    expect(first.status).toBe(201)
    const again = await keyed(1, "/api/products", { name: "x-1", price: 5, currency: "USD" }, "x-1")
    expect(again.status).toBe(201)
    expect(again.text).toBe(first.text)
    expect(again.headers.get("location")).toBe(first.headers.get("location"))
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    const reused = await keyed(1, "/api/products", { name: "x-1", price: 6, currency: "USD" }, "x-1")
    expect(reused.status).toBe(422)
    expect(reused.json.error).toBe("IdempotencyKeyReused")
    expect(await cluster.sql(DB, "select count(*)::int as n from writeonce.events where data->>'name' = 'x-1'")).toEqual([{ n: 1 }])
  })

  it("wo verify --store checks the stored keys: a whole store passes, a damaged key is named", async () => {
    const verify = () => runWo(["verify", "--store", store], { timeoutMs: 60_000 })
    const whole = await verify()
    expect(whole.stderr).not.toMatch(/PROBLEMS/)
    expect(whole.code).toBe(0)
    const original = await cluster.sql<{ result: string }>(DB, "select result from writeonce.idempotency_keys where key = 'x-1'")
    expect(original).toHaveLength(1)
    await cluster.sql(DB, `update writeonce.idempotency_keys set result = replace(result, '"price":5', '"price":9') where key = 'x-1'`)
    try {
      const damaged = await verify()
      expect(damaged.code).toBe(1)
      expect(damaged.stderr).toMatch(/corrupt record at key k!x-1: checksum mismatch/)
    } finally {
      await cluster.sql(DB, "update writeonce.idempotency_keys set result = $1 where key = 'x-1'", [original[0]!.result])
    }
    expect((await verify()).code).toBe(0)
  })

  it("the same keyed request sent to both nodes at once writes one event, 20 rounds; both answers are equal", async () => {
    const { json: p } = await keyed(0, "/api/products", { name: "race", price: 1, currency: "USD" }, "race")
    for (let i = 0; i < 200 && (await http(`${url(1)}/api/products/${p.id}`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 20))
    const prices = new Map<number, string>()
    for (let round = 0; round < 20; round++) {
      const key = `race-${round}`
      const price = 1000 + round
      prices.set(price, key)
      const [a, b] = await Promise.all([0, 1].map((n) => keyed(n, `/api/products/${p.id}/set_price`, { price }, key)))
      expect([a.status, b.status], `${a.text} ${b.text}`).toEqual([200, 200])
      expect(b.text).toBe(a.text)
      // Decided on both nodes or waited for on one: at most one answer is the first.
      expect([a, b].filter((r) => r.headers.get("idempotent-replayed") !== "true").length).toBeLessThanOrEqual(1)
    }
    const perKey = await eventsPerKey(prices)
    expect([...prices.values()].map((k) => `${k}: ${perKey.get(k)}`)).toEqual([...prices.values()].map((k) => `${k}: 1`))
  })

  it("the append leaves out a submission whose key is stored already (Duplicate, with the stored answer) and writes the rest", async () => {
    const created = (name: string): AppendEntry => {
      const data = { name, price: 3, currency: "USD" }
      return { event: { seq: 0, at: Date.now(), type: "products", id: "999999", version: 1, schema: 1, kind: "created", data }, row: { id: "999999", version: 1, ...data } }
    }
    const runtime = ManagedRuntime.make(pgConnectionLayer(store))
    try {
      const append = (batch: AppendBatch) => runtime.runPromise(Effect.flatMap(PgConnection, (conn) => appendBatch(conn, batch)))
      const first = await append({ entries: [created("dup-a")], counters: new Map(), keys: [{ key: "dup-a", fingerprint: "f1", at: 1, first: 0, count: 1 }] })
      const written = first.outcomes[0] as AppendEntry
      // The log gave the create its own id: the stored answer holds the entry as written.
      expect(written.event.id).not.toBe("999999")
      const second = await append({
        entries: [created("dup-a"), created("dup-b")],
        counters: new Map(),
        keys: [{ key: "dup-a", fingerprint: "f1", at: 2, first: 0, count: 1 }, { key: "dup-b", fingerprint: "f2", at: 2, first: 1, count: 1 }]
      })
      expect(second.outcomes[0]).toBe(Duplicate)
      expect((second.outcomes[1] as AppendEntry).event.data.name).toBe("dup-b")
      const stored = second.replays?.get("dup-a")
      expect(stored).toMatchObject({ key: "dup-a", fingerprint: "f1", at: 1 })
      expect(stored!.entries.map((e) => [e.event.seq, e.event.id, e.rowJson])).toEqual([[written.event.seq, written.event.id, written.rowJson]])
      expect(await cluster.sql(DB, "select data->>'name' as name, count(*)::int as n from writeonce.events where data->>'name' like 'dup-%' group by 1 order by 1"))
        .toEqual([{ name: "dup-a", n: 1 }, { name: "dup-b", n: 1 }])
      // A damaged key record is refused by name, never answered.
      await cluster.sql(DB, "update writeonce.idempotency_keys set result = replace(result, 'dup-b', 'dup-c') where key = 'dup-b'")
      await expect(append({ entries: [created("dup-b")], counters: new Map(), keys: [{ key: "dup-b", fingerprint: "f2", at: 3, first: 0, count: 1 }] }))
        .rejects.toThrow(/corrupt record at key k!dup-b: checksum mismatch/)
    } finally {
      await runtime.dispose()
    }
  })

  it("retry storm: a node killed with -9, then the primary killed with -9 and a standby promoted; every keyed write lands once", async () => {
    const client = new KeyedClient()
    const prices = new Map<number, string>()
    const products: Array<string> = []
    let next = 0
    const newWrite = (): KeyedWrite => {
      const key = `s-${next++}`
      if (products.length < 8 || next % 4 === 0) return { key, method: "POST", path: "/api/products", body: { name: key, price: 1, currency: "EUR" } }
      const price = 1_000_000 + next
      prices.set(price, key)
      return { key, method: "POST", path: `/api/products/${products[next % products.length]}/set_price`, body: { price } }
    }
    const live = () => nodes.map((n, i) => (n === undefined ? undefined : url(i))).filter((u): u is string => u !== undefined)
    let stop = false
    let answered = 0
    const worker = async (w: number) => {
      while (!stop) {
        const bases = live()
        const write = newWrite()
        const a = await client.send(bases[(w + next) % bases.length], write)
        if (a === undefined) {
          await new Promise((r) => setTimeout(r, 20))
          continue
        }
        expect(a.status, a.text).toBeLessThan(300)
        if (write.path === "/api/products") products.push(JSON.parse(a.text).id)
        answered++
      }
    }
    const waitAnswers = async (n: number, polls = 1200) => {
      for (let i = 0; i < polls && answered < n; i++) await new Promise((r) => setTimeout(r, 50))
      return answered
    }
    const workers = Array.from({ length: 16 }, (_, w) => worker(w))
    expect(await waitAnswers(100)).toBeGreaterThanOrEqual(100)
    // A wo node dies mid-write: its unanswered writes are retried on the other one. The victim is the node holding
    // the most sends waiting for their answer: the workers pile up on the slower node (a faster one answers at once),
    // and a kill of the other one could cut nothing (CI saw it), leaving the storm to test no retry.
    const waiting = (n: number) => client.inFlight.get(url(n)) ?? 0
    const v = waiting(0) >= waiting(1) ? 0 : 1
    const cutAtKill = waiting(v)
    await nodes[v]!.stop("SIGKILL")
    nodes[v] = undefined
    expect(cutAtKill).toBeGreaterThan(0)
    // What was in flight at the kill (on either node): retried on the live node, with the traffic going on.
    const inFlight = [...client.pending]
    expect(await waitAnswers(answered + 100)).toBeGreaterThanOrEqual(200)
    expect(await client.retryPending([url(1 - v)], 50, inFlight)).toEqual([])
    nodes[v] = await startNode(store)
    // The primary dies: both nodes fail over to the promoted standby.
    const beforeFailover = answered
    cluster.kill("primary")
    const promoted = cluster.promote()
    expect(["s1", "s2"]).toContain(promoted)
    expect(await waitAnswers(beforeFailover + 100)).toBeGreaterThanOrEqual(beforeFailover + 100)
    stop = true
    await Promise.all(workers)
    // A node that applied a commit the kill revealed and the promoted standby lacks has exited: started again.
    await restartDiverged(nodes, store)
    expect(await client.retryPending([url(0), url(1)])).toEqual([])
    const notReplayed = await client.resendAnswered([url(1), url(0)])
    const perKey = await eventsPerKey(prices)
    const wrong = [...client.intended.keys()].filter((k) => perKey.get(k) !== 1).map((k) => `${k}: ${perKey.get(k) ?? 0}`)
    console.info(`retry storm (PostgreSQL, kill -9 of a node, then of the primary, ${promoted} promoted): ${client.intended.size} keyed writes, ` +
      `${client.unanswered} sends unanswered (${client.landedUnanswered} had landed: their retry was a replay), ${client.replays} replays`)
    expect(wrong).toEqual([])
    expect(client.mismatches).toEqual([])
    expect(notReplayed).toBe(0)
    expect(client.unanswered).toBeGreaterThan(0)
  }, 240_000)
})
