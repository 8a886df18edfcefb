/**
 * A node's start on a PostgreSQL store whose log is long and whose rows are few, on a real 3-server cluster
 * (test/cluster/pg-cluster.ts): the node loads its views' snapshot, and reads no stored row and no event of the log
 * to start (the background audit reads the log once, and only it). Counted on the real `pg` client: the event rows
 * every statement returned, no timing. Real runtimes in this process (the layer `wo run --store` builds), each
 * serving HTTP on port 0; the log written straight through the store's append (testkit/pg-price-log.ts).
 */
import { Effect, Layer, Logger, LogLevel, ManagedRuntime, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadSettings } from "../../src/support/config.ts"
import { defineApp, entity, type AppDef } from "../../src/domain/catalog.ts"
import { renameField } from "../../src/domain/migrations.ts"
import { HttpServer } from "../../src/http/server.ts"
import { EVENT_COLUMNS } from "../../src/log/postgres/records.ts"
import { Rows } from "../../src/projections/rows/rows.ts"
import { Views } from "../../src/projections/views/views.ts"
import { writeOnceLayer } from "../../src/runtime/runtime.ts"
import { observedPostgresLog } from "../../testkit/observed-pg.ts"
import { writePriceLog } from "../../testkit/pg-price-log.ts"
import { apps, http, tempDir } from "../../testkit/server.ts"
import { waitFor } from "../../testkit/wait.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the PostgreSQL node start tests")

const PRODUCTS = 4
const EVENTS = 3_000

/** The pricing sample at schema version 2, where the price is called `amount`: rows stored at version 1 are migrated. */
const renamed = defineApp({
  name: "pricing",
  entities: {
    products: entity({
      version: 2,
      migrations: { 2: renameField("price", "amount") },
      fields: { name: Schema.String, amount: Schema.Number, currency: Schema.Literal("USD", "EUR") }
    })
  }
})

/** What the node's `pg` clients got back: event rows (any statement reading events), stored rows (the rows table). */
interface Counts {
  eventRows: number
  storedRows: number
}

/** The PostgreSQL log on `url`, the rows its statements return counted, on the pool and on a checked-out connection alike. */
const countedLog = (url: string, counts: Counts) =>
  observedPostgresLog(url, {
    returned: (text, result) => {
      if (text.includes(EVENT_COLUMNS)) counts.eventRows += result.rows.length
      else if (/ from writeonce\.rows where row is not null/.test(text)) counts.storedRows += result.rows.length
    }
  })

/** A node on the store, as `wo run --store` builds it, serving on port 0; its log counted, its debug messages kept. */
const startNode = async (store: string, app: AppDef = apps.pricing) => {
  const counts: Counts = { eventRows: 0, storedRows: 0 }
  const messages: Array<string> = []
  const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => {
    messages.push(Array.isArray(message) ? message.join(" ") : String(message))
  }))
  const settings = await Effect.runPromise(loadSettings({ dataDir: tempDir("wo-pg-start-") }, { host: "127.0.0.1", port: 0, store }))
  const layer = writeOnceLayer(app, settings, { logger: false, signals: false, log: countedLog(store, counts) }).pipe(
    Layer.provide(Layer.merge(capture, Logger.minimumLogLevel(LogLevel.Debug)))
  )
  const runtime = ManagedRuntime.make(layer)
  const { url } = await runtime.runPromise(HttpServer)
  return {
    url,
    counts,
    messages,
    rows: runtime.runSync(Effect.map(Rows, (r) => r.recovered)),
    views: runtime.runSync(Effect.map(Views, (v) => v.recovered)),
    stop: () => runtime.dispose()
  }
}

const products = async (url: string) => {
  const res = await http(`${url}/api/products?limit=100`)
  expect(res.status, res.text).toBe(200)
  return (res.json.items as Array<{ id: string; version: number; price: number }>).map(({ id, version, price }) => ({ id, version, price }))
}

/** The node's products once they equal `want` (its tailer applies what another node wrote), or as they are then. */
const converged = async (url: string, want: unknown) => {
  for (let polls = 0; polls < 500; polls++) {
    const got = await products(url)
    if (JSON.stringify(got) === JSON.stringify(want)) return got
    await new Promise((r) => setTimeout(r, 20))
  }
  return products(url)
}

