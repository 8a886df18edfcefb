/**
 * References across nodes on one PostgreSQL log: a member deleted on one node while a book is lent to it on the
 * other never leaves a loan pointing at a deleted member (the append checks references under the writers' lock),
 * and `wo verify --app` names a dangling reference planted through the store's own append. Two `wo run` nodes of
 * the library sample (members deletable), on the run's shared cluster, in a database of its own.
 */
import { Effect, ManagedRuntime } from "effect"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PgConnection, pgConnectionLayer } from "../../src/log/postgres/connection.ts"
import { appendBatch } from "../../src/log/postgres/append.ts"
import { isWritten, type AppendEntry, type BatchReferences } from "../../src/log/event-log.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { ensureSchema } from "../../src/log/postgres/schema.ts"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { http, ROOT, tempDir } from "../../testkit/server.ts"
import { runWo, spawnWo, type Spawned } from "../../testkit/spawn.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the cross-node reference tests")

const RACES = 40

describe.skipIf(!haveBinaries)("references across two nodes on one PostgreSQL log", () => {
  let cluster: PgCluster
  let store = ""
  const appDir = writeAppDir(`export { default } from ${JSON.stringify(path.join(ROOT, "testkit/library-deletable-members.ts"))}\n`)
  const nodes: Array<Spawned> = []
  const url = (i: number) => nodes[i].loopbackUrl
  const post = (i: number, p: string, body: unknown) => http(`${url(i)}${p}`, { method: "POST", body })
  /** Waits until node `i` serves the row (a node answers a write once it applied it, the other a moment later). */
  const seen = async (i: number, p: string) => {
    for (let n = 0; n < 500 && (await http(`${url(i)}${p}`)).status !== 200; n++) await new Promise((r) => setTimeout(r, 20))
  }
  /** Live loans whose member is not a live member. */
  const dangling = () =>
    cluster.sql<{ id: string; member: string }>("wo_refs",
      `select l.id, l.row->>'member' as member from writeonce.rows l
        where l.type = 'loans' and l.row is not null
          and not exists (select 1 from writeonce.rows m where m.type = 'members' and m.id = l.row->>'member' and m.row is not null)`)

  beforeAll(async () => {
    cluster = await sharedCluster()
    store = await cluster.createDatabase("wo_refs")
    const start = () => spawnWo(["run", appDir, "--listen", "127.0.0.1:0", "--data", tempDir("wo-node-"), "--store", store])
    nodes.push(...(await Promise.all([start(), start()])))
  }, 120_000)

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop().catch(() => undefined)))
    cluster?.stop()
  })

  it(`${RACES} races of a member's delete on one node against a lend to it on the other: one wins, no loan dangles`, { timeout: 300_000 }, async () => {
    const book = (await post(0, "/api/books", { title: "Dune", author: "Frank Herbert" })).json.id as string
    expect((await post(0, `/api/books/${book}/add_copies`, { n: 1000 })).status).toBe(200)
    await seen(1, `/api/books/${book}`)
    const outcomes: Record<string, number> = {}
    for (let race = 0; race < RACES; race++) {
      // Alternate which node deletes and which lends.
      const [deleter, lender] = race % 2 === 0 ? [0, 1] : [1, 0]
      const member = (await post(lender, "/api/members", { name: `m${race}` })).json.id as string
      await seen(deleter, `/api/members/${member}`)
      const [del, lend] = await Promise.all([
        http(`${url(deleter)}/api/members/${member}`, { method: "DELETE" }),
        post(lender, "/api/_commands/lend", { book, member })
      ])
      const what = `race ${race}: delete ${del.status} ${del.text} / lend ${lend.status} ${lend.text}`
      if (del.status === 200) {
        // The delete won: the lend is refused as a reference to a row that is gone.
        expect(lend.status, what).toBe(422)
        expect(lend.json.code, what).toBe("missing_reference")
      } else {
        // The lend won: the delete is refused, the member still referenced by its loan.
        expect(lend.status, what).toBe(200)
        expect(del.status, what).toBe(422)
        expect(del.json.code, what).toBe("still_referenced")
      }
      const key = `${del.status === 200 ? "delete" : "lend"} wins`
      outcomes[key] = (outcomes[key] ?? 0) + 1
    }
    expect(await dangling(), JSON.stringify(outcomes)).toEqual([])
    const verified = await runWo(["verify", "--app", appDir, "--store", store], { timeoutMs: 120_000 })
    expect(verified.code, verified.stderr).toBe(0)
    expect(verified.stdout).toMatch(/and references$/m)
  })

  it("a lend naming a missing book answers 422 missing_reference (not 404), on either node", async () => {
    const member = (await post(0, "/api/members", { name: "Ann" })).json.id as string
    await seen(1, `/api/members/${member}`)
    for (const i of [0, 1]) {
      const lend = await post(i, "/api/_commands/lend", { book: "999999", member })
      expect(lend.status, lend.text).toBe(422)
      expect(lend.json.code).toBe("missing_reference")
      expect(lend.json.message ?? lend.text).toMatch(/books 999999/)
    }
  })

  it("the append refuses, as stale, a reference to a deleted row and the delete of a row a newer row references; a reference to a row its own command creates is written", { timeout: 120_000 }, async () => {
    const db = await cluster.createDatabase("wo_refs_append")
    const event = (type: string, id: string, version: number, kind: "created" | "deleted", data: Record<string, unknown>, correlation?: string): StoredEvent =>
      ({ seq: 0, at: Date.now(), type, id, version, schema: 1, kind, data, ...(correlation === undefined ? {} : { command: "c", correlation }) })
    const created = (type: string, id: string, data: Record<string, unknown>, correlation?: string): AppendEntry =>
      ({ event: event(type, id, 1, "created", data, correlation), row: { id, version: 1, ...data } })
    const deleted = (type: string, id: string): AppendEntry => ({ event: event(type, id, 2, "deleted", {}), row: null })
    const byMember = [{ type: "loans", field: "member" }]
    const runtime = ManagedRuntime.make(pgConnectionLayer(db))
    const append = (entries: ReadonlyArray<AppendEntry>, references?: BatchReferences) =>
      runtime.runPromise(Effect.flatMap(PgConnection, (conn) => Effect.zipRight(ensureSchema(conn), appendBatch(conn, { entries, counters: new Map(), ...(references ? { references } : {}) }))))
    const outcomes = (r: { outcomes: ReadonlyArray<unknown> }) => r.outcomes.map((o) => (isWritten(o as AppendEntry) ? "written" : (o as { _tag: string })._tag))
    const head = async () => Number((await cluster.sql<{ seq: string }>("wo_refs_append", "select seq::text as seq from writeonce.log_head"))[0].seq)
    try {
      expect(outcomes(await append([created("members", "1", { name: "a" }), created("members", "2", { name: "b" }), created("books", "1", { title: "t" })]))).toEqual(["written", "written", "written"])
      expect(outcomes(await append([deleted("members", "2")]))).toEqual(["written"])
      // A loan decided against member 2, which another node has deleted since: left out, nothing written.
      const toGone = await append([created("loans", "1", { book: "1", member: "2", status: "out" })], { decidedAt: await head(), targets: new Map([[0, [{ type: "members", id: "2" }]]]), incoming: new Map() })
      expect(outcomes(toGone)).toEqual(["Stale"])
      expect(await cluster.sql("wo_refs_append", "select count(*)::int as n from writeonce.rows where type = 'loans'")).toEqual([{ n: 0 }])
      // A node decided member 1's delete at this seq; another node then lends to member 1: the delete is left out.
      const decidedAt = await head()
      expect(outcomes(await append([created("loans", "1", { book: "1", member: "1", status: "out" })], { decidedAt, targets: new Map([[0, [{ type: "members", id: "1" }]]]), incoming: new Map() }))).toEqual(["written"])
      expect(outcomes(await append([deleted("members", "1")], { decidedAt, targets: new Map(), incoming: new Map([[0, byMember]]) }))).toEqual(["Stale"])
      expect(await cluster.sql("wo_refs_append", "select (row is not null) as live from writeonce.rows where type = 'members' and id = '1'")).toEqual([{ live: true }])
      // A command that creates a member and a loan to it: the reference is to a row of its own group, written with it.
      const both = await append([created("members", "3", { name: "c" }, "g"), created("loans", "2", { book: "1", member: "3", status: "out" }, "g")],
        { decidedAt: await head(), targets: new Map([[1, [{ type: "members", id: "3" }]]]), incoming: new Map() })
      expect(outcomes(both)).toEqual(["written", "written"])
      // One entry of a command referencing a deleted row leaves the whole command out.
      const group = await append([created("members", "4", { name: "d" }, "h"), created("loans", "3", { book: "1", member: "2", status: "out" }, "h")],
        { decidedAt: await head(), targets: new Map([[1, [{ type: "members", id: "2" }]]]), incoming: new Map() })
      expect(outcomes(group)).toEqual(["Stale", "Stale"])
    } finally {
      await runtime.dispose()
    }
  })

  it("wo verify --app names a loan left pointing at a deleted member, and exits non-zero; without --app it says references were not checked", { timeout: 180_000 }, async () => {
    // A store of its own, written only through the store's append, which writes a batch as given when it carries no
    // references: a member, a book, a loan of the book to the member, then the member's delete. Checksums, seqs and
    // versions are right; only the loan's reference dangles.
    const planted = await cluster.createDatabase("wo_refs_planted")
    const event = (type: string, id: string, version: number, kind: "created" | "deleted", data: Record<string, unknown>) =>
      ({ seq: 0, at: Date.now(), type, id, version, schema: 1, kind, data })
    const created = (type: string, data: Record<string, unknown>) => ({ event: event(type, "1", 1, "created", data), row: { id: "1", version: 1, ...data } })
    const runtime = ManagedRuntime.make(pgConnectionLayer(planted))
    try {
      const append = (entries: ReadonlyArray<AppendEntry>) =>
        runtime.runPromise(Effect.flatMap(PgConnection, (conn) => Effect.zipRight(ensureSchema(conn), appendBatch(conn, { entries, counters: new Map() }))))
      const first = await append([
        created("members", { name: "Gone" }),
        created("books", { title: "Emma", author: "Jane Austen", copies: 1, available: 0 }),
        created("loans", { book: "1", member: "1", status: "out" })
      ])
      expect(first.outcomes.every(isWritten)).toBe(true)
      const second = await append([{ event: event("members", "1", 2, "deleted", {}), row: null }])
      expect(second.outcomes.every(isWritten)).toBe(true)
    } finally {
      await runtime.dispose()
    }
    const verified = await runWo(["verify", "--app", appDir, "--store", planted], { timeoutMs: 120_000 })
    expect(verified.code, verified.stdout).toBe(1)
    expect(verified.stderr).toContain("dangling reference: loans 1 field member references members 1, which was deleted")
    // Nothing else is wrong with the store.
    expect(verified.stderr).toContain("PROBLEMS (1)")
    // Without the app the store cannot tell a reference from a string: checked clean, and it says what it left out.
    const plain = await runWo(["verify", "--store", planted], { timeoutMs: 120_000 })
    expect(plain.code, plain.stderr).toBe(0)
    expect(plain.stdout).toMatch(/references not checked/)
  })
})
