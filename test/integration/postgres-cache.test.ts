/**
 * A node on PostgreSQL is a bounded cache of the store's rows, not a replica, on a real 3-server cluster
 * (test/cluster/pg-cluster.ts): its start reads no row of the `rows` table however many there are, reading every
 * row once leaves at most `WO_ROW_CACHE` of them in memory, and a row another node writes is read fresh. Counted on
 * the real `pg` client (the rows each statement returned) and on the cache itself, no timing. Real runtimes in this
 * process (the layer `wo run --store` builds), each serving HTTP on port 0; the rows written through the store's own
 * append (testkit/pg-price-log.ts).
 */
import { Effect, ManagedRuntime, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { defineApp, entity, type AppDef } from "../../src/domain/catalog.ts"
import { compareValues } from "../../src/domain/value-order.ts"
import { loadSettings } from "../../src/support/config.ts"
import { HttpServer } from "../../src/http/server.ts"
import { Rows } from "../../src/projections/rows/rows.ts"
import { writeOnceLayer } from "../../src/runtime/runtime.ts"
import { observedPostgresLog } from "../../testkit/observed-pg.ts"
import { writePriceLog } from "../../testkit/pg-price-log.ts"
import deletableLibrary from "../../testkit/library-deletable-members.ts"
import { apps, http, tempDir } from "../../testkit/server.ts"
import { listIds } from "../../testkit/list-pages.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the PostgreSQL row cache tests")

/** Rows in the store: many times what the cache holds (about 2,500 of these rows fill CACHE_BYTES). */
const MANY = 50_000
/** The cache's bound in these tests: a few thousand of the sample's rows. */
const CACHE_BYTES = 1024 * 1024

/** A node on the store as `wo run --store` builds it, serving on port 0, counting the rows-table rows its statements got. */
const startNode = async (store: string, rowCache = CACHE_BYTES, app: AppDef = apps.pricing) => {
  const counts = { storedRows: 0 }
  const log = observedPostgresLog(store, {
    returned: (text, result) => {
      if (/ from writeonce\.rows\b/.test(text)) counts.storedRows += result.rows.length
    }
  })
  const settings = await Effect.runPromise(loadSettings({ dataDir: tempDir("wo-pg-cache-") }, { host: "127.0.0.1", port: 0, store, rowCache }))
  const runtime = ManagedRuntime.make(writeOnceLayer(app, settings, { logger: false, signals: false, log }))
  const { url } = await runtime.runPromise(HttpServer)
  const rows = runtime.runSync(Rows)
  return { url, counts, rows, stop: () => runtime.dispose() }
}

