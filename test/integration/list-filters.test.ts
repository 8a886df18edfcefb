/**
 * Filtered and ordered lists on every surface: REST `?<field>=<value>&order=`, and `<type>_list {where, order}`
 * on both MCP eras. Each walks three pages with inserts between them, and the error cases name the field.
 */
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { defineApp, entity } from "../../src/domain/catalog.ts"
import { callTool, rpc } from "../../testkit/legacy-client.ts"
import { modernCall } from "../../testkit/modern-client.ts"
import { apps, http, startServer } from "../../testkit/server.ts"

type Server = Awaited<ReturnType<typeof startServer>>
type Walker = (where: Record<string, string>, order: string, limit: number, cursor?: string) => Promise<{ items: Array<any>; nextCursor?: string }>

const article = (title: string, status: "draft" | "published") => ({ title, body: `about ${title}`, status, tags: [], author: { name: "Ann" } })

const restWalker = (url: string): Walker => async (where, order, limit, cursor) => {
  const query = new URLSearchParams({ ...where, order, limit: String(limit), ...(cursor ? { cursor } : {}) })
  const res = await http(`${url}/api/articles?${query}`)
  expect(res.status, res.text).toBe(200)
  return res.json
}
const legacyWalker = (url: string): Walker => async (where, order, limit, cursor) => {
  const result = await callTool(url, "articles_list", { where, order, limit, ...(cursor ? { cursor } : {}) })
  expect(result.isError, result.content[0].text).toBeUndefined()
  expect(JSON.parse(result.content[0].text)).toEqual(result.structuredContent)
  return result.structuredContent
}
const modernWalker = (url: string): Walker => async (where, order, limit, cursor) => {
  const res = await modernCall(url, "articles_list", { where, order, limit, ...(cursor ? { cursor } : {}) })
  expect(res.status).toBe(200)
  const result = res.json.result
  expect(result.isError, JSON.stringify(result)).toBeUndefined()
  return result.structuredContent
}

