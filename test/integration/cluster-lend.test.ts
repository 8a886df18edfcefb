/**
 * A command that creates a row (`lend` creates a loan) on every node of one PostgreSQL log: after one node lends,
 * the others still can. Each node gives its creates ids from blocks of its own (commands/id-blocks.ts), so a command
 * is decided again only on a real conflict, never for an id another node took before. Two and three nodes, lends
 * alternating sequentially and all at once: every lend answered 200, none 503. On the run's shared cluster, in a
 * database of its own.
 */
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { http, ROOT, tempDir } from "../../testkit/server.ts"
import { spawnWo, type Spawned } from "../../testkit/spawn.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the cluster lend tests")

describe.skipIf(!haveBinaries)("lend on every node of one PostgreSQL log", () => {
  let cluster: PgCluster
  const appDir = writeAppDir(`export { default } from ${JSON.stringify(path.join(ROOT, "testkit/library-app.ts"))}\n`)
  const nodes: Array<Spawned> = []
  const post = (i: number, p: string, body: unknown) => http(`${nodes[i].loopbackUrl}${p}`, { method: "POST", body })
  let book = ""
  let member = ""

  /** Waits until node `i` serves the row (a node answers its own writes once applied; another node's, soon after). */
  const seen = async (i: number, p: string) => {
    for (let k = 0; k < 500 && (await http(`${nodes[i].loopbackUrl}${p}`)).status !== 200; k++) await new Promise((r) => setTimeout(r, 20))
  }

  const lend = (i: number) => post(i, "/api/_commands/lend", { book, member })
  /** The answers that are not 200, each with its node and text (an empty list is the expectation). */
  const failures = (answers: ReadonlyArray<{ readonly status: number; readonly text: string }>, on: (k: number) => number) =>
    answers.flatMap((a, k) => (a.status === 200 ? [] : [`node ${on(k)}: ${a.status} ${a.text}`]))

  beforeAll(async () => {
    cluster = await sharedCluster()
    const store = await cluster.createDatabase("wo_lend")
    const start = () => spawnWo(["run", appDir, "--listen", "127.0.0.1:0", "--data", tempDir("wo-node-"), "--store", store], { readyTimeoutMs: 150_000 })
    nodes.push(...(await Promise.all([start(), start(), start()])))
    book = (await post(0, "/api/books", { title: "Many copies" })).json.id
    expect((await post(0, `/api/books/${book}/add_copies`, { n: 10_000 })).status).toBe(200)
    member = (await post(0, "/api/members", { name: "Ann" })).json.id
    for (const i of [1, 2]) {
      await seen(i, `/api/books/${book}`)
      await seen(i, `/api/members/${member}`)
    }
  }, 180_000)

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop().catch(() => undefined)))
    cluster?.stop()
  })

  it("lend on node B, then on node A: both answered 200", async () => {
    const onB = await lend(1)
    expect(onB.status, onB.text).toBe(200)
    const onA = await lend(0)
    expect(onA.status, onA.text).toBe(200)
    // Each node gives loans ids from its own block: two ids, whatever their order.
    const loanOf = (r: typeof onA) => r.json.changes.find((c: { type: string }) => c.type === "loans").id
    expect(loanOf(onA)).not.toBe(loanOf(onB))
  }, 60_000)

  it("two nodes alternating lend one after another: 40 lends, all 200", async () => {
    const answers = []
    for (let k = 0; k < 40; k++) answers.push(await lend(k % 2))
    expect(failures(answers, (k) => k % 2)).toEqual([])
  }, 120_000)

  it("three nodes alternating lend one after another: 60 lends, all 200", async () => {
    const answers = []
    for (let k = 0; k < 60; k++) answers.push(await lend(k % 3))
    expect(failures(answers, (k) => k % 3)).toEqual([])
  }, 120_000)

  it("two nodes lending at once: 10 rounds of 20 concurrent lends, all 200", async () => {
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, k) => lend(k % 2)))
      expect(failures(answers, (k) => k % 2), `round ${round}`).toEqual([])
    }
  }, 180_000)

  it("three nodes lending at once: 10 rounds of 30 concurrent lends, all 200, every loan counted on the book", async () => {
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(Array.from({ length: 30 }, (_, k) => lend(k % 3)))
      expect(failures(answers, (k) => k % 3), `round ${round}`).toEqual([])
    }
    const [counted] = await cluster.sql<{ lent: number; loans: number }>("wo_lend",
      `select (b.row->>'copies')::int - (b.row->>'available')::int as lent,
         (select count(*)::int from writeonce.rows l where l.type = 'loans') as loans
       from writeonce.rows b where b.type = 'books' and b.id = $1`, [book])
    // 2 + 40 + 60 + 200 + 300 lends in this file, each one loan and one copy.
    expect(counted).toEqual({ lent: 602, loans: 602 })
  }, 240_000)
})
