/**
 * Range, set and null filters on every surface: REST `?price[gte]=10&price[lt]=20`, `?status[in]=open,pending`,
 * `?assignee[null]=true`, and `<type>_list {where: {price: {gte: 10, lt: 20}, status: {in: [...]}, assignee: null}}`
 * on both MCP eras.
 *  - Random ranges, sets and null tests, in random orders and page sizes, walked page by page on REST, serve
 *    exactly the seeded rows a filter and sort of all of them gives; each first page is the same bytes on both MCP
 *    eras. `price` and `status` have declared (ready) indexes: a range leads over its index span; `name`'s index is
 *    built on first use; `assignee` can be absent.
 *  - A walk under concurrent writes keeps the cursor rules equality has: no row twice, every untouched row once.
 *  - A live query on a range (`wo://products?price[gte]=500&price[lt]=600`) hears a row entering it, changing in it
 *    and leaving it, and nothing of a row outside it.
 *  - A range walked in another field's order over more rows than a bounded walk reads (SCAN_BUDGET_ROWS) answers
 *    partial pages that say so, and following their cursors serves exactly the matching rows, in order.
 *  - A bad value or operator answers 400 (isError on MCP) naming the field and the operator.
 * The store is written directly (bench/lib/row-writer.ts), with 600 rows: more than a list builds an index for
 * before answering (BUILD_FIRST_ROWS), fewer than a bounded scan reads (SCAN_BUDGET_ROWS).
 */
import { Either, Schema } from "effect"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { writeProducts, type ProductSpec } from "../../bench/lib/row-writer.ts"
import { defineApp, entity } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { compareValues } from "../../src/domain/value-order.ts"
import { SCAN_BUDGET_ROWS } from "../../src/projections/rows/store-table.ts"
import { callTool } from "../../testkit/legacy-client.ts"
import { modernCall, openListen } from "../../testkit/modern-client.ts"
import type { SseConnection } from "../../testkit/sse.ts"
import { http, startServer, tempDir } from "../../testkit/server.ts"

const ROWS = 600
const SLOW = 240_000

const STATUSES = ["open", "pending", "closed"] as const
const app = defineApp({
  name: "desk",
  entities: {
    products: entity({
      fields: {
        name: Schema.String,
        price: Schema.Number,
        currency: Schema.Literal("USD", "EUR"),
        status: Schema.Literal(...STATUSES),
        assignee: Schema.optional(Schema.String)
      },
      indexes: ["price", "status"]
    })
  }
})

interface Seeded {
  readonly id: number
  readonly name: string
  readonly price: number
  readonly status: string
  readonly assignee?: string
}

const seeded = (i: number): Seeded => ({
  id: i,
  name: `n${String((i * 7919) % 1000).padStart(3, "0")}`,
  price: ((i * 37) % 200) / 2,
  status: STATUSES[i % 3],
  ...(i % 4 === 0 ? {} : { assignee: `agent-${i % 5}` })
})

type Server = Awaited<ReturnType<typeof startServer>>
let server: Server

beforeAll(async () => {
  const dataDir = tempDir("wo-range-")
  await writeProducts(dataDir, ROWS, (i) => {
    const { id: _id, ...spec } = seeded(i)
    return { ...spec, currency: i % 2 ? "USD" : "EUR" } as unknown as ProductSpec
  }, { app: Either.getOrThrow(compileApp(app)) })
  server = await startServer(app, { dataDir })
}, SLOW)
afterAll(() => server?.close())

/** One filter as a test writes it: REST query pairs, MCP where entry, and the predicate on a seeded row. */
interface Case {
  readonly rest: ReadonlyArray<readonly [string, string]>
  readonly where: Record<string, unknown>
  readonly holds: (row: Seeded) => boolean
}

const priceRange = fc.tuple(fc.integer({ min: -5, max: 105 }), fc.integer({ min: 0, max: 40 }), fc.boolean(), fc.boolean(), fc.constantFrom("both", "lower", "upper"))
  .map(([low, width, lowIn, highIn, sides]): Case => {
    const high = low + width / 2
    const lo = lowIn ? "gte" : "gt"
    const hi = highIn ? "lte" : "lt"
    const ops: Record<string, number> = {}
    if (sides !== "upper") ops[lo] = low
    if (sides !== "lower") ops[hi] = high
    return {
      rest: Object.entries(ops).map(([op, v]) => [`price[${op}]`, String(v)] as const),
      where: { price: ops },
      holds: (r) =>
        (ops.gt === undefined || r.price > ops.gt) && (ops.gte === undefined || r.price >= ops.gte) &&
        (ops.lt === undefined || r.price < ops.lt) && (ops.lte === undefined || r.price <= ops.lte)
    }
  })

