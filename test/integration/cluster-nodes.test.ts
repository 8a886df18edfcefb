/**
 * Several stateless `wo` nodes on one PostgreSQL log: 1 primary, 2 synchronous standbys and 3 nodes,
 * all real processes on loopback, started once for the file. Counts and order are asserted, never durations;
 * "eventually" is a bounded number of polls.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MCP_HEADERS, openSession } from "../../testkit/legacy-client.ts"
import { openListen } from "../../testkit/modern-client.ts"
import { http } from "../../testkit/server.ts"
import { openSse, type SseConnection } from "../../testkit/sse.ts"
import { runWo, type Spawned } from "../../testkit/spawn.ts"
import { convergeOn, haveBinaries, lagsOf, latestRows, missingAcks, restartDiverged, startCluster, startNode, warnIfSkipped, writeLoad, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the multi-node cluster tests")

let ids = 1000
const legacyPost = (url: string, session: string, method: string, params?: unknown) =>
  http(`${url}/mcp`, {
    method: "POST",
    headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
    body: { jsonrpc: "2.0", id: ids++, method, ...(params === undefined ? {} : { params }) }
  })
const legacyStream = (url: string, session: string, lastEventId?: string) =>
  openSse(`${url}/mcp`, {
    headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25", ...(lastEventId ? { "last-event-id": lastEventId } : {}) }
  })
const create = async (url: string, price = 1) => (await http(`${url}/api/products`, { method: "POST", body: { name: "p", price, currency: "USD" } })).json
const setPrice = (url: string, id: string, price: number, ifMatch?: number) =>
  http(`${url}/api/products/${id}/set_price`, { method: "POST", body: { price }, ...(ifMatch === undefined ? {} : { headers: { "if-match": `"${ifMatch}"` } }) })
/** The next `n` notifications' (uri, seq) on a stream; a missing one is undefined. */
const take = async (stream: SseConnection, n: number) => {
  const out: Array<{ uri: string; id: string | undefined }> = []
  for (let i = 0; i < n; i++) {
    const m = await stream.nextJson(10_000)
    if (m === undefined) break
    out.push({ uri: m.json.params?.uri, id: m.id })
  }
  return out
}

