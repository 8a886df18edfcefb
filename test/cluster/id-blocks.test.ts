/**
 * Ids without contention across nodes: each node gives its creates ids from blocks it reserved from the store, so
 * creates on several nodes at once are never refused or renumbered for an id another node took. A single node
 * still gives 1, 2, 3…; ids stay unique when a node is killed with -9 in the middle of a block (its unused ids are
 * skipped), and when a node stopped cleanly gives back the end of its last block (only if no block came after it). On the run's shared cluster, in databases of their own.
 */
import { Effect, ManagedRuntime } from "effect"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PgConnection, pgConnectionLayer } from "../../src/log/postgres/connection.ts"
import { ensureSchema, SCHEMA } from "../../src/log/postgres/schema.ts"
import { checksum, typeKey, typePayload } from "../../src/log/postgres/records.ts"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { http, ROOT, tempDir } from "../../testkit/server.ts"
import { runWo, spawnWo, type Spawned } from "../../testkit/spawn.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "./pg-cluster.ts"

warnIfSkipped("the id block tests")

const appDir = writeAppDir(`export { default } from ${JSON.stringify(path.join(ROOT, "testkit/library-app.ts"))}\n`)
const COST = /(\d+) entries refused as stale, (\d+) creates given another id/g

/** A node's last report of what its appends cost (Debug, every 2 s): entries refused as stale, creates renumbered. */
const contention = (node: Spawned) => {
  const all = [...node.output().matchAll(COST)]
  const last = all[all.length - 1]
  return last === undefined ? undefined : { stale: Number(last[1]), renumbered: Number(last[2]) }
}

