/**
 * A clean stop of a `wo run --store postgres://…` node: SIGTERM to the real binary with writes in flight. Every
 * request gets an answer or a closed connection (none hangs), nothing acknowledged is lost, the node stores its
 * views' snapshot at the seq it applied, ends its PostgreSQL connections itself, and exits 0. On the run's shared
 * cluster, in a database of its own.
 *
 * How a connection ended shows in the server's log: with `log_min_messages = debug1` (set on this database only), a
 * backend whose client went away without saying goodbye (the process exited under it) logs "unexpected EOF on client
 * connection"; one the node closed (pg's Terminate message) logs nothing.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ROOT, tempDir } from "../../testkit/server.ts"
import { spawnWo, type Spawned } from "../../testkit/spawn.ts"
import { haveBinaries, missingAcks, sharedCluster, warnIfSkipped, type Ack, type PgCluster } from "./pg-cluster.ts"

warnIfSkipped("the PostgreSQL node's clean stop")

/** SIGTERM comes right after this many acknowledged writes, with the others still in flight: a count, not a time. */
const TERM_AT_ACKS = 200
const IN_FLIGHT = 32

type Outcome =
  | { readonly kind: "ack"; readonly ack: Ack }
  | { readonly kind: "refused"; readonly status: number; readonly text: string }
  | { readonly kind: "cut" }
  | { readonly kind: "hung" }

/** One write; a connection the server closes is "cut", one with no answer in 60 s "hung". */
const write = async (url: string, body: unknown, price: number): Promise<Outcome> => {
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(60_000)
    })
    const text = await res.text()
    if (res.status !== 200 && res.status !== 201) return { kind: "refused", status: res.status, text }
    const json = JSON.parse(text)
    return { kind: "ack", ack: { id: json.id, version: json.version, price, node: 0 } }
  } catch (e) {
    return (e as Error).name === "TimeoutError" ? { kind: "hung" } : { kind: "cut" }
  }
}

describe.skipIf(!haveBinaries)("a PostgreSQL node's clean stop", () => {
  let cluster: PgCluster
  const nodes: Array<Spawned> = []

  beforeAll(async () => {
    cluster = await sharedCluster()
  }, 180_000)

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop("SIGKILL").catch(() => undefined)))
    cluster?.stop()
  })

  it("SIGTERM under load: every request answered or cut, acks durable, views stored, connections ended by the node, exit 0", { timeout: 300_000 }, async () => {
    const database = "wo_clean_stop"
    const store = await cluster.createDatabase(database)
    await cluster.sql(database, `alter database ${database} set log_min_messages = 'debug1'`)
    const applicationName = `wo-clean-stop-${process.pid}`
    const node = await spawnWo(
      ["run", path.join(ROOT, "examples/pricing"), "--listen", "127.0.0.1:0", "--data", tempDir("wo-node-"), "--store", `${store}&application_name=${applicationName}`],
      // Only the stop stores the views (no snapshot every N events); a stop that hangs is killed, and fails below.
      { readyTimeoutMs: 150_000, stopTimeoutMs: 60_000, env: { WO_VIEW_SNAPSHOT_EVERY: "1000000" } }
    )
    nodes.push(node)

    const outcomes: Array<Outcome> = []
    const ids: Array<string> = []
    let acks = 0
    let stopped = false
    let reached!: () => void
    const enough = new Promise<void>((resolve) => (reached = resolve))
    const worker = async (w: number) => {
      for (let i = 0; !stopped; i++) {
        const price = w * 1_000_000 + i + 1
        const outcome = ids.length < 8 || i % 4 === 0
          ? await write(`${node.loopbackUrl}/api/products`, { name: `p${w}-${i}`, price, currency: "USD" }, price)
          : await write(`${node.loopbackUrl}/api/products/${ids[(w + i) % ids.length]}/set_price`, { price }, price)
        outcomes.push(outcome)
        if (outcome.kind === "ack") {
          if (outcome.ack.version === 1) ids.push(outcome.ack.id)
          if (++acks >= TERM_AT_ACKS) reached()
        } else if (outcome.kind === "cut") await new Promise((r) => setTimeout(r, 20)) // the node is gone: do not spin
      }
    }
    const load = Promise.all(Array.from({ length: IN_FLIGHT }, (_, w) => worker(w)))
    // If every worker ended first (the node stopped answering), signal anyway: the checks below fail.
    await Promise.race([enough, load])

    // The node's connections now, each a backend of the primary (the pool and the tailer's listener).
    const backends = (await cluster.sql<{ pid: number }>(database, "select pid from pg_stat_activity where application_name = $1", [applicationName]))
      .map((r) => r.pid)
    expect(backends.length).toBeGreaterThan(0)

    const ackedBeforeTerm = acks
    const signalled = Date.now()
    const code = await node.stop("SIGTERM")
    const exitMs = Date.now() - signalled
    stopped = true
    await load

    const refused = outcomes.filter((o) => o.kind === "refused")
    const cut = outcomes.filter((o) => o.kind === "cut").length
    console.log(`clean stop: exit ${code} after ${exitMs} ms; ${acks} writes acknowledged (${acks - ackedBeforeTerm} after SIGTERM), ` +
      `${refused.length} refused, ${cut} cut; ${backends.length} connections`)
    expect(code).toBe(0) // a stop that hung was killed after 60 s: null
    expect(node.output()).toMatch(/shutting down: flushing the last batch and closing the store/)
    expect(node.output()).not.toMatch(/cannot store this node's views/)

    // No request hung; a refusal says the node is stopping (or the store is away), never anything else.
    expect(outcomes.filter((o) => o.kind === "hung")).toEqual([])
    for (const r of refused) expect(`${r.status} ${r.text}`).toMatch(/^503 .*(shutting down|unavailable)/i)

    // Every acknowledged write is in the log, at its version and price.
    const acked = outcomes.flatMap((o) => (o.kind === "ack" ? [o.ack] : []))
    expect(acked.length).toBeGreaterThanOrEqual(TERM_AT_ACKS)
    expect(await missingAcks(cluster, database, acked)).toEqual([])

    // The views were stored at the stop, exact at the log's head (the node had applied every write it made).
    const [{ head }] = await cluster.sql<{ head: string }>(database, "select max(seq) as head from writeonce.events")
    const views = await cluster.sql<{ name: string; at: string }>(database, "select name, at from writeonce.views order by name")
    expect(views).toEqual([{ name: "products_by_currency", at: head }])

    // The node ended each of its connections itself: none is left, and no backend saw its client vanish.
    for (let i = 0; i < 300; i++) {
      const left = await cluster.sql(database, "select pid from pg_stat_activity where application_name = $1", [applicationName])
      if (left.length === 0) break
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(await cluster.sql(database, "select pid from pg_stat_activity where application_name = $1", [applicationName])).toEqual([])
    const serverLog = fs.readFileSync(path.join(cluster.dir, `${cluster.primary()}.log`), "utf8").split("\n")
    const vanished = backends.filter((pid) => serverLog.some((line) => line.includes(`[${pid}]`) && line.includes("unexpected EOF on client connection")))
    expect(vanished).toEqual([])
  })
})