const nameRange = fc.tuple(fc.integer({ min: 0, max: 999 }), fc.integer({ min: 0, max: 300 })).map(([a, w]): Case => {
  const low = `n${String(a).padStart(3, "0")}`
  const high = `n${String(a + w).padStart(3, "0")}`
  return { rest: [["name[gte]", low], ["name[lt]", high]], where: { name: { gte: low, lt: high } }, holds: (r) => r.name >= low && r.name < high }
})

const statusIn = fc.subarray([...STATUSES], { minLength: 1 }).map((set): Case => ({
  rest: [["status[in]", set.join(",")]],
  where: { status: { in: set } },
  holds: (r) => set.includes(r.status as never)
}))

const assigneeNull = fc.boolean().map((isNull): Case => ({
  rest: [["assignee[null]", String(isNull)]],
  where: isNull ? { assignee: null } : { assignee: { null: false } },
  holds: (r) => (r.assignee === undefined) === isNull
}))

const assigneeIn = fc.subarray(["agent-1", "agent-2", "agent-3", "nobody"], { minLength: 1 }).map((set): Case => ({
  rest: [["assignee[in]", set.join(",")]],
  where: { assignee: { in: set } },
  holds: (r) => r.assignee !== undefined && set.includes(r.assignee)
}))

/** One or two filters on different fields, all of which must hold. */
const cases = fc.uniqueArray(fc.oneof(priceRange, nameRange, statusIn, assigneeNull, assigneeIn), {
  minLength: 1,
  maxLength: 2,
  selector: (c) => Object.keys(c.where)[0]
}).map((cs): Case => ({
  rest: cs.flatMap((c) => c.rest),
  where: Object.assign({}, ...cs.map((c) => c.where)),
  holds: (r) => cs.every((c) => c.holds(r))
}))

const orders = fc.constantFrom("id", "-id", "price", "-price", "name", "-name", "status", "assignee", "-assignee")

const expected = (c: Case, order: string): Array<string> => {
  const descending = order.startsWith("-")
  const field = (descending ? order.slice(1) : order) as keyof Seeded
  const rows = Array.from({ length: ROWS }, (_, i) => seeded(i + 1)).filter(c.holds)
  rows.sort((a, b) => (field === "id" ? 0 : compareValues(a[field], b[field])) || a.id - b.id)
  if (descending) rows.reverse()
  return rows.map((r) => String(r.id))
}

const restQuery = (c: Case, extra: Record<string, string>) =>
  // An `in` list's commas are written as they are: an escaped one (%2C) is a comma within a value.
  [...c.rest, ...Object.entries(extra)].map(([k, v]) => `${encodeURIComponent(k)}=${v.split(",").map(encodeURIComponent).join(",")}`).join("&")

describe("range, set and null filters against a filter and sort of all the rows", () => {
  it("REST walks serve exactly the matching rows in order; each first page is the same bytes on both MCP eras", async () => {
    await fc.assert(fc.asyncProperty(cases, orders, fc.integer({ min: 1, max: 60 }), async (c, order, limit) => {
      const ids: Array<string> = []
      let cursor: string | undefined
      let first: string | undefined
      for (let pages = 0; pages < 1000; pages++) {
        const res = await http(`${server.url}/api/products?${restQuery(c, { order, limit: String(limit), ...(cursor ? { cursor } : {}) })}`)
        expect(res.status, res.text).toBe(200)
        first ??= res.text
        expect(res.json.partial).toBeUndefined()
        ids.push(...res.json.items.map((r: any) => r.id))
        cursor = res.json.nextCursor
        if (cursor === undefined) break
      }
      expect(ids).toEqual(expected(c, order))
      const args = { where: c.where, order, limit }
      const legacy = await callTool(server.url, "products_list", args)
      expect(legacy.isError, legacy.content[0].text).toBeUndefined()
      expect(legacy.content[0].text).toBe(first)
      const modern = (await modernCall(server.url, "products_list", args)).json.result
      expect(modern.content[0].text).toBe(first)
    }), { numRuns: 40 })
  }, SLOW)

  it("?assignee[null]=true finds the unassigned rows, as MCP's assignee: null does", async () => {
    const unassigned = Array.from({ length: ROWS }, (_, i) => seeded(i + 1)).filter((r) => r.assignee === undefined).map((r) => String(r.id))
    const res = await http(`${server.url}/api/products?assignee[null]=true&limit=1000`)
    expect(res.status, res.text).toBe(200)
    expect(res.json.items.map((r: any) => r.id)).toEqual(unassigned)
    expect(res.json.items.every((r: any) => !("assignee" in r))).toBe(true)
    const legacy = await callTool(server.url, "products_list", { where: { assignee: null }, limit: 1000 })
    expect(legacy.content[0].text).toBe(res.text)
  })
})

