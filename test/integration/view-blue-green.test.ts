/**
 * Blue/green refolds of a view whose declaration changed: the server restarts with the new declaration on a log of
 * thousands of events, while clients write and read the view. The older value keeps answering 200, frozen and
 * marked stale, never a 503, until the new fold has caught up and is swapped in; a subscriber (the official MCP
 * SDK client) hears exactly one notification, at the swap. The background fold waits at a gate the test opens
 * (testkit/gated-refold.ts), so what is read before and after the swap is decided by counts, not by timing.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Schema } from "effect"
import * as fs from "node:fs"
import { describe, expect, it } from "vitest"
import { defineApp, view } from "../../src/domain/catalog.ts"
import { writeProducts } from "../../bench/lib/row-writer.ts"
import { startGatedRefold } from "../../testkit/gated-refold.ts"
import { apps, http, startServer, tempDir } from "../../testkit/server.ts"
import { waitFor } from "../../testkit/wait.ts"

const VIEW = "products_by_currency"
const VIEW_URL = `/api/_views/${VIEW}`
const LOGGED = 3000

type Counts = Record<string, number>

/** The pricing sample with its view declared again: `total` counts the products too, or only its `version` is raised. */
const pricingWith = (change: "total" | "version") =>
  defineApp({
    ...apps.pricing,
    views: {
      [VIEW]: change === "total"
        ? view({
          schema: Schema.Struct({ USD: Schema.Int, EUR: Schema.Int, total: Schema.Int }),
          initial: { USD: 0, EUR: 0, total: 0 },
          on: { products: ["created", "updated", "deleted"] },
          evolve: (c, { before, after }) => {
            const next = { ...c }
            if (before !== null) (next[String(before.currency) as "USD" | "EUR"] -= 1, next.total -= 1)
            if (after !== null) (next[String(after.currency) as "USD" | "EUR"] += 1, next.total += 1)
            return next
          }
        })
        : view({
          schema: Schema.Struct({ USD: Schema.Int, EUR: Schema.Int }),
          initial: { USD: 0, EUR: 0 },
          version: 2,
          on: { products: ["created", "updated", "deleted"] },
          evolve: (c, { before, after }) => {
            const next = { ...c }
            if (before !== null) next[String(before.currency) as "USD" | "EUR"] -= 1
            if (after !== null) next[String(after.currency) as "USD" | "EUR"] += 1
            return next
          }
        })
    }
  })

/** The view's value once its current declaration is served (503 or a stale mark until then). */
const current = async (url: string): Promise<Counts> => {
  for (let polls = 0; polls < 1000; polls++) {
    const res = await http(`${url}${VIEW_URL}`)
    if (res.status === 200 && res.headers.get("wo-view-exact-at") === null) return res.json.value
    await new Promise((r) => setTimeout(r, 20))
  }
  throw new Error(`${VIEW} was never served from its current declaration`)
}

/** A data dir holding `n` products (a third in EUR) and the pricing view's stored value, folded by its first start. */
const loggedStore = async (n: number) => {
  const dir = tempDir("wo-blue-green-")
  await writeProducts(dir, n, (i) => ({ name: `item-${i}`, price: i, currency: i % 3 === 0 ? "EUR" : "USD" }))
  const first = await startServer(apps.pricing, { dataDir: dir })
  try {
    expect(await current(first.url)).toEqual({ USD: n - Math.floor(n / 3), EUR: Math.floor(n / 3) })
  } finally {
    await first.close()
  }
  return dir
}

/** Creates `count` products (half in EUR) over REST, `inFlight` at a time. */
const writeProductsOver = async (url: string, count: number, inFlight = 2) => {
  let next = 0
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < count) {
      const i = next++
      const res = await http(`${url}/api/products`, { method: "POST", body: { name: `live-${i}`, price: 1, currency: i % 2 === 0 ? "EUR" : "USD" } })
      expect(res.status, res.text).toBe(201)
    }
  }))
}

interface Read {
  readonly status: number
  readonly exactAt: string | null
  readonly value: Counts | undefined
}

