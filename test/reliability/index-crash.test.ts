/**
 * Secondary indexes on disk against kill -9 of a real `wo run`, and `wo verify`'s index check:
 * - the index records written with their rows: creates, set_price and deletes from 16 clients, kill -9 right after
 *   the Nth acknowledged write (N different each round, the other writes in flight, so the kill lands anywhere in
 *   a batch's life); then `wo verify` (which checks every record against the rows) passes, and the restarted server
 *   serves filtered and ordered lists exactly as a filter and sort of all its rows;
 * - the backfill of a declared index over rows written without one: killed while building, it has stored its
 *   cursor; verify passes on the half-built index; restarted, the index finishes and lists are right;
 * - `wo verify` names a deleted and an extra index record;
 * - a changed declaration of the type (a field added with a default) rebuilds its indexes from the rows as served.
 */
import { ClassicLevel } from "classic-level"
import { afterEach, describe, expect, it } from "vitest"
import { writeProducts } from "../../bench/lib/row-writer.ts"
import { indexKey, indexMetaKey } from "../../src/log/classic-level/index-keys.ts"
import { decodeIndexState } from "../../src/log/classic-level/store-indexes.ts"
import { BACKFILL_CHUNK } from "../../src/projections/rows/index-backfill.ts"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { http, runWo, spawnServer, tempDir } from "../../testkit/server.ts"
import { listIds } from "../../testkit/list-pages.ts"

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()))
})

const APP = `
import { Schema } from "effect"
import { defineApp, entity } from "writeonce"
export default defineApp({
  name: "indexed",
  entities: {
    products: entity({
      fields: { name: Schema.String, price: Schema.Number, currency: Schema.Literal("USD", "EUR") },
      methods: { set_price: { params: { price: Schema.Number }, apply: (_row, { price }) => ({ price }) } },
      indexes: ["name", ["currency", "price"]]
    })
  }
})
`

type Product = { id: string; name: string; price: number; currency: string }

/** Every page of a products list, following its cursors. */
const walk = (url: string, query: string) => listIds(url, `/api/products?${query}`)

