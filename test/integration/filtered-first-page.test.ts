/**
 * A filter on a field whose index is not built yet (none is declared: it is built on first use, in the background)
 * answers the matches that exist, on REST and both MCP eras, rather than an empty page an agent takes for "none":
 *  - 52 rows: the index is built before the answer (store-table.ts: BUILD_FIRST_ROWS); the first page holds the
 *    match at the last row, and is byte for byte the page of a built index (no `partial`, one text block on MCP);
 *  - 200,000 rows: the first page holds the match within the scan budget (SCAN_BUDGET_ROWS), says it is partial
 *    (`"partial":true`, and on MCP a sentence for the agent), and its cursor leads to the match beyond the budget.
 * Each surface filters its own field, so that each first page meets an index not built yet. The stores are written
 * directly (bench/lib/row-writer.ts), then served in-process; the MCP walks use the official SDK clients (v1 on the
 * legacy era, v2 pinned to the modern one), which check each result against the tool's outputSchema.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { writeProducts, type ProductSpec } from "../../bench/lib/row-writer.ts"
import { defineApp, entity } from "../../src/domain/catalog.ts"
import { BUILD_FIRST_ROWS, SCAN_BUDGET_ROWS } from "../../src/projections/rows/store-table.ts"
import { callTool } from "../../testkit/legacy-client.ts"
import { modernCall } from "../../testkit/modern-client.ts"
import { http, startServer, tempDir } from "../../testkit/server.ts"

const SLOW = 240_000

// Products with a field per surface, none of them indexed.
const app = defineApp({
  name: "catalog",
  entities: {
    products: entity({
      fields: { name: Schema.String, price: Schema.Number, currency: Schema.Literal("USD", "EUR"), sku: Schema.String, maker: Schema.String }
    })
  }
})

/** The field each surface filters on. */
const FIELDS = { rest: "name", legacy: "sku", modern: "maker" } as const

/** Product i; the rows in `burst` hold "burst" in every surface's field. */
const productsWith = (burst: ReadonlySet<number>) => (i: number): ProductSpec => {
  const mark = burst.has(i)
  // The writer stores whatever the spec holds: the fields beyond ProductSpec's go with it.
  const spec = {
    name: mark ? "burst" : `item-${i % 1000}`,
    price: 1 + (i % 997),
    currency: i % 3 === 0 ? "EUR" : "USD",
    sku: mark ? "burst" : `sku-${i}`,
    maker: mark ? "burst" : `maker-${i % 100}`
  }
  return spec as ProductSpec
}

type Server = Awaited<ReturnType<typeof startServer>>

const serve = async (rows: number, burst: ReadonlySet<number>): Promise<Server> => {
  const dataDir = tempDir("wo-first-page-")
  await writeProducts(dataDir, rows, productsWith(burst))
  return startServer(app, { dataDir })
}

describe("a filter on a field with no built index, 52 rows: the index is built before the answer", () => {
  const ROWS = 52
  let server: Server
  let row: string
  beforeAll(async () => {
    expect(ROWS).toBeLessThanOrEqual(BUILD_FIRST_ROWS)
    server = await serve(ROWS, new Set([ROWS]))
    row = (await http(`${server.url}/api/products/${ROWS}`)).text
  }, SLOW)
  afterAll(() => server?.close())

  it("REST: the first page holds the match, as a built index serves it", async () => {
    const res = await http(`${server.url}/api/products?${FIELDS.rest}=burst`)
    expect(res.status).toBe(200)
    expect(res.text).toBe(`{"items":[${row}]}`)
  })

  it("legacy MCP: the first page holds the match, the same bytes, one text block", async () => {
    const result = await callTool(server.url, "products_list", { where: { [FIELDS.legacy]: "burst" } })
    expect(result.isError).toBeUndefined()
    expect(result.content).toEqual([{ type: "text", text: `{"items":[${row}]}` }])
    expect(result.structuredContent).toEqual({ items: [JSON.parse(row)] })
  })

  it("modern MCP: the first page holds the match, the same bytes, one text block", async () => {
    const res = await modernCall(server.url, "products_list", { where: { [FIELDS.modern]: "burst" } })
    expect(res.status).toBe(200)
    const result = res.json.result
    expect(result.isError).toBeUndefined()
    expect(result.content).toEqual([{ type: "text", text: `{"items":[${row}]}` }])
    expect(result.structuredContent).toEqual({ items: [JSON.parse(row)] })
  })
})