describe("a range walk under concurrent writes", () => {
  it("keeps equality's cursor rules: no row twice, every untouched row in the range once, in order", async () => {
    const before = expected({ rest: [], where: {}, holds: (r) => r.price >= 20 && r.price < 30 }, "price")
    const moved = new Set<string>()
    const seen: Array<{ id: string; price: number }> = []
    let cursor: string | undefined
    for (let page = 0; ; page++) {
      const res = await http(`${server.url}/api/products?price[gte]=20&price[lt]=30&order=price&limit=7${cursor ? `&cursor=${cursor}` : ""}`)
      expect(res.status, res.text).toBe(200)
      seen.push(...res.json.items.map((r: any) => ({ id: r.id, price: r.price })))
      cursor = res.json.nextCursor
      if (cursor === undefined) break
      // Between pages: a row created inside the range, one outside, and a row of the range moved out of it.
      await http(`${server.url}/api/products`, { method: "POST", body: { name: `new${page}`, price: 20 + (page % 10), currency: "USD", status: "open" } })
      await http(`${server.url}/api/products`, { method: "POST", body: { name: `out${page}`, price: 50, currency: "USD", status: "open" } })
      const victim = before[before.length - 1 - page]
      if (victim !== undefined && !seen.some((s) => s.id === victim)) {
        const res = await http(`${server.url}/api/products/${victim}`, { method: "PATCH", body: { price: 99 } })
        expect(res.status).toBe(200)
        moved.add(victim)
      }
    }
    const ids = seen.map((s) => s.id)
    expect(new Set(ids).size).toBe(ids.length)
    for (const id of before) if (!moved.has(id)) expect(ids).toContain(id)
    for (const id of moved) expect(ids).not.toContain(id)
    expect(seen.every((s) => s.price >= 20 && s.price < 30)).toBe(true)
    const keys = seen.map((s) => [s.price, Number(s.id)] as const)
    expect(keys).toEqual([...keys].sort((a, b) => a[0] - b[0] || a[1] - b[1]))
  }, SLOW)
})

describe("bad values and operators", () => {
  it("REST answers 400 naming the field and the operator; MCP the same as isError", async () => {
    const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
      ["price[gte]=cheap", { price: { gte: "cheap" } }, "price", /gte: Expected a number|gte: Expected number/],
      ["price[between]=1", { price: { between: 1 } }, "price", /"between" is not an operator/],
      ["status[in]=open,shut", { status: { in: ["open", "shut"] } }, "status", /in: Expected "open" \| "pending" \| "closed", actual "shut"/],
      ["name[null]=true", { name: null }, "name", /null does not apply: name always has a value/],
      ["assignee[null]=maybe", { assignee: { null: "maybe" } }, "assignee", /null: Expected true or false/]
    ]
    for (const [query, where, field, message] of cases) {
      const res = await http(`${server.url}/api/products?${query}`)
      expect(res.status, query).toBe(400)
      expect(res.json.error).toBe("ValidationFailed")
      expect(res.json.issues.map((i: any) => i.path.join(".")).some((p: string) => p.startsWith(field)), res.text).toBe(true)
      expect(res.json.message, query).toMatch(message)
      const legacy = await callTool(server.url, "products_list", { where })
      expect(legacy.isError, JSON.stringify(where)).toBe(true)
      expect(legacy.content[0].text).toMatch(message)
      expect(legacy.content[0].text).toContain(`where.${field}`)
    }
  })
})

