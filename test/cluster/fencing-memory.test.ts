/**
 * Fencing that survives a restart: a node keeps in its data dir the store's identity, the highest timeline and the
 * WAL position it has seen (log/postgres/fence-memory.ts), and refuses any primary behind them, after a kill -9
 * too. A fresh node refuses to choose while a listed host it cannot compare is unreachable. A cluster of the
 * file's own: it kills, promotes, pauses, and brings an old primary back writable. Counts are asserted, never
 * durations.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { http, tempDir } from "../../testkit/server.ts"
import { spawnWo, type Spawned } from "../../testkit/spawn.ts"
import { convergeOn, haveBinaries, latestRows, startCluster, warnIfSkipped, type PgCluster, type PgNode } from "./pg-cluster.ts"

warnIfSkipped("the fencing memory tests")

const DB = "wo_fence"
/** The file a node keeps what it saw of the store in, in its data dir. */
const MEMORY = "store-seen.json"
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** `wo run` on the given data dir, its start allowed to wait long (a node waiting for a paused primary). */
const startNodeOn = (dataDir: string, store: string, timeout: string) =>
  spawnWo(["run", "examples/pricing", "--listen", "127.0.0.1:0", "--data", dataDir, "--store", store], {
    env: { WO_STORE_TIMEOUT: timeout, WO_MAX_PAGE_SIZE: "100000" },
    readyTimeoutMs: 180_000
  })

/** How many events the server on that port holds (one server, not the cluster's primary). */
const eventsOn = async (port: number) => {
  const c = new pg.Client({ host: "127.0.0.1", port, user: "postgres", database: DB })
  await c.connect()
  try {
    return Number((await c.query<{ n: string }>("select count(*) as n from writeonce.events")).rows[0].n)
  } finally {
    await c.end()
  }
}

/** The memory file's timeline, or undefined while there is none. */
const rememberedTimeline = (dataDir: string): number | undefined => {
  try {
    return (JSON.parse(fs.readFileSync(path.join(dataDir, MEMORY), "utf8")) as { timeline: number }).timeline
  } catch {
    return undefined
  }
}

/** Whether a start that must fail failed: its error (the node's output), or a failure of the test if it served. */
const startFailure = async (start: Promise<Spawned>) => {
  const outcome = await start.then((n) => n, (e: Error) => e)
  if (outcome instanceof Error) return outcome.message
  await outcome.stop("SIGKILL")
  throw new Error(`the node started and served at ${outcome.loopbackUrl}:\n${outcome.output().slice(-4096)}`)
}