describe.skipIf(!haveBinaries)("three wo nodes on one PostgreSQL log (a primary and two synchronous standbys)", () => {
  let cluster: PgCluster
  let store = ""
  const nodes: Array<Spawned | undefined> = []
  const url = (i: number) => nodes[i]!.loopbackUrl
  const urls = () => nodes.map((n) => n?.loopbackUrl)

  beforeAll(async () => {
    cluster = await startCluster()
    store = await cluster.createDatabase("wo_nodes")
    nodes.push(...(await Promise.all([startNode(store), startNode(store), startNode(store)])))
  }, 120_000)

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n?.stop().catch(() => undefined)))
    cluster?.stop()
  })

  it("acks round-robin writes (32 in flight) that every node then serves at their version; each node reads its own writes", async () => {
    const load = writeLoad(urls)
    for (let i = 0; i < 200 && load.acked.length < 600; i++) await new Promise((r) => setTimeout(r, 100))
    await load.stop()
    expect(load.acked.length).toBeGreaterThanOrEqual(600)
    expect(load.failures()).toEqual([])
    expect(load.staleReads()).toBe(0) // read-your-writes on the acking node
    expect(await missingAcks(cluster, "wo_nodes", load.acked)).toEqual([])
    // Versions of one entity are distinct across nodes (set_price has no expected version: re-decided, never lost).
    const seen = new Set(load.acked.map((a) => `${a.id}@${a.version}`))
    expect(seen.size).toBe(load.acked.length)
    const latest = await latestRows(cluster, "wo_nodes")
    for (let i = 0; i < 3; i++) expect(await lagsOf(cluster, "wo_nodes", nodes[i]!, latest), `node ${i}`).toEqual([])
  })

  it("lets exactly one of two nodes win each of 200 races with the same expected version; without one, both land", async () => {
    const { id } = await create(url(0))
    let version = 1
    for (let round = 0; round < 200; round++) {
      const [a, b] = await Promise.all([setPrice(url(0), id, 1000 + round, version), setPrice(url(1), id, 2000 + round, version)])
      const statuses = [a.status, b.status].sort()
      expect(statuses, `round ${round}: ${a.text} ${b.text}`).toEqual([200, 412])
      version++
    }
    const both = await Promise.all([setPrice(url(1), id, 1), setPrice(url(2), id, 2)])
    expect(both.map((r) => r.status)).toEqual([200, 200])
    expect(both.map((r) => r.json.version).sort()).toEqual([version + 1, version + 2])
  })

  it("notifies a subscriber on node C (legacy session and modern listen) of writes made through node A, in order", async () => {
    const { id } = await create(url(0))
    const uri = `wo://products/${id}`
    // Node C must know the product before the subscriber can watch it (it answers a write only once applied).
    expect(await convergeOn(url(2), new Map([[id, 1]]))).toEqual([])
    const session = await openSession(url(2))
    expect((await legacyPost(url(2), session, "resources/subscribe", { uri })).json.result).toEqual({})
    const stream = await legacyStream(url(2), session)
    const listen = await openListen(url(2), "c-1", [uri])
    expect((await listen.nextJson(10_000))?.json.params.notifications).toEqual({ resourceSubscriptions: [uri] })
    try {
      for (let i = 0; i < 5; i++) expect((await setPrice(url(0), id, 10 + i)).status).toBe(200)
      const legacy = await take(stream, 5)
      expect(legacy.map((n) => n.uri)).toEqual(Array(5).fill(uri))
      const seqs = legacy.map((n) => Number(n.id!.slice(4)))
      expect([...seqs].sort((x, y) => x - y)).toEqual(seqs)
      expect(new Set(seqs).size).toBe(5)
      const modern = await take(listen, 5)
      expect(modern.map((n) => n.uri)).toEqual(Array(5).fill(uri))
      expect(await stream.nextJson(300)).toBeUndefined() // exactly once each
    } finally {
      stream.close()
      listen.close()
    }
  })

  it("continues a legacy session made on node A on node B, whose GET stream resumes with Last-Event-ID: nothing missed or doubled", async () => {
    const { id } = await create(url(0))
    const uri = `wo://products/${id}`
    const session = await openSession(url(0))
    expect((await legacyPost(url(0), session, "resources/subscribe", { uri })).json.result).toEqual({})
    // Node B serves the session it never saw, and its stream carries a write made through node C.
    expect((await legacyPost(url(1), session, "ping")).status).toBe(200)
    const first = await legacyStream(url(1), session)
    expect((await setPrice(url(2), id, 2)).status).toBe(200)
    const seen = await first.nextJson(10_000)
    expect(seen?.json.params.uri).toBe(uri)
    first.close()
    // Missed while no stream was open: two writes through two nodes.
    expect((await setPrice(url(0), id, 3)).status).toBe(200)
    expect((await setPrice(url(2), id, 4)).status).toBe(200)
    // Resumed on node C with the last id seen on node B.
    const resumed = await legacyStream(url(2), session, seen!.id)
    try {
      const replayed = await take(resumed, 2)
      expect(replayed.map((n) => n.uri)).toEqual([uri, uri])
      const seqs = [seen!.id, ...replayed.map((n) => n.id)].map((x) => Number(x!.slice(4)))
      expect(seqs[1]).toBeGreaterThan(seqs[0])
      expect(seqs[2]).toBeGreaterThan(seqs[1])
      expect(await resumed.nextJson(300)).toBeUndefined()
      expect((await setPrice(url(1), id, 5)).status).toBe(200)
      expect((await resumed.nextJson(10_000))?.json.params.uri).toBe(uri)
      // Ended on node B: gone on every node.
      const del = await http(`${url(1)}/mcp`, { method: "DELETE", headers: { "mcp-session-id": session } })
      expect(del.status).toBe(200)
      expect((await legacyPost(url(0), session, "ping")).status).toBe(404)
    } finally {
      resumed.close()
    }
  })

  it("loses no acked write when a wo node, then a standby, is killed with -9 under load; the others carry on", async () => {
    const load = writeLoad(urls)
    const waitAcks = async (n: number) => {
      for (let i = 0; i < 600 && load.acked.length < n; i++) await new Promise((r) => setTimeout(r, 50))
      return load.acked.length
    }
    expect(await waitAcks(200)).toBeGreaterThanOrEqual(200)
    const victim = nodes[2]!
    nodes[2] = undefined
    victim.child.kill("SIGKILL")
    const atNodeKill = load.acked.length
    expect(await waitAcks(atNodeKill + 200)).toBeGreaterThanOrEqual(atNodeKill + 200)
    cluster.kill("s2")
    const atStandbyKill = load.acked.length
    expect(await waitAcks(atStandbyKill + 200)).toBeGreaterThanOrEqual(atStandbyKill + 200)
    await load.stop()
    expect(await missingAcks(cluster, "wo_nodes", load.acked)).toEqual([])
    console.info(`kill -9 of a wo node and of a standby: ${load.acked.length} acked, 0 lost, ${load.errors()} requests failed`)
    cluster.restart()
    // The killed node comes back (any data dir will do: the state is in PostgreSQL) and serves everything.
    nodes[2] = await startNode(store)
    const latest = await latestRows(cluster, "wo_nodes")
    expect(await lagsOf(cluster, "wo_nodes", nodes[2]!, latest)).toEqual([])
  })

  it("loses no acked write when the primary is killed with -9 under load and the most advanced standby promoted", async () => {
    const load = writeLoad(urls)
    const waitAcks = async (n: number, polls = 600) => {
      for (let i = 0; i < polls && load.acked.length < n; i++) await new Promise((r) => setTimeout(r, 50))
      return load.acked.length
    }
    expect(await waitAcks(200)).toBeGreaterThanOrEqual(200)
    cluster.kill("primary")
    const atKill = load.acked.length
    const promoted = cluster.promote()
    expect(["s1", "s2"]).toContain(promoted)
    // The nodes find the new primary among their hosts and carry on.
    expect(await waitAcks(atKill + 200, 1200)).toBeGreaterThanOrEqual(atKill + 200)
    await load.stop()
    const missing = await missingAcks(cluster, "wo_nodes", load.acked)
    expect(missing).toEqual([])
    const latest = await latestRows(cluster, "wo_nodes")
    const restarted = new Set<number>()
    for (let i = 0; i < 3; i++) {
      let lags = await lagsOf(cluster, "wo_nodes", nodes[i]!, latest)
      // A node that applied a commit the kill revealed and the promoted standby lacks has exited: started again.
      for (const r of await restartDiverged(nodes, store)) restarted.add(r)
      if (restarted.has(i)) lags = await lagsOf(cluster, "wo_nodes", nodes[i]!, latest)
      expect(lags, `node ${i}`).toEqual([])
    }
    console.info(`kill -9 of the primary, ${promoted} promoted: ${load.acked.length} acked (${atKill} before the kill), 0 lost; ` +
      `${restarted.size} nodes had applied an unacknowledged commit, exited and were started again`)
  })

  it("verifies the shared store (wo verify --store) and rebuilds its rows from the log (wo replay --store)", async () => {
    const verify = await runWo(["verify", "--store", store], { timeoutMs: 60_000 })
    expect(verify.stderr).not.toMatch(/PROBLEMS/)
    expect(verify.code).toBe(0)
    expect(verify.stdout).toMatch(/^verified \d+ events and \d+ rows/m)
    const replayed = await runWo(["replay", "--app", "examples/pricing", "--store", store], { timeoutMs: 60_000 })
    expect(replayed.code).toBe(0)
    expect(replayed.stdout).toMatch(/OK: the stored rows equal the log's fold/)
    // One stored row damaged: named by both.
    await cluster.sql("wo_nodes", `update writeonce.rows set row = replace(row::text, '"name":"p"', '"name":"q"')::json where id = (select min(id) from writeonce.rows where row::text like '%"name":"p"%')`)
    const damaged = await runWo(["verify", "--store", store], { timeoutMs: 60_000 })
    expect(damaged.code).toBe(1)
    expect(damaged.stderr).toMatch(/corrupt record at key r!products\/\d+: checksum mismatch/)
  })
})