/** The URIs of the next `n` resource notices (each awaited up to 10 s), then a short look for one more. */
const notices = async (stream: SseConnection, n: number) => {
  const out: Array<string> = []
  while (out.length < n) {
    const m = await stream.nextJson(10_000)
    if (m === undefined) break
    if (m.json.method === "notifications/resources/updated") out.push(m.json.params.uri)
  }
  const extra = await stream.nextJson(150)
  if (extra !== undefined) out.push(extra.json.params?.uri ?? extra.json.method)
  return out
}

describe("a live query on a range", () => {
  it("hears a row entering the range, changing in it and leaving it; nothing while it is outside", async () => {
    const RANGE = "wo://products?price[gte]=500&price[lt]=600"
    const listen = await openListen(server.url, "range-1", [RANGE])
    try {
      expect((await listen.nextJson(10_000))?.json.params.notifications).toEqual({ resourceSubscriptions: [RANGE] })
      const created = await http(`${server.url}/api/products`, { method: "POST", body: { name: "live", price: 50, currency: "USD", status: "open" } })
      expect(created.status).toBe(201)
      const patch = async (price: number) =>
        expect((await http(`${server.url}/api/products/${created.json.id}`, { method: "PATCH", body: { price } })).status).toBe(200)
      expect(await notices(listen, 0)).toEqual([])
      await patch(550) // enters
      expect(await notices(listen, 1)).toEqual([RANGE])
      await patch(599.5) // changes while in it
      expect(await notices(listen, 1)).toEqual([RANGE])
      await patch(600) // leaves: the upper bound is exclusive
      expect(await notices(listen, 1)).toEqual([RANGE])
      await patch(700) // outside, before and after
      expect(await notices(listen, 0)).toEqual([])
      // The live query reads as the list's first page.
      await patch(500)
      expect(await notices(listen, 1)).toEqual([RANGE])
      const page = await http(`${server.url}/api/products?price[gte]=500&price[lt]=600`)
      expect(page.json.items.map((r: any) => r.id)).toEqual([created.json.id])
    } finally {
      listen.close()
    }
  }, SLOW)
})

describe("a range in another field's order, over more rows than a page reads", () => {
  const MANY = 3 * SCAN_BUDGET_ROWS
  let big: Server
  /** Product i: names ascending with i, and only every 4,000th priced 1000 or more. */
  const spec = (i: number) => ({ name: `p${String(i).padStart(6, "0")}`, price: i % 4000 === 0 ? 1000 + i : i % 500, currency: "USD", status: "open" })
  beforeAll(async () => {
    const dataDir = tempDir("wo-range-big-")
    await writeProducts(dataDir, MANY, (i) => spec(i) as unknown as ProductSpec, { app: Either.getOrThrow(compileApp(app)) })
    big = await startServer(app, { dataDir })
  }, SLOW)
  afterAll(() => big?.close())

  it("stops each page at the budget, says it is partial, and its cursors lead to every match, in order", async () => {
    const expectedIds = Array.from({ length: MANY }, (_, i) => i + 1).filter((i) => spec(i).price >= 1000).map(String).reverse()
    const ids: Array<string> = []
    let partial = 0
    let cursor: string | undefined
    for (let pages = 0; pages < 100; pages++) {
      const res = await http(`${big.url}/api/products?price[gte]=1000&order=-name&limit=2${cursor ? `&cursor=${cursor}` : ""}`)
      expect(res.status, res.text).toBe(200)
      if (res.json.partial === true) partial++
      ids.push(...res.json.items.map((r: any) => r.id))
      cursor = res.json.nextCursor
      if (cursor === undefined) break
    }
    expect(ids).toEqual(expectedIds)
    expect(partial).toBeGreaterThan(0)
    // The same first page, the same bytes, on MCP.
    const rest = await http(`${big.url}/api/products?price[gte]=1000&order=-name&limit=2`)
    const legacy = await callTool(big.url, "products_list", { where: { price: { gte: 1000 } }, order: "-name", limit: 2 })
    expect(legacy.content[0].text).toBe(rest.text)
  }, SLOW)
})
