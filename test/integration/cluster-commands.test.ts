/**
 * App commands on a shared PostgreSQL log: two `wo` nodes racing `lend` on the last copy of a book, exactly one
 * wins and the other is refused (422) after catching up; a command is one group in the append, written whole or
 * decided again; the store upgrades to format 4 (events.command, events.correlation) in place, and `wo verify`
 * and `wo replay --app` accept a log with commands. On the run's shared cluster, in a database of its own.
 */
import { Effect, ManagedRuntime } from "effect"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PgConnection, pgConnectionLayer } from "../../src/log/postgres/connection.ts"
import { ensureSchema, STORE_VERSION } from "../../src/log/postgres/schema.ts"
import { appendBatch } from "../../src/log/postgres/append.ts"
import { checksum, eventColumns, eventKey, eventPayload, rowKey, rowPayload, typeKey, typePayload } from "../../src/log/postgres/records.ts"
import { isWritten, Stale, type AppendEntry } from "../../src/log/event-log.ts"
import type { Row } from "../../src/domain/catalog.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { http, ROOT, tempDir } from "../../testkit/server.ts"
import { runWo, spawnWo, type Spawned } from "../../testkit/spawn.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the app command cluster tests")

describe.skipIf(!haveBinaries)("app commands on one PostgreSQL log, two nodes", () => {
  let cluster: PgCluster
  let store = ""
  const appDir = writeAppDir(`export { default } from ${JSON.stringify(path.join(ROOT, "testkit/library-app.ts"))}\n`)
  const nodes: Array<Spawned> = []
  const url = (i: number) => nodes[i].loopbackUrl
  const post = (i: number, p: string, body: unknown) => http(`${url(i)}${p}`, { method: "POST", body })
  const book = async (copies: number) => {
    const { id } = (await post(0, "/api/books", { title: "b" })).json
    expect((await post(0, `/api/books/${id}/add_copies`, { n: copies })).status).toBe(200)
    return id as string
  }

  beforeAll(async () => {
    cluster = await sharedCluster()
    store = await cluster.createDatabase("wo_cmds")
    // A store of format 3, as the previous release left it: the nodes upgrade it when they start.
    const runtime = ManagedRuntime.make(pgConnectionLayer(store))
    await runtime.runPromise(Effect.flatMap(PgConnection, ensureSchema))
    await runtime.dispose()
    await cluster.sql("wo_cmds", "alter table writeonce.events drop column command, drop column correlation")
    await cluster.sql("wo_cmds", "update writeonce.log_head set store_version = 3")
    // One book written by that release: its event has no command columns, and its checksum stays valid after the upgrade.
    const old = { title: "Old", copies: 1, available: 1 }
    const e = eventColumns({ seq: 1, at: 1, type: "books", id: "1", version: 1, schema: 1, kind: "created", data: old })
    // Its checksum keyed by its seq, as every release before format 7 wrote it (records.ts).
    await cluster.sql("wo_cmds", "insert into writeonce.events (seq, type, id, version, kind, schema, at, method, params, data, checksum) values (1, 'books', '1', 1, 'created', 1, 1, null, null, $1::json, $2)", [e.data, checksum(eventKey(1), eventPayload(e))])
    const rowJson = JSON.stringify({ id: "1", version: 1, ...old })
    await cluster.sql("wo_cmds", "insert into writeonce.rows (type, id, version, schema, row, checksum) values ('books', '1', 1, 1, $1::json, $2)", [rowJson, checksum(rowKey("books", "1"), rowPayload(1, 1, rowJson))])
    await cluster.sql("wo_cmds", "insert into writeonce.types (type, last_id, row_count, checksum) values ('books', 1, 1, $1)", [checksum(typeKey("books"), typePayload(1, 1))])
    await cluster.sql("wo_cmds", "update writeonce.log_head set seq = 1")
    const start = () => spawnWo(["run", appDir, "--listen", "127.0.0.1:0", "--data", tempDir("wo-node-"), "--store", store], { env: { WO_MAX_PAGE_SIZE: "100000" } })
    nodes.push(...(await Promise.all([start(), start()])))
  }, 120_000)

  afterAll(async () => {
    await Promise.all(nodes.map((n) => n.stop().catch(() => undefined)))
    cluster?.stop()
  })

  it("upgrades a format-3 store in place to the current format, its old events still read", async () => {
    expect(await cluster.sql("wo_cmds", "select store_version from writeonce.log_head")).toEqual([{ store_version: STORE_VERSION }])
    // The book the previous release wrote is served, and lent by a command like any other.
    expect((await http(`${url(1)}/api/books/1`)).json).toEqual({ id: "1", version: 1, title: "Old", copies: 1, available: 1 })
    const m = (await post(0, "/api/members", { name: "Cy" })).json.id
    const lent = await post(0, "/api/_commands/lend", { book: "1", member: m })
    expect(lent.status, lent.text).toBe(200)
  })

  it("two nodes racing lend on the last copy: exactly one wins, the other gets 422 no_copies, 30 rounds", async () => {
    const m = (await post(0, "/api/members", { name: "Ann" })).json.id
    for (let round = 0; round < 30; round++) {
      const b = await book(1)
      // Node 1 must know the book before it can lend it (it answers a write only once applied).
      for (let i = 0; i < 200 && (await http(`${url(1)}/api/books/${b}`)).json?.available !== 1; i++) await new Promise((r) => setTimeout(r, 20))
      const [x, y] = await Promise.all([post(0, "/api/_commands/lend", { book: b, member: m }), post(1, "/api/_commands/lend", { book: b, member: m })])
      expect([x.status, y.status].sort(), `round ${round}: ${x.text} ${y.text}`).toEqual([200, 422])
      expect([x, y].find((r) => r.status === 422)!.json.code).toBe("no_copies")
    }
  })

  it("many concurrent lends through both nodes: exactly `copies` win, every loan has its book decremented", async () => {
    const m = (await post(1, "/api/members", { name: "Bo" })).json.id
    const books = [await book(10), await book(7)]
    for (const b of books) for (let i = 0; i < 200 && (await http(`${url(1)}/api/books/${b}`)).json?.available === undefined; i++) await new Promise((r) => setTimeout(r, 20))
    const calls = Array.from({ length: 40 }, (_, k) => post(k % 2, "/api/_commands/lend", { book: books[k % 4 < 2 ? 0 : 1], member: m }))
    const answers = await Promise.all(calls)
    expect(answers.filter((a) => a.status !== 200 && a.status !== 422).map((a) => a.text)).toEqual([])
    const won = answers.filter((a) => a.status === 200)
    expect(won.length).toBe(17)
    const groups = await cluster.sql<{ correlation: string; n: number; kinds: string }>("wo_cmds",
      "select correlation, count(*)::int as n, string_agg(type || '/' || kind, ',' order by seq) as kinds from writeonce.events where command = 'lend' group by correlation")
    for (const g of groups) expect(g.kinds).toBe("books/invoked,loans/created")
    const perBook = await cluster.sql<{ id: string; lent: number; loans: number }>("wo_cmds",
      `select b.id, (b.row->>'copies')::int - (b.row->>'available')::int as lent,
         (select count(*)::int from writeonce.rows l where l.type = 'loans' and l.row->>'book' = b.id) as loans
       from writeonce.rows b where b.type = 'books'`)
    for (const b of perBook) expect(b.loans, `book ${b.id}`).toBe(b.lent)
    expect(perBook.filter((b) => books.includes(b.id)).map((b) => b.lent).sort()).toEqual([10, 7])
  })

  it("the append writes a command's entries all or none: a stale entry, or a create given another id, refuses the whole group", async () => {
    const [b1, b2, b3] = [await book(5), await book(5), await book(5)]
    const row = async (id: string) => (await cluster.sql<{ row: Row }>("wo_cmds", "select row from writeonce.rows where type = 'books' and id = $1", [id]))[0].row
    const [r1, r2, r3] = [await row(b1), await row(b2), await row(b3)]
    const [{ last }] = await cluster.sql<{ last: number }>("wo_cmds", "select last_id::int as last from writeonce.types where type = 'loans'")
    const checkOut = (r: Row, version: number, correlation?: string): AppendEntry => {
      const after = { ...r, version, available: (r.available as number) - 1 }
      const event: StoredEvent = {
        seq: 0, at: Date.now(), type: "books", id: r.id, version, schema: 1, kind: "invoked", method: "check_out", params: {}, data: { available: after.available },
        ...(correlation === undefined ? {} : { command: "lend", correlation })
      }
      return { event, row: after }
    }
    const loan = (id: string, book: string, correlation: string): AppendEntry => {
      const data = { book, member: "1", status: "out" }
      return { event: { seq: 0, at: Date.now(), type: "loans", id, version: 1, schema: 1, kind: "created", data, command: "lend", correlation }, row: { id, version: 1, ...data } }
    }
    const runtime = ManagedRuntime.make(pgConnectionLayer(store))
    try {
      const append = (entries: ReadonlyArray<AppendEntry>) => runtime.runPromise(Effect.flatMap(PgConnection, (conn) => appendBatch(conn, { entries, counters: new Map() })))
      // b1 is current, b2 stale (decided at a version another node has passed): neither is written; b3 alone is.
      const first = await append([checkOut(r1, r1.version + 1, "g1"), checkOut(r2, r2.version + 3, "g1"), checkOut(r3, r3.version + 1)])
      expect(first.outcomes.map((o) => (isWritten(o) ? `${o.event.type}/${o.event.id}@${o.event.version}` : o._tag))).toEqual(["Stale", "Stale", `books/${b3}@${r3.version + 1}`])
      // The loan's create was decided with an id the log has handed out meanwhile: the book's change is not written either.
      const second = await append([checkOut(r1, r1.version + 1, "g2"), loan(String(last + 7), b1, "g2")])
      expect(second.outcomes).toEqual([Stale, Stale])
      expect((await row(b1)).version).toBe(r1.version)
      expect((await row(b2)).version).toBe(r2.version)
      expect(await cluster.sql("wo_cmds", "select count(*)::int as n from writeonce.events where correlation in ('g1', 'g2')")).toEqual([{ n: 0 }])
      // Decided right, the group is written whole, its seqs consecutive.
      const third = await append([checkOut(r1, r1.version + 1, "g3"), loan(String(last + 1), b1, "g3")])
      const written = third.outcomes.filter((o): o is AppendEntry => o !== Stale)
      expect(written.map((o) => `${o.event.type}/${o.event.id}`)).toEqual([`books/${b1}`, `loans/${last + 1}`])
      expect(written[1].event.seq).toBe(written[0].event.seq + 1)
    } finally {
      await runtime.dispose()
    }
  })

  it("wo verify --store and wo replay --app --store accept a log with commands", async () => {
    const verify = await runWo(["verify", "--store", store], { timeoutMs: 60_000 })
    expect(verify.code, verify.stderr).toBe(0)
    expect(verify.stdout).toMatch(/^verified \d+ events and \d+ rows/m)
    const replayed = await runWo(["replay", "--app", appDir, "--store", store], { timeoutMs: 60_000 })
    expect(replayed.code, replayed.stderr).toBe(0)
    expect(replayed.stdout).toMatch(/OK: the stored rows equal the log's fold/)
    // The command's fields are covered by the checksum: a changed correlation is named.
    await cluster.sql("wo_cmds", "update writeonce.events set correlation = 'x' where seq = (select min(seq) from writeonce.events where command = 'lend')")
    const damaged = await runWo(["verify", "--store", store], { timeoutMs: 60_000 })
    expect(damaged.code).toBe(1)
    expect(damaged.stderr).toMatch(/corrupt record at key e!\d+: checksum mismatch/)
  })
})