describe("a view whose declaration changed, refolded blue/green", () => {
  it("answers 200 from the older version, frozen and marked, while clients write and read, never a 503; then the new value with every write", async () => {
    const dir = await loggedStore(LOGGED)
    const older = { USD: 2000, EUR: 1000 }
    const server = await startGatedRefold(pricingWith("total"), dir)
    const reads: Array<Array<Read>> = [[], []]
    let reading = true
    const readers = reads.map(async (mine) => {
      while (reading) {
        const res = await http(`${server.url}${VIEW_URL}`)
        mine.push({ status: res.status, exactAt: res.headers.get("wo-view-exact-at"), value: res.json?.value })
      }
    })
    try {
      // The new fold waits at the gate: 100 writes, every read meanwhile the older value, exact at the logged head.
      await writeProductsOver(server.url, 100)
      const duringFold = reads.flat()
      expect(duringFold.length).toBeGreaterThan(0)
      for (const r of duringFold) expect(r).toEqual({ status: 200, exactAt: String(LOGGED), value: older })

      // The fold goes on while 100 more writes come in; the readers go on until they see the new value.
      server.open()
      await writeProductsOver(server.url, 100)
      const expected = { USD: 2000 + 100, EUR: 1000 + 100, total: LOGGED + 200 }
      expect(await current(server.url)).toEqual(expected)
      reading = false
      await Promise.all(readers)

      for (const mine of reads) {
        // Never a 503: the older value, then (once swapped) the new one's, never the older again.
        expect(mine.filter((r) => r.status !== 200)).toEqual([])
        const firstNew = mine.findIndex((r) => r.exactAt === null)
        const stale = firstNew === -1 ? mine : mine.slice(0, firstNew)
        const fresh = firstNew === -1 ? [] : mine.slice(firstNew)
        for (const r of stale) expect(r).toEqual({ status: 200, exactAt: String(LOGGED), value: older })
        expect(fresh.filter((r) => r.exactAt !== null)).toEqual([])
        // The new value holds every write made before the fold was let go, and only grows.
        const totals = fresh.map((r) => r.value!.total)
        expect(totals.every((t, i) => t >= LOGGED + 100 && (i === 0 || t >= totals[i - 1]))).toBe(true)
      }
      expect(reads.flat().some((r) => r.exactAt === null)).toBe(true)
    } finally {
      reading = false
      await Promise.all(readers)
      await server.close()
    }
  }, 120_000)

  it("tells a subscriber (MCP SDK client) once, at the swap; the resource and the tool carry the stale mark in _meta until then", async () => {
    const base = await loggedStore(300)
    const dir = tempDir("wo-blue-green-sdk-")
    fs.cpSync(base, dir, { recursive: true })
    const server = await startGatedRefold(pricingWith("version"), dir)
    const client = new Client({ name: "blue-green-subscriber", version: "1.0.0" })
    const updates: Array<string> = []
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri))
    const viewUri = `wo://views/${VIEW}`
    const rowUri = "wo://products/1"
    const count = (uri: string) => updates.filter((u) => u === uri).length
    /** A price change of product 1: its row's notice marks a point in the stream (it leaves the view as it was). */
    let marks = 0
    const mark = async () => {
      marks++
      expect((await http(`${server.url}/api/products/1/set_price`, { method: "POST", body: { price: 100 + marks } })).status).toBe(200)
      expect(await waitFor(() => count(rowUri) === marks, 10_000)).toBe(true)
    }
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)))
      await client.subscribeResource({ uri: viewUri })
      await client.subscribeResource({ uri: rowUri })
      // The client opens its stream after initialized: the first mark is heard once it is open.
      for (let tries = 0; count(rowUri) === 0 && tries < 50; tries++) {
        await http(`${server.url}/api/products/1/set_price`, { method: "POST", body: { price: 50 + tries } })
        await waitFor(() => count(rowUri) > 0, 200)
      }
      expect(count(rowUri)).toBeGreaterThan(0)
      marks = count(rowUri)

      // Writes that change the counts while the older value serves it: frozen, so no notice for the view.
      await writeProductsOver(server.url, 20)
      await mark()
      expect(count(viewUri)).toBe(0)
      const resource = (await client.readResource({ uri: viewUri })).contents[0] as { text: string; _meta?: Record<string, unknown> }
      expect(JSON.parse(resource.text).value).toEqual({ USD: 200, EUR: 100 })
      const stale = resource._meta?.["writeonce/view"] as Record<string, unknown>
      expect(stale).toMatchObject({ exactAt: 300, version: expect.stringMatching(/^[0-9a-f]{16}$/), nextVersion: expect.stringMatching(/^[0-9a-f]{16}$/) })
      const tool = await client.callTool({ name: `view_${VIEW}` })
      expect(tool.isError).toBeFalsy()
      expect(tool._meta?.["writeonce/view"]).toEqual(stale)
      expect((tool.structuredContent as { value: Counts }).value).toEqual({ USD: 200, EUR: 100 })

      // The swap: one notice, then the new value with the writes made meanwhile, unmarked.
      server.open()
      expect(await current(server.url)).toEqual({ USD: 210, EUR: 110 })
      await mark()
      expect(count(viewUri)).toBe(1)
      const swapped = (await client.readResource({ uri: viewUri })).contents[0] as { text: string; _meta?: Record<string, unknown> }
      expect(JSON.parse(swapped.text).value).toEqual({ USD: 210, EUR: 110 })
      expect(swapped._meta).toBeUndefined()
      // The next change is heard as every change is: one more.
      await writeProductsOver(server.url, 1)
      await mark()
      expect(count(viewUri)).toBe(2)
    } finally {
      await client.close()
      await server.close()
    }
  }, 120_000)
})