describe("filtered and ordered lists", () => {
  let server: Server
  beforeAll(async () => {
    server = await startServer(apps.blog)
  })
  afterAll(async () => {
    await server.close()
  })

  const create = async (title: string, status: "draft" | "published") => {
    const res = await http(`${server.url}/api/articles`, { method: "POST", body: article(title, status) })
    expect(res.status).toBe(201)
    return res.json.id as string
  }

  for (const [surface, walker] of [["REST", restWalker], ["legacy MCP", legacyWalker], ["modern MCP", modernWalker]] as const) {
    it(`${surface}: status=published ordered by -title, three pages with inserts between them`, async () => {
      const tag = surface.replace(/\W/g, "")
      // Titles "<tag> m00" .. "<tag> m11": published ones are the even numbers; drafts interleave.
      for (let i = 0; i < 12; i++) await create(`${tag} m${String(i).padStart(2, "0")}`, i % 2 === 0 ? "published" : "draft")
      const walk = walker(server.url)
      const seen: Array<string> = []
      const page1 = await walk({ status: "published", title: `${tag} m10` }, "-title", 4)
      expect(page1.items.map((r) => r.title)).toEqual([`${tag} m10`])
      expect(page1.nextCursor).toBeUndefined()

      // The real walk: only this surface's articles share a prefix, so filter by status and read until done.
      let cursor: string | undefined
      const pages: Array<Array<string>> = []
      for (let n = 0; n < 10; n++) {
        const page = await walk({ status: "published" }, "-title", 3, cursor)
        const mine = page.items.filter((r) => r.title.startsWith(`${tag} `))
        expect(page.items.every((r) => r.status === "published")).toBe(true)
        pages.push(mine.map((r) => r.title))
        seen.push(...page.items.map((r) => `${r.id}`))
        cursor = page.nextCursor
        if (n === 0) {
          // Inserted during the walk: one that sorts before the cursor (already passed), one after it, a draft.
          await create(`${tag} m99`, "published")
          await create(`${tag} m01a`, "published")
          await create(`${tag} m03a`, "draft")
        }
        if (n === 1) await create(`${tag} m00a`, "published")
        if (cursor === undefined) break
      }
      expect(new Set(seen).size).toBe(seen.length) // nothing twice
      const titles = pages.flat()
      // Descending by title; m99 was inserted behind the cursor and is not seen, the others are, in order.
      expect(titles).toEqual([`${tag} m10`, `${tag} m08`, `${tag} m06`, `${tag} m04`, `${tag} m02`, `${tag} m01a`, `${tag} m00a`, `${tag} m00`])
      // Every page but the last was full: three or more pages were walked.
      expect(pages.length).toBeGreaterThanOrEqual(3)
    })
  }

  it("gives REST and both MCP eras the same page, byte for byte", async () => {
    const rest = await http(`${server.url}/api/articles?status=draft&order=title&limit=3`)
    const legacy = await callTool(server.url, "articles_list", { where: { status: "draft" }, order: "title", limit: 3 })
    const modern = (await modernCall(server.url, "articles_list", { where: { status: "draft" }, order: "title", limit: 3 })).json.result
    expect(legacy.content[0].text).toBe(rest.text)
    expect(modern.content[0].text).toBe(rest.text)
    expect(rest.json.items).toHaveLength(3)
    const titles = rest.json.items.map((r: any) => r.title)
    expect([...titles].sort()).toEqual(titles)
  })

  it("walks id order both ways, filtered", async () => {
    const asc = await http(`${server.url}/api/articles?status=draft&limit=1000`)
    const desc = await http(`${server.url}/api/articles?status=draft&order=-id&limit=1000`)
    const ids = asc.json.items.map((r: any) => Number(r.id))
    expect(ids.length).toBeGreaterThan(10)
    expect([...ids].sort((a, b) => a - b)).toEqual(ids)
    expect(desc.json.items.map((r: any) => Number(r.id))).toEqual([...ids].reverse())
  })

  it("refuses unknown fields, wrong value types, unfilterable fields and bad orders with 400 naming the field (REST)", async () => {
    const cases: Array<[string, string, RegExp]> = [
      ["bogus=1", "bogus", /is not a field of articles; filterable fields: title, body, status/],
      ["status=archived", "status", /Expected "draft" \| "published", actual "archived"/],
      ["tags=x", "tags", /cannot be filtered/],
      ["author=x", "author", /cannot be filtered/],
      ["order=-bogus", "order", /"-bogus" is not an order of articles/],
      ["status=draft&where.status=published", "status", /filtered twice/],
      ["limit=0", "limit", /must be an integer from 1/]
    ]
    for (const [query, field, message] of cases) {
      const res = await http(`${server.url}/api/articles?${query}`)
      expect(res.status, query).toBe(400)
      expect(res.json.error).toBe("ValidationFailed")
      expect(res.json.issues.map((i: any) => i.path.join("."))).toContain(field)
      expect(res.json.message).toMatch(message)
    }
  })

  it("refuses a cursor issued for another order", async () => {
    const page = await http(`${server.url}/api/articles?order=title&limit=1`)
    expect(page.json.nextCursor).toBeDefined()
    const other = await http(`${server.url}/api/articles?order=-title&limit=1&cursor=${page.json.nextCursor}`)
    expect(other.status).toBe(400)
    expect(other.json.issues[0].path).toEqual(["cursor"])
    const idOrder = await http(`${server.url}/api/articles?limit=1&cursor=${page.json.nextCursor}`)
    expect(idOrder.status).toBe(400)
  })

  it("answers bad where and order arguments with isError naming the field, on both MCP eras", async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ where: { bogus: "x" } }, /where\.bogus: is not a field of articles/],
      [{ where: { status: 3 } }, /where\.status: Expected "draft" \| "published", actual 3/],
      [{ where: { title: 5 } }, /where\.title: Expected string, actual 5/],
      [{ where: { tags: "x" } }, /where\.tags: cannot be filtered/],
      [{ order: "nope" }, /order: "nope" is not an order of articles/],
      [{ where: "status=draft" }, /where/]
    ]
    for (const [args, message] of cases) {
      const legacy = await callTool(server.url, "articles_list", args)
      expect(legacy.isError, JSON.stringify(args)).toBe(true)
      expect(legacy.content[0].text).toMatch(message)
      const modern = (await modernCall(server.url, "articles_list", args)).json.result
      expect(modern.isError).toBe(true)
      expect(modern.content[0].text).toBe(legacy.content[0].text)
    }
  })

  it("advertises where and order in the list tool's inputSchema, from the catalog", async () => {
    const tools = (await rpc(server.url, "tools/list")).json.result.tools
    const list = tools.find((t: any) => t.name === "articles_list")
    expect(Object.keys(list.inputSchema.properties.where.properties)).toEqual(["title", "body", "status"])
    // A value of the field's own schema, or operators on it (a literal field ranges over its own values).
    const status = { type: "string", enum: ["draft", "published"] }
    expect(list.inputSchema.properties.where.properties.status).toEqual({
      anyOf: [status, {
        type: "object",
        properties: { gt: status, gte: status, lt: status, lte: status, in: { type: "array", items: status, minItems: 1, maxItems: 100, description: "any of these values" } },
        additionalProperties: false,
        minProperties: 1
      }]
    })
    expect(list.inputSchema.properties.where.additionalProperties).toBe(false)
    expect(list.inputSchema.properties.order.enum).toEqual(["id", "-id", "title", "-title", "body", "-body", "status", "-status"])
  })
})

