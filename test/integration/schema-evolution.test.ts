/**
 * Schema evolution over one real data dir, across restarts: the pricing app, then changed apps. A default
 * serves old rows; a field old rows lack refuses startup by name and changes nothing; a versioned migration
 * (price renamed to amount) reads old and new events alike and `wo replay --app` proves the rows; a type that
 * is gone refuses startup unless it is retired.
 *
 * The changed apps are real app folders (app.ts importing "writeonce" and "effect") in temp dirs, so the same
 * definition serves in-process (startServer) and through the `wo` binary (wo run, wo replay --app).
 */
import { ClassicLevel } from "classic-level"
import { Effect } from "effect"
import * as fs from "node:fs"
import { afterAll, describe, expect, it } from "vitest"
import type { AppDef } from "../../src/domain/catalog.ts"
import { loadApp } from "../../src/app-loading/load-app.ts"
import { callTool, rpc } from "../../testkit/legacy-client.ts"
import { runWo } from "../../testkit/spawn.ts"
import { apps, http, spawnServer, startServer, tempDir } from "../../testkit/server.ts"
import { openSse } from "../../testkit/sse.ts"
import { writeAppDir as writeSharedAppDir } from "../../testkit/app-dir.ts"

const appDirs: Array<string> = []

/** An app folder in a temp dir (testkit/app-dir.ts), removed after each test. */
const writeAppDir = (source: string) => {
  const dir = writeSharedAppDir(source)
  appDirs.push(dir)
  return dir
}

const load = async (dir: string): Promise<AppDef> => (await Effect.runPromise(loadApp(dir))).app

/** The pricing sample (examples/pricing/app.ts) with `fields` added to products, and whatever `more` says. */
const pricingSource = ({ fields = "", entity = "", app = "", setPrice = "{ price }", price = "price" }: {
  fields?: string
  entity?: string
  app?: string
  setPrice?: string
  price?: string
}) => `
import { Schema } from "effect"
import { defineApp, entity, reject, renameField } from "writeonce"

const Price = Schema.Number.pipe(Schema.positive({ message: () => "price must be a positive number" }))

export default defineApp({
  name: "pricing",
  entities: {
    products: entity({
      fields: {
        name: Schema.String.pipe(Schema.minLength(1)),
        ${price}: Price,
        currency: Schema.Literal("USD", "EUR"),
        ${fields}
      },
      methods: {
        set_price: {
          params: { price: Schema.Number },
          apply: (_row, { price }) => (price > 0 ? ${setPrice} : reject("price must be a positive number"))
        }
      },
      ${entity}
      rest: ["list", "get", "create", "set_price"],
      mcp: ["list", "get", "set_price"]
    })
  },
  ${app}
})
`

const withSku = pricingSource({ fields: `sku: Schema.optionalWith(Schema.String, { default: () => "none" }),` })
const withWarehouse = pricingSource({ fields: `sku: Schema.optionalWith(Schema.String, { default: () => "none" }), warehouse: Schema.String,` })
// Version 2 calls the price "amount": old events and rows say price, and the migration renames it.
const renamed = pricingSource({
  price: "amount",
  fields: `sku: Schema.optionalWith(Schema.String, { default: () => "none" }),`,
  setPrice: "{ amount: price }",
  entity: `version: 2, migrations: { 2: renameField("price", "amount") },`
})
const ordersSource = (retired: boolean) => `
import { Schema } from "effect"
import { defineApp, entity } from "writeonce"

export default defineApp({
  name: "orders",
  entities: { orders: entity({ fields: { item: Schema.String } }) },
  ${retired ? `retired: ["products"],` : ""}
})
`

/** Every key and value in the data dir, read straight from classic-level. */
const contents = async (dataDir: string) => {
  const db = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8", createIfMissing: false })
  await db.open()
  try {
    const out: Array<string> = []
    for await (const [key, value] of db.iterator()) out.push(`${key}\t${value}`)
    return out
  } finally {
    await db.close()
  }
}

/** The first `n` events of /api/_events, as StoredEvent JSON. */
const readEvents = async (url: string, n: number) => {
  const sse = await openSse(`${url}/api/_events?from=1`, { headers: { accept: "text/event-stream" } })
  try {
    const events: Array<any> = []
    while (events.length < n) {
      const m = await sse.nextJson(5000)
      if (m === undefined) throw new Error(`/api/_events ended after ${events.length} events`)
      events.push(m.json)
    }
    return events
  } finally {
    sse.close()
  }
}

const startWo = (appDir: string, dataDir: string) => runWo(["run", appDir, "--data", dataDir, "--listen", "127.0.0.1:0"], { timeoutMs: 30_000 })