/** Filtered and ordered lists against a filter and sort of every row the server lists in id order. */
const expectListsRight = async (url: string) => {
  const all: Array<Product> = []
  let cursor: string | undefined
  do {
    const res = await http(`${url}/api/products?limit=500${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
    all.push(...res.json.items)
    cursor = res.json.nextCursor
  } while (cursor !== undefined)
  const byPrice = (sign: number) => (a: Product, b: Product) => sign * (a.price - b.price || Number(a.id) - Number(b.id))
  expect(await walk(url, "name=n3&limit=7")).toEqual(all.filter((p) => p.name === "n3").map((p) => p.id))
  expect(await walk(url, "currency=EUR&order=price&limit=9")).toEqual(all.filter((p) => p.currency === "EUR").sort(byPrice(1)).map((p) => p.id))
  expect(await walk(url, "currency=USD&order=-price&limit=9")).toEqual(all.filter((p) => p.currency === "USD").sort(byPrice(-1)).map((p) => p.id))
  expect(await walk(url, "order=-name&limit=11")).toEqual(
    [...all].sort((a, b) => -(a.name < b.name ? -1 : a.name > b.name ? 1 : Number(a.id) - Number(b.id))).map((p) => p.id)
  )
  return all.length
}

const readIndexState = async (dataDir: string, fields: ReadonlyArray<string>) => {
  const db = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8" })
  await db.open()
  try {
    const key = indexMetaKey("products", fields)
    const value = await db.get(key)
    return value === undefined ? undefined : decodeIndexState(key, value)
  } finally {
    await db.close()
  }
}

describe("secondary indexes on disk", () => {
  it("records written with their rows survive kill -9 anywhere in a batch: verify passes, lists are right after the restart", async () => {
    const appDir = writeAppDir(APP)
    const dataDir = tempDir("wo-index-kill-")
    let created = 0
    for (const [round, killAt] of [17, 41, 83].entries()) {
      const server = await spawnServer(appDir, dataDir)
      cleanups.push(() => server.stop("SIGKILL"))
      if (round > 0) await expectListsRight(server.url)
      let acked = 0
      let killed = false
      let n = round * 1000
      const client = async () => {
        while (!killed) {
          const i = n++
          const id = String(1 + (i * 7) % Math.max(1, created))
          const op = i % 5
          try {
            const res = op < 2 || created < 5
              ? await http(`${server.url}/api/products`, { method: "POST", body: { name: `n${i % 6}`, price: 1 + (i * 31) % 50, currency: i % 3 === 0 ? "EUR" : "USD" } })
              : op < 4
                ? await http(`${server.url}/api/products/${id}/set_price`, { method: "POST", body: { price: 1 + (i * 17) % 50 } })
                : await http(`${server.url}/api/products/${id}`, { method: "DELETE" })
            if (res.status === 201) created = Math.max(created, Number(res.json.id))
            if (res.status < 300 && ++acked >= killAt && !killed) {
              killed = true
              await server.stop("SIGKILL")
            }
          } catch {
            return // the server is gone
          }
        }
      }
      await Promise.all(Array.from({ length: 16 }, client))
      expect(killed).toBe(true)
      const verify = await runWo(["verify", dataDir])
      expect(verify.code, verify.stdout + verify.stderr).toBe(0)
    }
    const last = await spawnServer(appDir, dataDir)
    cleanups.push(() => last.stop())
    expect(await expectListsRight(last.url)).toBeGreaterThan(20)
  }, 120_000)

  it("a declared index's backfill survives kill -9 and resumes from its stored cursor", async () => {
    const appDir = writeAppDir(APP)
    const dataDir = tempDir("wo-index-backfill-")
    // Enough rows that the backfill (a chunk of BACKFILL_CHUNK at a time, seconds for these) is still building when
    // the kill lands a write's answer later: tens of times the kill's fraction of a second, on a loaded machine too.
    const N = 40_000
    await writeProducts(dataDir, N, (i) => ({ name: `n${i % 6}`, price: 1 + (i * 31) % 50, currency: i % 3 === 0 ? "EUR" : "USD" }))
    const first = await spawnServer(appDir, dataDir)
    // Ready while the backfill runs in the background: a write goes through meanwhile.
    const res = await http(`${first.url}/api/products/5/set_price`, { method: "POST", body: { price: 999 } })
    expect(res.status, res.text).toBe(200)
    await first.stop("SIGKILL")
    const killed = await readIndexState(dataDir, ["name"])
    expect(killed?.state).toBe("building")
    expect(killed!.after % BACKFILL_CHUNK).toBe(0) // a whole number of chunks stored
    const verify = await runWo(["verify", dataDir])
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)

    const again = await spawnServer(appDir, dataDir)
    cleanups.push(() => again.stop())
    // A list that needs the index is answered by bounded scans while the backfill runs, then from the index: the
    // same rows either way; the backfill is done once a first page is full.
    const named = Array.from({ length: N }, (_, i) => i + 1).filter((i) => i % 6 === 2).map(String)
    expect(await walk(again.url, "name=n2&limit=1000")).toEqual(named)
    for (let polls = 0; polls < 6000 && (await http(`${again.url}/api/products?name=n2&limit=1000`)).json.items.length < 1000; polls++) {
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(await walk(again.url, "name=n2&limit=1000")).toEqual(named)
    expect((await http(`${again.url}/api/products?currency=USD&order=-price&limit=1`)).json.items[0]).toMatchObject({ id: "5", price: 999 })
    await again.stop()
    expect((await readIndexState(dataDir, ["name"]))?.state).toBe("ready")
    const after = await runWo(["verify", dataDir])
    expect(after.code, after.stdout + after.stderr).toBe(0)
  }, 180_000)

  it("wo verify names a deleted and an extra index record, and passes once they are put back", async () => {
    const appDir = writeAppDir(APP)
    const dataDir = tempDir("wo-index-verify-")
    const server = await spawnServer(appDir, dataDir)
    cleanups.push(() => server.stop())
    for (let i = 0; i < 5; i++) await http(`${server.url}/api/products`, { method: "POST", body: { name: `n${i}`, price: 10 + i, currency: "USD" } })
    await walk(server.url, "name=n1") // ready before the stop
    await server.stop()
    expect((await runWo(["verify", dataDir])).code).toBe(0)

    const db = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8" })
    await db.open()
    const gone = indexKey("products", ["name"], { id: "2", version: 1, name: "n1" })
    const extra = indexKey("products", ["name"], { id: "9", version: 1, name: "n9" })
    expect(await db.get(gone)).toBe("")
    await db.del(gone)
    await db.put(extra, "")
    await db.close()
    const bad = await runWo(["verify", dataDir])
    expect(bad.code).not.toBe(0)
    expect(bad.stdout + bad.stderr).toContain("the index on name of products has no record of row products/2")
    expect(bad.stdout + bad.stderr).toContain("the index on name of products has a record of row products/9, which is not stored")

    const fix = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8" })
    await fix.open()
    await fix.put(gone, "")
    await fix.del(extra)
    await fix.close()
    expect((await runWo(["verify", dataDir])).code).toBe(0)
  }, 60_000)

  it("a field added with a default: the indexes are built again from the rows as served, and verify passes", async () => {
    const appDir = writeAppDir(APP)
    const dataDir = tempDir("wo-index-schema-")
    const server = await spawnServer(appDir, dataDir)
    for (let i = 0; i < 6; i++) await http(`${server.url}/api/products`, { method: "POST", body: { name: `n${i % 2}`, price: 10 - i, currency: "USD" } })
    expect(await walk(server.url, "name=n1")).toEqual(["2", "4", "6"])
    await server.stop()
    const before = await readIndexState(dataDir, ["name"])

    // The next version adds `stock` with a default: stored rows lack it, served rows have it.
    const v2 = writeAppDir(APP.replace('currency: Schema.Literal("USD", "EUR") }', 'currency: Schema.Literal("USD", "EUR"), stock: Schema.optionalWith(Schema.Number, { default: () => 5 }) }')
      .replace('indexes: ["name", ["currency", "price"]]', 'indexes: ["name", ["currency", "price"], "stock"]'))
    const again = await spawnServer(v2, dataDir)
    cleanups.push(() => again.stop())
    expect(await walk(again.url, "stock=5&limit=4")).toEqual(["1", "2", "3", "4", "5", "6"])
    expect(await walk(again.url, "name=n1&limit=2")).toEqual(["2", "4", "6"])
    expect(await walk(again.url, "currency=USD&order=price&limit=4")).toEqual(["6", "5", "4", "3", "2", "1"])
    await http(`${again.url}/api/products/3/set_price`, { method: "POST", body: { price: 1 } })
    expect(await walk(again.url, "currency=USD&order=price&limit=4")).toEqual(["3", "6", "5", "4", "2", "1"])
    await again.stop()
    expect(before?.schema).toBeDefined()
    expect((await readIndexState(dataDir, ["name"]))?.schema).not.toBe(before?.schema)
    const verify = await runWo(["verify", dataDir])
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
  }, 60_000)
})