describe("fields named like reserved query names", () => {
  // A type whose fields are called order and limit: `where.<field>` filters them, `order=<field>` sorts by one.
  const app = defineApp({
    name: "odd",
    entities: {
      items: entity({ fields: { order: Schema.Int, limit: Schema.Boolean, cursor: Schema.optional(Schema.String) } })
    }
  })
  let server: Server
  beforeAll(async () => {
    server = await startServer(app)
    for (const [order, limit] of [[3, true], [1, false], [2, true], [3, false]] as const) {
      await http(`${server.url}/api/items`, { method: "POST", body: { order, limit } })
    }
  })
  afterAll(async () => {
    await server.close()
  })

  it("filters them with where.<field>, and orders by them", async () => {
    const byOrder = await http(`${server.url}/api/items?where.order=3`)
    expect(byOrder.status).toBe(200)
    expect(byOrder.json.items.map((r: any) => r.id)).toEqual(["1", "4"])
    const both = await http(`${server.url}/api/items?where.order=3&where.limit=false&limit=10`)
    expect(both.json.items.map((r: any) => r.id)).toEqual(["4"])
    const sorted = await http(`${server.url}/api/items?order=-order&where.limit=true`)
    expect(sorted.json.items.map((r: any) => [r.id, r.order])).toEqual([["1", 3], ["3", 2]])
    const badNumber = await http(`${server.url}/api/items?where.order=three`)
    expect(badNumber.status).toBe(400)
    expect(badNumber.json.issues[0]).toEqual({ path: ["order"], message: 'Expected a number, actual "three"' })
    const badInt = await http(`${server.url}/api/items?where.order=1.5`)
    expect(badInt.status).toBe(400)
    expect(badInt.json.issues[0].path).toEqual(["order"])
    const badBoolean = await http(`${server.url}/api/items?where.limit=yes`)
    expect(badBoolean.json.issues[0]).toEqual({ path: ["limit"], message: 'Expected true or false, actual "yes"' })
    const mcp = await callTool(server.url, "items_list", { where: { order: 3, limit: false } })
    expect(mcp.structuredContent.items.map((r: any) => r.id)).toEqual(["4"])
  })
})