const dataDir = tempDir("wo-evolve-")
const closers: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const close of closers.splice(0)) await close()
  // rmSync removes the node_modules symlinks themselves, never what they point to.
  for (const dir of appDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

describe("schema evolution over one data dir", () => {
  it("starts as the pricing sample: three products, one repriced", async () => {
    const server = await startServer(apps.pricing, { dataDir })
    try {
      for (const [name, price] of [["Pen", 2], ["Ink", 5], ["Pad", 3]] as const) {
        expect((await http(`${server.url}/api/products`, { method: "POST", body: { name, price, currency: "USD" } })).status).toBe(201)
      }
      expect((await http(`${server.url}/api/products/2/set_price`, { method: "POST", body: { price: 6 } })).json).toMatchObject({ id: "2", version: 2, price: 6 })
    } finally {
      await server.close()
    }
  })

  it("(a) a field with a default starts, serves old rows with it on REST and MCP, and set_price on an old row works", async () => {
    const appDir = writeAppDir(withSku)
    const server = await startServer(await load(appDir), { dataDir })
    try {
      expect((await http(`${server.url}/api/products/1`)).json).toEqual({ id: "1", version: 1, name: "Pen", price: 2, currency: "USD", sku: "none" })
      expect((await http(`${server.url}/api/products`)).json.items.map((r: any) => r.sku)).toEqual(["none", "none", "none"])
      const got = await callTool(server.url, "products_get", { id: "3" })
      expect(got.structuredContent).toEqual({ id: "3", version: 1, name: "Pad", price: 3, currency: "USD", sku: "none" })
      // The tools' schemas do not require the field with a default, and name the default.
      const tools = (await rpc(server.url, "tools/list")).json.result.tools as Array<any>
      const get = tools.find((t) => t.name === "products_get")
      expect(get.outputSchema.properties.sku).toEqual({ type: "string", default: "none" })
      expect(get.outputSchema.required).toEqual(["id", "version", "name", "price", "currency"])

      const repriced = await http(`${server.url}/api/products/1/set_price`, { method: "POST", body: { price: 4 } })
      expect(repriced.json).toEqual({ id: "1", version: 2, name: "Pen", price: 4, currency: "USD", sku: "none" })
      const viaMcp = await callTool(server.url, "products_set_price", { id: "3", price: 9 })
      expect(viaMcp.structuredContent).toEqual({ id: "3", version: 2, name: "Pad", price: 9, currency: "USD", sku: "none" })
      const created = await http(`${server.url}/api/products`, { method: "POST", body: { name: "Cap", price: 1, currency: "EUR", sku: "C-1" } })
      expect(created.json).toEqual({ id: "4", version: 1, name: "Cap", price: 1, currency: "EUR", sku: "C-1" })
    } finally {
      await server.close()
    }
    // The stored rows now hold the default the events never carried: only the app can compare them.
    const bare = await runWo(["replay", dataDir])
    expect(bare.code).toBe(1)
    expect(bare.stderr).toMatch(/cannot compare without the app: .*fields present on one side.*wo replay --app <app-dir>/)
    expect(bare.stderr).not.toMatch(/MISMATCH/)
    const withApp = await runWo(["replay", "--app", appDir, dataDir])
    expect(withApp.stderr).toBe("")
    expect(withApp.stdout).toMatch(/replayed 7 events into 4 rows .*after the app's migrations and defaults/)
    expect(withApp.stdout).toMatch(/OK: the stored rows equal the log's fold/)
    expect(withApp.code).toBe(0)
  })

  it("(b) a required field old rows lack refuses startup naming the type, field, row count and ids; the data dir is unchanged", async () => {
    const before = await contents(dataDir)
    const run = await startWo(writeAppDir(withWarehouse), dataDir)
    expect(run.timedOut).toBe(false)
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/^wo: the stored data does not fit the app's schema \(nothing in the data dir was changed\)/m)
    expect(run.stderr).toContain('type "products", field "warehouse": 4 stored rows do not fit the schema (is missing); ids 1, 2, 3, 4.')
    expect(run.stderr).toContain("warehouse: <its schema>.pipe(Schema.optionalWith({ default: () => ... }))")
    expect(run.stderr).toContain("migrations")
    expect(run.stdout).not.toMatch(/serving app/)
    expect(await contents(dataDir)).toEqual(before)
  })

  it("(c) a version-2 migration renaming price to amount reads old and new events, and wo replay --app proves the rows", async () => {
    const appDir = writeAppDir(renamed)
    const server = await startServer(await load(appDir), { dataDir })
    try {
      // Stored rows written at version 1 come out renamed, the default applied.
      expect((await http(`${server.url}/api/products/2`)).json).toEqual({ id: "2", version: 2, name: "Ink", amount: 6, currency: "USD", sku: "none" })
      expect((await callTool(server.url, "products_get", { id: "4" })).structuredContent).toEqual({
        id: "4", version: 1, name: "Cap", amount: 1, currency: "EUR", sku: "C-1"
      })
      const repriced = await http(`${server.url}/api/products/2/set_price`, { method: "POST", body: { price: 7 } })
      expect(repriced.json).toEqual({ id: "2", version: 3, name: "Ink", amount: 7, currency: "USD", sku: "none" })
      const created = await http(`${server.url}/api/products`, { method: "POST", body: { name: "Mug", amount: 8, currency: "EUR" } })
      expect(created.json).toEqual({ id: "5", version: 1, name: "Mug", amount: 8, currency: "EUR", sku: "none" })
      expect((await http(`${server.url}/api/products`, { method: "POST", body: { name: "Old", price: 8, currency: "EUR" } })).status).toBe(400)

      // The log as /api/_events serves it: old events upcast (creates and set_price alike), new ones as written.
      const events = await readEvents(server.url, 9)
      expect(events.map((e) => [e.kind, e.schema ?? 1, e.data])).toEqual([
        ["created", 2, { name: "Pen", amount: 2, currency: "USD" }],
        ["created", 2, { name: "Ink", amount: 5, currency: "USD" }],
        ["created", 2, { name: "Pad", amount: 3, currency: "USD" }],
        ["invoked", 2, { amount: 6 }],
        ["invoked", 2, { amount: 4 }],
        ["invoked", 2, { amount: 9 }],
        ["created", 2, { name: "Cap", amount: 1, currency: "EUR", sku: "C-1" }],
        ["invoked", 2, { amount: 7 }],
        ["created", 2, { name: "Mug", amount: 8, currency: "EUR", sku: "none" }]
      ])
    } finally {
      await server.close()
    }
    // The raw log still says price for the old events, and records version 2 for the new ones.
    const raw = (await contents(dataDir)).filter((kv) => kv.startsWith("e!")).map((kv) => kv.slice(kv.indexOf("\t") + 1))
    expect(raw[0]).toMatch(/"price":2/)
    expect(raw[raw.length - 1]).toMatch(/"schema":2/)
    expect(raw[raw.length - 1]).toMatch(/"amount":8/)

    const restarted = await startServer(await load(appDir), { dataDir })
    try {
      expect((await http(`${restarted.url}/api/products`)).json.items.map((r: any) => [r.id, r.amount, "price" in r])).toEqual([
        ["1", 4, false], ["2", 7, false], ["3", 9, false], ["4", 1, false], ["5", 8, false]
      ])
    } finally {
      await restarted.close()
    }

    const bare = await runWo(["replay", dataDir])
    expect(bare.code).toBe(1)
    expect(bare.stderr).toMatch(/cannot compare without the app: the log holds data written at schema versions above 1 \(products\)/)
    expect(bare.stderr).not.toMatch(/MISMATCH/)
    const withApp = await runWo(["replay", "--app", appDir, dataDir])
    expect(withApp.stdout).toMatch(/replayed 9 events into 5 rows/)
    expect(withApp.stdout).toMatch(/OK: the stored rows equal the log's fold/)
    expect(withApp.code).toBe(0)
    // The sku-only app (version 1, no migration) cannot read this log: replay says why instead of passing.
    const wrongApp = await runWo(["replay", "--app", writeAppDir(withSku), dataDir])
    expect(wrongApp.code).toBe(1)
    expect(wrongApp.stderr).toContain('DOES NOT FIT: type "products": the log holds data written with schema version 2, but the app declares version 1')
    expect(wrongApp.stderr).toMatch(/DOES NOT FIT: type "products", field "price": 1 row rebuilt from the log does not fit the schema \(is missing\); id 5\./)
  })

  it("(d) a type gone from the app refuses startup by name; retired, the app starts without serving its rows", async () => {
    const before = await contents(dataDir)
    const gone = await startWo(writeAppDir(ordersSource(false)), dataDir)
    expect(gone.code).toBe(1)
    expect(gone.stderr).toContain('the log holds events of type "products", which the app no longer declares')
    expect(gone.stderr).toContain('retired: ["products"]')
    expect(await contents(dataDir)).toEqual(before)

    const server = await spawnServer(writeAppDir(ordersSource(true)), dataDir)
    closers.push(() => server.stop())
    expect((await http(`${server.url}/api/products/1`)).status).toBe(404)
    const order = await http(`${server.url}/api/orders`, { method: "POST", body: { item: "Pen" } })
    expect(order.json).toEqual({ id: "1", version: 1, item: "Pen" })
    const tools = (await rpc(server.url, "tools/list")).json.result.tools.map((t: any) => t.name)
    expect(tools.some((t: string) => t.startsWith("products_"))).toBe(false)
    expect(await server.stop()).toBe(0)
  })
})