describe.skipIf(!haveBinaries)("a node on PostgreSQL caches the store's rows", () => {
  let cluster: PgCluster
  beforeAll(async () => {
    cluster = await sharedCluster()
  }, 120_000)
  afterAll(() => cluster?.stop())

  it(`starts on ${MANY} rows reading none of them, and holds at most WO_ROW_CACHE bytes of them once it read them all`, async () => {
    const store = await cluster.createDatabase("pg_cache_many")
    await writePriceLog(store, { products: MANY, events: 0, batch: 2_000, timeoutMs: 60_000 })
    const node = await startNode(store)
    try {
      expect(node.counts.storedRows).toBe(0)
      expect(node.rows.recovered).toMatchObject({ rows: MANY, events: MANY, tailEvents: 0 })
      expect(node.rows.table("products").size).toBe(MANY)
      expect(node.rows.cached?.held()).toEqual({ rows: 0, bytes: 0 })

      // Every row once, a page at a time: each page is one read of the store, and the cache stays within its bound.
      let cursor: string | undefined
      let seen = 0
      let pages = 0
      do {
        const res = await http(`${node.url}/api/products?limit=1000${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
        expect(res.status, res.text).toBe(200)
        seen += res.json.items.length
        pages++
        cursor = res.json.nextCursor
      } while (cursor !== undefined)
      expect(seen).toBe(MANY)
      expect(node.counts.storedRows).toBe(MANY + pages - 1)
      const held = node.rows.cached!.held()
      expect(held.bytes).toBeLessThanOrEqual(CACHE_BYTES)
      expect(held.rows).toBeGreaterThan(0)
      expect(held.rows).toBeLessThan(MANY / 10)

      // A row the cache let go is read again, by id.
      const res = await http(`${node.url}/api/products/1`)
      expect(res.status, res.text).toBe(200)
      expect(res.json).toMatchObject({ id: "1", version: 1, name: "p0" })
      expect((await http(`${node.url}/api/products/${MANY + 1}`)).status).toBe(404)
    } finally {
      await node.stop()
    }
  }, 300_000)

  it("reads a row another node created or changed: a miss reads the store, a held row is moved on by the tailer", async () => {
    const store = await cluster.createDatabase("pg_cache_fresh")
    await writePriceLog(store, { products: 4, events: 0 })
    const a = await startNode(store)
    const b = await startNode(store)
    try {
      // A holds product 1; B changes it: A's tailer applies B's commit to the row it holds.
      expect((await http(`${a.url}/api/products/1`)).json).toMatchObject({ version: 1, price: 1 })
      expect(a.rows.cached!.peek("products", "1")).toBeDefined()
      const set = await http(`${b.url}/api/products/1/set_price`, { method: "POST", body: { price: 42 } })
      expect(set.status, set.text).toBe(200)
      let row: Record<string, unknown> = {}
      for (let polls = 0; polls < 500; polls++) {
        row = (await http(`${a.url}/api/products/1`)).json
        if (row.version === 2) break
        await new Promise((r) => setTimeout(r, 20))
      }
      expect(row).toMatchObject({ id: "1", version: 2, price: 42 })

      // A row B created (or changed) that A does not hold is read from the store at once, whatever A's tailer did.
      for (let i = 0; i < 20; i++) {
        const created = await http(`${b.url}/api/products`, { method: "POST", body: { name: `n${i}`, price: i + 1, currency: "EUR" } })
        expect(created.status, created.text).toBe(201)
        const read = await http(`${a.url}/api/products/${created.json.id}`)
        expect(read.status, read.text).toBe(200)
        expect(read.json).toEqual(created.json)
        const changed = await http(`${b.url}/api/products/${i % 3 + 2}/set_price`, { method: "POST", body: { price: 100 + i } })
        expect(changed.status, changed.text).toBe(200)
      }
      // And A's list reads the store in id order, each row as fresh as the cache or the store has it.
      const list = await http(`${a.url}/api/products?limit=100`)
      expect(list.json.items).toHaveLength(24)
    } finally {
      await a.stop()
      await b.stop()
    }
  }, 120_000)

  it("reads filtered and ordered lists from the store in the order the embedded store's indexes give, a page at a time", async () => {
    const store = await cluster.createDatabase("pg_cache_lists")
    const node = await startNode(store)
    try {
      // Ties on price (broken by id), both currencies, names in code-unit order ("B" before "a").
      const made: Array<{ id: number; name: string; price: number; currency: string }> = []
      for (let i = 0; i < 30; i++) {
        const body = { name: i % 2 === 0 ? `B${i}` : `a${i}`, price: 1 + (i * 7) % 5, currency: i % 3 === 0 ? "USD" : "EUR" }
        const res = await http(`${node.url}/api/products`, { method: "POST", body })
        expect(res.status, res.text).toBe(201)
        made.push({ id: Number(res.json.id), ...body })
      }
      const walk = async (query: string) => (await listIds(node.url, `/api/products?${query}&limit=4`)).map(Number)
      const by = <K extends "price" | "name">(field: K, descending: boolean) => (x: (typeof made)[number], y: (typeof made)[number]) => {
        const c = x[field] < y[field] ? -1 : x[field] > y[field] ? 1 : x.id - y.id
        return descending ? -c : c
      }
      const eur = made.filter((p) => p.currency === "EUR")
      expect(await walk("currency=EUR")).toEqual(eur.map((p) => p.id))
      expect(await walk("currency=EUR&order=-price")).toEqual([...eur].sort(by("price", true)).map((p) => p.id))
      expect(await walk("order=price")).toEqual([...made].sort(by("price", false)).map((p) => p.id))
      expect(await walk("order=name")).toEqual([...made].sort(by("name", false)).map((p) => p.id))
      expect(await walk("order=-id")).toEqual(made.map((p) => p.id).reverse())
      // Ranges, sets and null tests, alone and with an order.
      const ranged = made.filter((p) => p.price >= 2 && p.price < 4)
      expect(await walk("price[gte]=2&price[lt]=4")).toEqual(ranged.map((p) => p.id))
      expect(await walk("price[gt]=2&order=-price")).toEqual(made.filter((p) => p.price > 2).sort(by("price", true)).map((p) => p.id))
      expect(await walk("name[gte]=B&name[lte]=a1&order=name")).toEqual(made.filter((p) => p.name >= "B" && p.name <= "a1").sort(by("name", false)).map((p) => p.id))
      expect(await walk("currency[in]=EUR,USD&price[lte]=1")).toEqual(made.filter((p) => p.price <= 1).map((p) => p.id))
      expect(await walk("price[in]=3,5&currency=USD")).toEqual(made.filter((p) => (p.price === 3 || p.price === 5) && p.currency === "USD").map((p) => p.id))
      // The synchronous reads (MCP's resources/list walks `page`; a delete's reference check, `idsWhere`).
      const table = node.rows.table("products")
      const first = table.page(0, 4)
      expect({ ids: first.rows.map((r) => Number(r.id)), more: first.more }).toEqual({ ids: made.slice(0, 4).map((p) => p.id), more: true })
      const end = table.page(made[27].id, 4)
      expect({ ids: end.rows.map((r) => Number(r.id)), more: end.more }).toEqual({ ids: made.slice(28).map((p) => p.id), more: false })
      expect(table.idsWhere("currency", "EUR")).toEqual(eur.map((p) => p.id))
    } finally {
      await node.stop()
    }
  }, 120_000)

  it("reads lists with ranges, sets and null tests from the store as the brute-force filter and sort of the rows gives them", async () => {
    const desk = defineApp({
      name: "desk",
      entities: {
        tickets: entity({
          fields: { name: Schema.String, price: Schema.Number, status: Schema.Literal("open", "pending", "closed"), assignee: Schema.optional(Schema.String) }
        })
      }
    })
    const store = await cluster.createDatabase("pg_cache_ranges")
    const node = await startNode(store, CACHE_BYTES, desk)
    try {
      type Ticket = { id: number; name: string; price: number; status: string; assignee?: string }
      const made: Array<Ticket> = []
      for (let i = 0; i < 40; i++) {
        // Negative, fractional and tied prices; names in code-unit order ("Z" before "a"); some without an assignee.
        const body = { name: i % 3 === 0 ? `Z${i}` : `a${(i * 7) % 40}`, price: ((i * 37) % 23) / 2 - 3, status: ["open", "pending", "closed"][i % 3], ...(i % 4 === 0 ? {} : { assignee: `agent-${i % 5}` }) }
        const res = await http(`${node.url}/api/tickets`, { method: "POST", body })
        expect(res.status, res.text).toBe(201)
        made.push({ id: Number(res.json.id), ...body })
      }
      const walk = async (query: string) => (await listIds(node.url, `/api/tickets?${query}&limit=3`)).map(Number)
      const expected = (keep: (t: Ticket) => boolean, order?: keyof Ticket, descending = false) => {
        const kept = made.filter(keep)
        if (order !== undefined) kept.sort((x, y) => (compareValues(x[order], y[order]) || x.id - y.id) * (descending ? -1 : 1))
        return kept.map((t) => t.id)
      }
      expect(await walk("price[gte]=-1&price[lt]=4.5")).toEqual(expected((t) => t.price >= -1 && t.price < 4.5))
      expect(await walk("price[gt]=0&order=-price")).toEqual(expected((t) => t.price > 0, "price", true))
      expect(await walk("name[gte]=Z&name[lt]=a2&order=name")).toEqual(expected((t) => t.name >= "Z" && t.name < "a2", "name"))
      expect(await walk("status[in]=open,closed&order=price")).toEqual(expected((t) => t.status !== "pending", "price"))
      expect(await walk("assignee[null]=true")).toEqual(expected((t) => t.assignee === undefined))
      expect(await walk("assignee[null]=false&order=-assignee")).toEqual(expected((t) => t.assignee !== undefined, "assignee", true))
      expect(await walk("order=assignee")).toEqual(expected(() => true, "assignee"))
      expect(await walk("assignee[gte]=agent-2&status=open")).toEqual(expected((t) => t.assignee !== undefined && t.assignee >= "agent-2" && t.status === "open"))
    } finally {
      await node.stop()
    }
  }, 120_000)

  it("decides commands on rows it does not hold without a blocking read: the writer reads ahead what each decision reads", async () => {
    const store = await cluster.createDatabase("pg_cache_ahead")
    const b = await startNode(store, CACHE_BYTES, deletableLibrary)
    const post = async (url: string, path: string, body: unknown) => {
      const res = await http(`${url}${path}`, { method: "POST", body })
      expect(res.status, res.text).toBeLessThan(300)
      return res.json
    }
    const books: Array<string> = []
    const members: Array<string> = []
    for (let i = 0; i < 6; i++) {
      const book = await post(b.url, "/api/books", { title: `t${i}`, author: "a" })
      await post(b.url, `/api/books/${book.id}/add_copies`, { n: 2 })
      books.push(book.id)
      members.push((await post(b.url, "/api/members", { name: `m${i}` })).id)
    }
    // A starts after those writes: it holds none of the rows its commands read.
    const a = await startNode(store, CACHE_BYTES, deletableLibrary)
    const syncReads = () => a.rows.cached!.syncReads()
    try {
      expect(a.rows.cached!.held().rows).toBe(0)
      // lend reads its ref params' rows; return reads the loan, then the loan's book (two steps ahead).
      const loans: Array<string> = []
      for (let i = 0; i < 6; i++) {
        const lent = await post(a.url, "/api/_commands/lend", { book: books[i], member: members[i] })
        loans.push(lent.changes.find((c: { type: string }) => c.type === "loans").row.id)
      }
      // Lends on rows another node changed since (A holds the old ones: its tailer moves them on, or the log refuses).
      for (let i = 0; i < 3; i++) await post(b.url, "/api/_commands/lend", { book: books[i], member: members[(i + 1) % 6] })
      const returned = await Promise.all(loans.map((loan) => http(`${a.url}/api/_commands/return`, { method: "POST", body: { loan } })))
      for (const res of returned) expect(res.status, res.text).toBe(200)
      // A delete's reference check reads the referencing rows ahead too: still referenced by loans, refused.
      const refused = await http(`${a.url}/api/members/${members[0]}`, { method: "DELETE" })
      expect(refused.status, refused.text).toBe(422)
      expect(refused.json.code).toBe("still_referenced")
      const fresh = await post(b.url, "/api/members", { name: "nobody" })
      expect((await http(`${a.url}/api/members/${fresh.id}`, { method: "DELETE" })).status).toBe(200)
      for (const book of books) {
        const res = await http(`${a.url}/api/books/${book}`)
        expect(res.json.available).toBe(books.indexOf(book) < 3 ? 1 : 2)
      }
      expect(syncReads()).toBe(0)
    } finally {
      await a.stop()
      await b.stop()
    }
  }, 120_000)

  it("applies another node's commits without caching the rows it does not hold; reads them fresh; moves on the rows it holds", async () => {
    const notes = defineApp({ name: "notes", entities: { notes: entity({ fields: { text: Schema.String } }) } })
    const store = await cluster.createDatabase("pg_cache_others")
    const a = await startNode(store, CACHE_BYTES, notes)
    const b = await startNode(store, CACHE_BYTES, notes)
    /** Waits until A's tailer has applied every commit B made. */
    const applied = async () => {
      for (let polls = 0; polls < 1000 && a.rows.checkpoint() < b.rows.checkpoint(); polls++) await new Promise((r) => setTimeout(r, 10))
      expect(a.rows.checkpoint()).toBe(b.rows.checkpoint())
    }
    try {
      for (let i = 0; i < 30; i++) expect((await http(`${b.url}/api/notes`, { method: "POST", body: { text: `n${i}` } })).status).toBe(201)
      for (let id = 1; id <= 10; id++) expect((await http(`${b.url}/api/notes/${id}`, { method: "PATCH", body: { text: `changed ${id}` } })).status).toBe(200)
      await applied()
      // A applied B's 40 commits (its count moved) and holds none of their rows.
      expect(a.rows.table("notes").size).toBe(30)
      expect(a.rows.cached!.held().rows).toBe(0)

      // Each row is read from the store at once, as B wrote it.
      const readBefore = a.counts.storedRows
      for (let id = 1; id <= 30; id++) {
        const res = await http(`${a.url}/api/notes/${id}`)
        expect(res.status, res.text).toBe(200)
        expect(res.json).toEqual((await http(`${b.url}/api/notes/${id}`)).json)
      }
      expect(a.counts.storedRows - readBefore).toBe(30)
      expect(a.rows.cached!.held().rows).toBe(30)

      // Now A holds them: B's next change of one is applied to it, and A serves it without reading the store; a row
      // B deletes is dropped (a read asks the store).
      expect((await http(`${b.url}/api/notes/1`, { method: "PATCH", body: { text: "again" } })).status).toBe(200)
      expect((await http(`${b.url}/api/notes/2`, { method: "DELETE" })).status).toBe(200)
      await applied()
      const heldBefore = a.counts.storedRows
      expect((await http(`${a.url}/api/notes/1`)).json).toMatchObject({ id: "1", version: 3, text: "again" })
      expect(a.counts.storedRows).toBe(heldBefore)
      expect(a.rows.cached!.peek("notes", "2")).toBeUndefined()
      expect((await http(`${a.url}/api/notes/2`)).status).toBe(404)
    } finally {
      await a.stop()
      await b.stop()
    }
  }, 120_000)

  it("folds another node's changes of rows it does not hold into its views exactly: it reads the rows before them", async () => {
    const store = await cluster.createDatabase("pg_cache_views")
    const b = await startNode(store, CACHE_BYTES, apps.blog)
    const article = { title: "t", body: "b", status: "draft", tags: [], author: { name: "n" } }
    for (let i = 0; i < 10; i++) expect((await http(`${b.url}/api/articles`, { method: "POST", body: article })).status).toBe(201)
    // A starts after the creates: it holds none of the articles when B publishes them.
    const a = await startNode(store, CACHE_BYTES, apps.blog)
    try {
      expect(a.rows.cached!.held().rows).toBe(0)
      for (let i = 1; i <= 6; i++) {
        const res = await http(`${b.url}/api/articles/${i}`, { method: "PATCH", body: { status: "published" } })
        expect(res.status, res.text).toBe(200)
      }
      const want = { draft: 4, published: 6 }
      let value: unknown
      for (let polls = 0; polls < 500; polls++) {
        const res = await http(`${a.url}/api/_views/articles_by_status`)
        value = res.json?.value
        if (JSON.stringify(value) === JSON.stringify(want)) break
        await new Promise((r) => setTimeout(r, 20))
      }
      expect(value).toEqual(want)
      expect((await http(`${b.url}/api/_views/articles_by_status`)).json.value).toEqual(want)
    } finally {
      await a.stop()
      await b.stop()
    }
  }, 120_000)
})