describe.skipIf(!haveBinaries)("a node's memory of the store: an old primary back writable while the new one is paused", () => {
  let cluster: PgCluster
  let store = ""
  const started: Array<Spawned> = []
  const dataDir = tempDir("wo-fence-node-")
  let promoted: PgNode = "s1"
  let oldEvents = 0

  beforeAll(async () => {
    cluster = await startCluster()
    store = await cluster.createDatabase(DB)
  }, 180_000)

  afterAll(async () => {
    await Promise.all(started.map((n) => n.stop("SIGKILL").catch(() => undefined)))
    cluster?.stop()
  })

  it("a node kill -9'd and restarted while the promoted primary is paused does not take the old primary back writable; a fresh node refuses to start", async () => {
    let node = await startNodeOn(dataDir, store, "60s")
    started.push(node)
    for (let i = 0; i < 5; i++) expect((await http(`${node.loopbackUrl}/api/products`, { method: "POST", body: { name: `before-${i}`, price: 1, currency: "USD" } })).status).toBe(201)

    cluster.kill("primary")
    promoted = cluster.promote()
    // The node follows the promotion; what it writes from then on exists only on the new timeline.
    let after = 0
    for (let i = 0; i < 200 && after < 5; i++) {
      const res = await http(`${node.loopbackUrl}/api/products`, { method: "POST", body: { name: `after-${after}`, price: 2, currency: "USD" } }).catch(() => undefined)
      if (res?.status === 201) after++
      else await pause(100)
    }
    expect(after).toBe(5)
    for (let i = 0; i < 200 && rememberedTimeline(dataDir) !== 2; i++) await pause(50)
    expect(rememberedTimeline(dataDir)).toBe(2)

    // The operator's mistake: the old primary comes back writable, on its old timeline, lacking the writes since,
    // and alone (no synchronous standby to wait for): it would acknowledge writes.
    fs.appendFileSync(path.join(cluster.dir, "primary", "postgresql.auto.conf"), "synchronous_standby_names = ''\n")
    cluster.startAsIs("primary")
    oldEvents = await eventsOn(cluster.port("primary"))
    const latest = await latestRows(cluster, DB)
    expect(latest.size).toBe(10)

    cluster.pause(promoted, true)
    let restarted: Promise<Spawned> | undefined
    let servedDuringPause = false
    try {
      await node.stop("SIGKILL")
      restarted = startNodeOn(dataDir, store, "60s")
      restarted.then(() => (servedDuringPause = true), () => undefined)
      // A fresh node sees one writable server and one it cannot reach: it cannot tell which is newer, and says so.
      const fresh = await startFailure(startNodeOn(tempDir("wo-fence-fresh-"), store, "3s"))
      console.info(`a fresh node while the promoted primary is paused: ${fresh.split("\n").find((l) => l.includes("refusing to start")) ?? fresh}`)
      expect(fresh).toMatch(/refusing to start after waiting 3000 ms \(WO_STORE_TIMEOUT\): this node has no memory of this store yet/)
      expect(fresh).toContain(`127.0.0.1:${cluster.port(promoted)}`)
      // The restarted node remembers timeline 2: it waits for a primary at least that new.
      expect(servedDuringPause).toBe(false)
    } finally {
      cluster.pause(promoted, false)
    }
    node = await restarted!
    started.push(node)
    console.info(`the node restarted after kill -9: ${node.output().split("\n").find((l) => l.includes("waiting for a PostgreSQL primary"))}`)
    expect(node.output()).toMatch(/timeline 1 < 2/)
    // It serves the promoted primary's rows (none stale) and writes there.
    expect(await convergeOn(node.loopbackUrl, latest)).toEqual([])
    const created = await http(`${node.loopbackUrl}/api/products`, { method: "POST", body: { name: "restarted", price: 3, currency: "USD" } })
    expect(created.status).toBe(201)
    expect(await cluster.sql(DB, "select 1 from writeonce.events where type = 'products' and id = $1", [created.json.id])).toHaveLength(1)
    // Nothing was written to the old primary.
    expect(await eventsOn(cluster.port("primary"))).toBe(oldEvents)
  }, 300_000)

  it("a data dir that remembers another cluster's system identifier refuses the store's servers by name", async () => {
    const memory = JSON.parse(fs.readFileSync(path.join(dataDir, MEMORY), "utf8")) as { systemIdentifier: string }
    const other = tempDir("wo-fence-other-")
    const foreign = memory.systemIdentifier.endsWith("1") ? memory.systemIdentifier.replace(/1$/, "2") : memory.systemIdentifier.replace(/.$/, "1")
    fs.writeFileSync(path.join(other, MEMORY), JSON.stringify({ ...memory, systemIdentifier: foreign }))
    const refused = await startFailure(startNodeOn(other, store, "2s"))
    expect(refused).toContain(`another PostgreSQL cluster (system identifier ${memory.systemIdentifier}; this node's data dir remembers ${foreign}`)
    expect(refused).toContain(`If the store moved to that cluster on purpose, delete ${path.join(other, MEMORY)}`)
    // The memory is left as it was: refusing writes nothing.
    expect(JSON.parse(fs.readFileSync(path.join(other, MEMORY), "utf8")).systemIdentifier).toBe(foreign)
    expect(await eventsOn(cluster.port("primary"))).toBe(oldEvents)
  }, 120_000)
})