describe.skipIf(!haveBinaries)("blocks of ids per node on one PostgreSQL log", () => {
  let cluster: PgCluster
  const nodes: Array<Spawned> = []

  beforeAll(async () => {
    cluster = await sharedCluster()
  }, 180_000)

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop().catch(() => undefined)))
    cluster?.stop()
  })

  const start = (store: string, dataDir = tempDir("wo-node-")) =>
    spawnWo(["run", appDir, "--listen", "127.0.0.1:0", "--data", dataDir, "--store", store], {
      readyTimeoutMs: 150_000,
      env: { WO_LOG_LEVEL: "Debug", WO_ID_BLOCK: "20" }
    }).then((n) => {
      nodes.push(n)
      return n
    })
  const post = (node: Spawned, p: string, body: unknown) => http(`${node.loopbackUrl}${p}`, { method: "POST", body })

  it("the database computes a types row's checksum as the node does", async () => {
    const store = await cluster.createDatabase("wo_ids_sum")
    const runtime = ManagedRuntime.make(pgConnectionLayer(store))
    try {
      await runtime.runPromise(Effect.flatMap(PgConnection, (conn) => ensureSchema(conn)))
    } finally {
      await runtime.dispose()
    }
    for (const [type, last, rows] of [["loans", 0, 0], ["books", 123456789, 42], ["bücher_ß", 9_007_199_254, 3]] as const) {
      const [{ sum }] = await cluster.sql<{ sum: string }>("wo_ids_sum", `select ${SCHEMA}.type_checksum($1, $2, $3) as sum`, [type, last, rows])
      expect(sum, type).toBe(checksum(typeKey(type), typePayload(last, rows)))
    }
  })

  it("three nodes lending and creating at once: no entry refused as stale, no create renumbered; a lone node gave 1, 2, 3", { timeout: 300_000 }, async () => {
    const store = await cluster.createDatabase("wo_ids_lend")
    const [a, b, c] = await Promise.all([start(store), start(store), start(store)])
    const three = [a, b, c]
    // Node A alone: the ids of its first block, in order.
    const books: Array<string> = []
    for (let i = 0; i < 3; i++) books.push((await post(a, "/api/books", { title: `b${i}` })).json.id)
    expect(books).toEqual(["1", "2", "3"])
    for (const id of books) expect((await post(a, `/api/books/${id}/add_copies`, { n: 10_000 })).status).toBe(200)
    const member = (await post(a, "/api/members", { name: "Ann" })).json.id
    for (const n of three) {
      for (let k = 0; k < 500 && (await http(`${n.loopbackUrl}/api/members/${member}`)).status !== 200; k++) await new Promise((r) => setTimeout(r, 20))
      for (let k = 0; k < 500 && (await http(`${n.loopbackUrl}/api/books/3`)).status !== 200; k++) await new Promise((r) => setTimeout(r, 20))
    }
    // Each node lends its own book (no real conflict: only the loans' ids are shared) and creates members, 10 at
    // a time per node, 15 rounds: more than a block of each type per node.
    const answers: Array<{ status: number; text: string; json: any }> = []
    for (let round = 0; round < 15; round++) {
      answers.push(...(await Promise.all(three.flatMap((n, i) => [
        ...Array.from({ length: 6 }, () => post(n, "/api/_commands/lend", { book: books[i], member })),
        ...Array.from({ length: 4 }, (_, k) => post(n, "/api/members", { name: `m${round}-${i}-${k}` }))
      ]))))
    }
    expect(answers.filter((r) => r.status !== 200 && r.status !== 201).map((r) => `${r.status} ${r.text}`)).toEqual([])
    const loanIds = answers.flatMap((r) => (r.json.changes ?? []).filter((ch: { type: string }) => ch.type === "loans").map((ch: { id: string }) => ch.id))
    expect(loanIds.length).toBe(270)
    expect(new Set(loanIds).size).toBe(270)
    const memberIds = answers.filter((r) => r.json.changes === undefined).map((r) => r.json.id)
    expect(new Set(memberIds).size).toBe(180)
    // Every node reported its appends' cost since the last write (every 2 s): nothing refused or renumbered.
    await new Promise((r) => setTimeout(r, 4500))
    expect(three.map(contention)).toEqual(three.map(() => ({ stale: 0, renumbered: 0 })))
    const [{ loans }] = await cluster.sql<{ loans: number }>("wo_ids_lend", "select count(*)::int as loans from writeonce.rows where type = 'loans'")
    expect(loans).toBe(270)
  })

  it("a node stopped cleanly gives back the rest of its last block; one killed leaves it skipped", { timeout: 300_000 }, async () => {
    const store = await cluster.createDatabase("wo_ids_restart")
    const dir = tempDir("wo-node-")
    const create = async (node: Spawned) => (await post(node, "/api/members", { name: "x" })).json.id
    const first = await start(store, dir)
    expect([await create(first), await create(first), await create(first)]).toEqual(["1", "2", "3"])
    expect(await first.stop()).toBe(0)
    // Blocks of 20: ids 4 to 20 went back at the clean stop, and the next node goes on from there.
    const second = await start(store, dir)
    expect(await create(second)).toBe("4")
    // Killed: ids 5 to 23 are never given.
    await second.stop("SIGKILL")
    const third = await start(store, dir)
    expect(await create(third)).toBe("24")
    expect(await third.stop()).toBe(0)
    const [{ last_id }] = await cluster.sql<{ last_id: string }>("wo_ids_restart", "select last_id::text from writeonce.types where type = 'members'")
    expect(last_id).toBe("24")
  })

  it("a clean stop gives nothing back once another node reserved after it: no id is given twice", { timeout: 300_000 }, async () => {
    const store = await cluster.createDatabase("wo_ids_stop_two")
    const create = async (node: Spawned) => (await post(node, "/api/members", { name: "x" })).json.id
    const a = await start(store)
    expect(await create(a)).toBe("1") // A holds 1 to 20
    const b = await start(store)
    expect(await create(b)).toBe("21") // B holds 21 to 40
    expect(await a.stop()).toBe(0) // 2 to 20 stay unused: B's block came after
    const c = await start(store)
    expect(await create(c)).toBe("41")
    expect(await create(b)).toBe("22")
    expect(await b.stop()).toBe(0) // C's block came after B's: nothing given back
    expect(await c.stop()).toBe(0) // C's was the last: 42 to 60 go back
    const d = await start(store)
    expect(await create(d)).toBe("42")
    const rows = await cluster.sql<{ id: string }>("wo_ids_stop_two", "select id from writeonce.rows where type = 'members' order by id::bigint")
    expect(rows.map((r) => r.id)).toEqual(["1", "21", "22", "41", "42"])
    // The types rows moved back keep their checksums and counters whole.
    await d.stop()
    const verified = await runWo(["verify", "--app", appDir, "--store", store], { timeoutMs: 120_000 })
    expect(verified.code, verified.stderr).toBe(0)
  })

  it("a node killed with -9 in the middle of a block: the others and the node restarted go on, no id given twice", { timeout: 300_000 }, async () => {
    const store = await cluster.createDatabase("wo_ids_kill")
    const dirB = tempDir("wo-node-")
    const [a, b0, c] = await Promise.all([start(store), start(store, dirB), start(store)])
    let b: Spawned | undefined = b0
    const acked: Array<{ id: string; name: string }> = []
    let stopped = false
    const failed: Array<string> = []
    const load = async (who: () => Spawned | undefined, tag: string) => {
      for (let i = 0; !stopped; i++) {
        const n = who()
        if (n === undefined) {
          await new Promise((r) => setTimeout(r, 20))
          continue
        }
        const name = `${tag}-${i}`
        try {
          const res = await post(n, "/api/members", { name })
          if (res.status === 201) acked.push({ id: res.json.id, name })
          else failed.push(`${tag}: ${res.status} ${res.text}`)
        } catch {
          failed.push(`${tag}: cut off`) // killed under it: not acknowledged
        }
      }
    }
    const workers = [0, 1, 2, 3].flatMap((w) => [load(() => a, `a${w}`), load(() => b, `b${w}`), load(() => c, `c${w}`)])
    while (acked.filter((x) => x.name.startsWith("b")).length < 25) await new Promise((r) => setTimeout(r, 20))
    // Node B has a block half used (blocks of 20): killed, its unused ids are never given.
    b = undefined
    await b0.stop("SIGKILL")
    const beforeRestart = acked.length
    while (acked.length < beforeRestart + 40) await new Promise((r) => setTimeout(r, 20))
    b = await start(store, dirB)
    const restartedAt = acked.length
    while (acked.filter((x, k) => k >= restartedAt && x.name.startsWith("b")).length < 25) await new Promise((r) => setTimeout(r, 20))
    stopped = true
    await Promise.all(workers)
    // No acknowledged create lost or given an id twice: each acked id is the row of the member named in its request.
    expect(new Set(acked.map((x) => x.id)).size).toBe(acked.length)
    const stored = await cluster.sql<{ id: string; name: string }>("wo_ids_kill", "select id, row ->> 'name' as name from writeonce.rows where type = 'members'")
    const byId = new Map(stored.map((r) => [r.id, r.name]))
    for (const x of acked) expect(byId.get(x.id), x.id).toBe(x.name)
    expect(new Set(stored.map((r) => r.id)).size).toBe(stored.length)
    // The only failures are the requests cut off by the kill.
    expect(failed.filter((f) => !f.endsWith("cut off")), failed.join("\n")).toEqual([])
    expect(failed.length).toBeLessThanOrEqual(4)
    const [{ last }] = await cluster.sql<{ last: number }>("wo_ids_kill", "select last_id::int as last from writeonce.types where type = 'members'")
    expect(Math.max(...stored.map((r) => Number(r.id)))).toBeLessThanOrEqual(last)
  })
})