/** The view's value once served (503 ViewRefolding while a node folds it in the background). */
const served = async (url: string) => {
  for (let polls = 0; ; polls++) {
    const res = await http(`${url}/api/_views/products_by_currency`)
    if (res.status !== 503 || polls >= 500) {
      expect(res.status, res.text).toBe(200)
      return res.json.value
    }
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe.skipIf(!haveBinaries)("a node's start on a long PostgreSQL log", () => {
  let cluster: PgCluster
  beforeAll(async () => {
    cluster = await sharedCluster()
  }, 120_000)
  afterAll(() => cluster?.stop())

  it("reads the views snapshot, no stored row (the rows are cached: postgres-cache.test.ts) and no event of the log; the audit alone reads the log, once", async () => {
    const db = "pg_start"
    const store = await cluster.createDatabase(db)
    await writePriceLog(store, { products: PRODUCTS, events: EVENTS, batch: 1_000 })
    const head = PRODUCTS + EVENTS
    // The oracle: each product's last event in the log, read straight from the events table.
    const last = await cluster.sql(db, "select distinct on (id) id, version, (data::jsonb ->> 'price')::float as price from writeonce.events order by id, seq desc")
    const expected = last.map((r) => ({ id: r.id, version: r.version, price: r.price }))
    expect(expected).toHaveLength(PRODUCTS)

    // The first node has no views snapshot: it folds the view in the background, then stores it.
    const a = await startNode(store)
    expect(await served(a.url)).toEqual({ USD: 2, EUR: 2 })
    const snapshotAt = async () => (await cluster.sql(db, "select at::text as at from writeonce.views")).map((r) => Number(r.at))
    for (let polls = 0; polls < 500 && (await snapshotAt())[0] !== head; polls++) await new Promise((r) => setTimeout(r, 20))
    expect(await snapshotAt()).toEqual([head])
    await a.stop()

    // The next node loads both, and folds nothing.
    const b = await startNode(store)
    // Every event read went to the audit's one pass over the log, in the background; the start read no row either.
    expect(await waitFor(() => b.messages.some((m) => m.startsWith(`log audit: ${head} events verified`)), 60_000), b.messages.join("\n")).toBe(true)
    expect(b.counts).toEqual({ eventRows: head, storedRows: 0 })
    expect(b.rows).toMatchObject({ rows: PRODUCTS, events: head, tailEvents: 0 })
    expect(b.views).toMatchObject({ loaded: 1, tailEvents: 0, rebuilt: [] })
    expect(await products(b.url)).toEqual(expected)
    expect(await served(b.url)).toEqual({ USD: 2, EUR: 2 })

    // A node starting while another one writes: its rows are exact at the head it pinned, and it follows from there.
    let writing = true
    let written = 0
    const writes = (async () => {
      for (let i = 0; writing; i++) {
        const res = await http(`${b.url}/api/products/${(i % PRODUCTS) + 1}/set_price`, { method: "POST", body: { price: 1000 + i } })
        expect(res.status, res.text).toBe(200)
        written++
      }
    })()
    try {
      expect(await waitFor(() => written >= 2 * PRODUCTS, 20_000)).toBe(true)
      const c = await startNode(store)
      writing = false
      await writes
      expect(c.rows).toMatchObject({ rows: PRODUCTS, tailEvents: 0 })
      // Its views fold B's writes since the snapshot, on the rows rebuilt from those products' histories (read a page
      // at a time: several pages here): a product missing there would count as created again.
      expect(c.views).toMatchObject({ loaded: 1, rebuilt: [] })
      expect(c.views.tailEvents).toBeGreaterThanOrEqual(2 * PRODUCTS)
      expect(await served(c.url)).toEqual({ USD: 2, EUR: 2 })
      const now = await products(b.url)
      expect(now.every((p, i) => p.version > expected[i].version)).toBe(true)
      expect(await converged(c.url, now)).toEqual(now)
      await c.stop()
    } finally {
      writing = false
      await writes
      await b.stop()
    }
  }, 180_000)

  it("serves the rows it loaded in the app's current schema version", async () => {
    const db = "pg_start_migrated"
    const store = await cluster.createDatabase(db)
    await writePriceLog(store, { products: PRODUCTS, events: 10 })
    const [last] = await cluster.sql(db, "select version, (data::jsonb ->> 'price')::float as price from writeonce.events where id = '1' order by seq desc limit 1")
    const node = await startNode(store, renamed)
    try {
      expect(node.rows).toMatchObject({ rows: PRODUCTS, tailEvents: 0 })
      const res = await http(`${node.url}/api/products/1`)
      expect(res.json).toEqual({ id: "1", version: last.version, name: "p0", amount: last.price, currency: "USD" })
    } finally {
      await node.stop()
    }
  }, 60_000)
})