describe("a filter on a field with no built index, 200,000 rows: a bounded scan, partial pages that say so", () => {
  const ROWS = 200_000
  // One match early (within the first page's budget), one far beyond it.
  const NEAR = 100
  const FAR = 150_000
  let server: Server
  beforeAll(async () => {
    expect(FAR).toBeGreaterThan(SCAN_BUDGET_ROWS * 2)
    server = await serve(ROWS, new Set([NEAR, FAR]))
  }, SLOW)
  afterAll(() => server?.close())

  interface Page {
    readonly items: ReadonlyArray<{ readonly id: string }>
    readonly nextCursor?: string
    readonly partial?: boolean
  }

  /**
   * Follows the cursor from the first page to the end; checks each page's shape. While the index is being built
   * the pages are scans (partial where they found fewer than `limit`); once it is built, pages walk it: the walk
   * goes on across that change.
   */
  const walk = async (first: Page, next: (cursor: string) => Promise<Page>) => {
    const ids: Array<string> = []
    let page = first
    for (let pages = 1; ; pages++) {
      ids.push(...page.items.map((r) => r.id))
      if (page.partial !== undefined) {
        expect(page.partial).toBe(true)
        expect(page.nextCursor).toBeDefined()
        expect(page.items.length).toBeLessThan(2)
      }
      if (page.nextCursor === undefined) break
      expect(pages, "the walk ends").toBeLessThan(Math.ceil(ROWS / SCAN_BUDGET_ROWS) + 2)
      page = await next(page.nextCursor)
    }
    expect(ids).toEqual([String(NEAR), String(FAR)])
  }

  /** The first page of every surface: the near match, partial, with a cursor. */
  const expectPartialFirst = (page: Page) => {
    expect(page.items.map((r) => r.id)).toEqual([String(NEAR)])
    expect(page.partial).toBe(true)
    expect(page.nextCursor).toEqual(expect.any(String))
  }

  /** The MCP list tool (either SDK's callTool) on `field`: a partial first page with the agent's sentence, walked to the far match. */
  const partialPagesThrough = async (callTool: (args: Record<string, unknown>) => Promise<Record<string, unknown>>, field: string) => {
    const list = async (cursor?: string) => {
      const result = await callTool({ where: { [field]: "burst" }, limit: 2, ...(cursor === undefined ? {} : { cursor }) })
      expect(result.isError).toBeFalsy()
      const content = result.content as Array<{ type: string; text: string }>
      const page = result.structuredContent as Page
      expect(JSON.parse(content[0].text)).toEqual(page)
      // The sentence comes with a partial page only.
      expect(content.length).toBe(page.partial ? 2 : 1)
      return { page, content }
    }
    const { page, content } = await list()
    expectPartialFirst(page)
    expect(content[1].text).toContain(`This page is partial: the index on ${field} of products is being built`)
    expect(content[1].text).toContain(JSON.stringify(page.nextCursor))
    await walk(page, async (cursor) => (await list(cursor)).page)
  }

  it("REST: the first page holds the near match and says it is partial; its cursor leads to the far one", async () => {
    const list = (cursor?: string) => http(`${server.url}/api/products?${FIELDS.rest}=burst&limit=2${cursor === undefined ? "" : `&cursor=${cursor}`}`)
    const first = await list()
    expect(first.status).toBe(200)
    expectPartialFirst(first.json)
    expect(first.text).toMatch(/^\{"items":\[.*\],"nextCursor":"[^"]+","partial":true\}$/)
    await walk(first.json, async (cursor) => (await list(cursor)).json)
  }, SLOW)

  it("legacy MCP (SDK v1 client): the same partial page, with a sentence for the agent; its cursor leads to the far one", async () => {
    const client = new ClientV1({ name: "first-page", version: "1.0.0" })
    await client.connect(new TransportV1(new URL(`${server.url}/mcp`)))
    try {
      await partialPagesThrough((args) => client.callTool({ name: "products_list", arguments: args }), FIELDS.legacy)
    } finally {
      await client.close()
    }
  }, SLOW)

  it("modern MCP (SDK v2 client, pinned): the same partial page, with a sentence for the agent; its cursor leads to the far one", async () => {
    const client = new ClientV2({ name: "first-page", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
    await client.connect(new TransportV2(new URL(`${server.url}/mcp`)))
    try {
      await partialPagesThrough((args) => client.callTool({ name: "products_list", arguments: args }), FIELDS.modern)
    } finally {
      await client.close()
    }
  }, SLOW)

  it("REST and both MCP eras answer a partial page with the same body", async () => {
    // A field no surface above filtered on, and a value no row holds: an empty partial page of one budget.
    const rest = await http(`${server.url}/api/products?currency=EUR&${FIELDS.rest}=none&limit=1`)
    expect(rest.json).toMatchObject({ items: [], partial: true })
    const legacy = await callTool(server.url, "products_list", { where: { currency: "EUR", [FIELDS.rest]: "none" }, limit: 1 })
    const modern = (await modernCall(server.url, "products_list", { where: { currency: "EUR", [FIELDS.rest]: "none" }, limit: 1 })).json.result
    expect(legacy.content[0].text).toBe(rest.text)
    expect(modern.content[0].text).toBe(rest.text)
    expect(modern.content[1].text).toBe(legacy.content[1].text)
  }, SLOW)
})
