/**
 * Bounded errors and input rules that say what they do, each against a real server (in-process,
 * port 0, a temp classic-level dir):
 *  1. a bad body's error is bounded: at most 20 issues and the count of the others, on REST and MCP alike, and
 *     answering it costs about what a good body of the same size costs (server CPU, not wall clock);
 *  2. MCP `where` keys go through the input rules REST applies (`__proto__`, `constructor`), both eras;
 *  3. a malformed percent-escape in a list's query string or a live-query URI is refused, naming the parameter;
 *  4. /healthz answers `{"status":"ok"}`;
 *  5. tampered row cursors are refused (REST 400, an MCP isError), never served as a page.
 * Bodies are JSON text: JSON.stringify cannot write an own `__proto__`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MAX_ISSUES } from "../../src/domain/errors.ts"
import { openSession, rawMcp, rpc } from "../../testkit/legacy-client.ts"
import { MODERN_META, modernHeaders } from "../../testkit/modern-client.ts"
import { apps, http, rawRequest, startServer } from "../../testkit/server.ts"

type Server = Awaited<ReturnType<typeof startServer>>

const JSON_TYPE = { "content-type": "application/json" }
const ERROR_BODY_LIMIT = 64 * 1024
const ARTICLE = `"title":"t","body":"b","status":"draft","tags":["a"],"author":{"name":"A"}`

let blog: Server
let session: string

beforeAll(async () => {
  blog = await startServer(apps.blog)
  session = await openSession(blog.url)
})
afterAll(async () => {
  await blog?.close()
})

const post = (path: string, body: string) => rawRequest(`${blog.url}${path}`, { method: "POST", headers: JSON_TYPE, body })

/** `"x00000000000":0,...`: `count` keys no article has, 17 bytes each. */
const unknownKeys = (count: number) => Array.from({ length: count }, (_, i) => `"x${String(i).padStart(11, "0")}":0`).join(",")

let nextId = 1
const toolCall = (tool: string, argsText: string, meta?: object) =>
  `{"jsonrpc":"2.0","id":${nextId++},"method":"tools/call","params":{"name":${JSON.stringify(tool)},"arguments":${argsText}` +
  `${meta === undefined ? "" : `,"_meta":${JSON.stringify(meta)}`}}}`

/** One tools/call in each era, arguments as JSON text. */
const callBothEras = async (tool: string, argsText: string) => ({
  legacy: await rawMcp(blog.url, toolCall(tool, argsText), { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }),
  modern: await rawRequest(`${blog.url}/mcp`, { method: "POST", headers: modernHeaders("tools/call", tool), body: toolCall(tool, argsText, MODERN_META) })
})

const isErrorText = (answer: { status: number; text: string; json: any }) => {
  expect(answer.status, answer.text.slice(0, 300)).toBe(200)
  expect(answer.json.result?.isError, answer.text.slice(0, 300)).toBe(true)
  return answer.json.result.content[0].text as string
}

describe("error bodies are bounded: at most 20 issues and a count of the others", () => {
  it("REST: 200,000 unknown keys (3.2 MB) get a 400 under 64 KiB that counts the 199,980 left out", async () => {
    const body = `{${ARTICLE},${unknownKeys(200_000)}}`
    expect(body.length).toBeGreaterThan(3_000_000)
    const res = await post("/api/articles", body)
    expect(res.status).toBe(400)
    expect(res.text.length).toBeLessThanOrEqual(ERROR_BODY_LIMIT)
    expect(res.json.error).toBe("ValidationFailed")
    expect(res.json.issues).toHaveLength(MAX_ISSUES)
    expect(res.json.issues[0]).toEqual({ path: ["x00000000000"], message: expect.stringContaining("is unexpected") })
    expect(res.json.omitted).toBe(200_000 - MAX_ISSUES)
    expect(res.json.message).toContain("… and 199,980 more")
  })

  it("REST: the unknown keys after the first 20 are counted unparsed; known fields after them, escaped too, are still decoded and counted", async () => {
    const head = `"title":"t","body":"b","tags":["a"],"author":{"name":"A"}`
    const res = await post("/api/articles", `{${head},${unknownKeys(200_000)},"st\\u0061tus":5}`)
    expect(res.status).toBe(400)
    expect(res.json.issues).toHaveLength(MAX_ISSUES)
    expect(res.json.issues.every((i: { message: string }) => i.message.includes("is unexpected"))).toBe(true)
    expect(res.json.omitted).toBe(200_000 - MAX_ISSUES + 1) // and status: Expected "draft" | ..., actual 5
    // The input rules come first, as without the cut: a reserved key is the answer, the unknown keys are not counted.
    const reserved = await post("/api/articles", `{${ARTICLE},${unknownKeys(200_000)},"__proto__":{}}`)
    expect(reserved.status).toBe(400)
    expect(reserved.json.issues).toEqual([{ path: ["__proto__"], message: "is a reserved key, not allowed in input" }])
    expect(reserved.json.omitted).toBeUndefined()
  })

  it("REST: 800,000 wrong-typed tags (2.4 MB) get a 400 under 64 KiB that counts the 799,980 left out", async () => {
    const body = `{"title":"t","body":"b","status":"draft","author":{"name":"A"},"tags":[${Array(800_000).fill("1").join(",")}]}`
    const res = await post("/api/articles", body)
    expect(res.status).toBe(400)
    expect(res.text.length).toBeLessThanOrEqual(ERROR_BODY_LIMIT)
    expect(res.json.issues).toHaveLength(MAX_ISSUES)
    expect(res.json.issues[0]).toEqual({ path: ["tags", "0"], message: "Expected string, actual 1" })
    expect(res.json.omitted).toBe(800_000 - MAX_ISSUES)
    expect(res.json.message).toContain("… and 799,980 more")
  })

  it("REST: a PATCH of 200,000 unknown keys, and one issue quoting a megabyte, stay bounded too", async () => {
    const created = await post("/api/articles", `{${ARTICLE}}`)
    const patch = await rawRequest(`${blog.url}/api/articles/${created.json.id}`, { method: "PATCH", headers: JSON_TYPE, body: `{${unknownKeys(200_000)}}` })
    expect(patch.status).toBe(400)
    expect(patch.text.length).toBeLessThanOrEqual(ERROR_BODY_LIMIT)
    expect(patch.json.omitted).toBe(200_000 - MAX_ISSUES)
    const longKey = `{${ARTICLE},"${"x".repeat(1_000_000)}":1}`
    const long = await post("/api/articles", longKey)
    expect(long.status).toBe(400)
    expect(long.text.length).toBeLessThanOrEqual(ERROR_BODY_LIMIT)
    expect(long.json.issues).toHaveLength(1)
  })

  it("MCP: 3.6 MB of unknown arguments get an isError under 64 KiB with the count, both eras, the REST message", async () => {
    const args = `{${ARTICLE},${unknownKeys(215_000)}}`
    expect(args.length).toBeGreaterThan(3_600_000)
    const rest = await post("/api/articles", args)
    for (const [era, answer] of Object.entries(await callBothEras("articles_create", args))) {
      expect(answer.text.length, era).toBeLessThanOrEqual(ERROR_BODY_LIMIT)
      const text = isErrorText(answer)
      expect(text, era).toContain("… and 214,980 more")
      expect(text, era).toBe(rest.json.message)
    }
  })

  it("MCP: a read tool's unknown arguments are bounded as well", async () => {
    for (const [era, answer] of Object.entries(await callBothEras("articles_get", `{"id":"1",${unknownKeys(50_000)}}`))) {
      expect(answer.text.length, era).toBeLessThanOrEqual(ERROR_BODY_LIMIT)
      expect(isErrorText(answer), era).toContain("is unexpected")
    }
  })

  it("answering a 3 MB bad body costs the server at most 3x the CPU of a 3 MB good one", async () => {
    // Same size and shape: 800,000 tags, strings (accepted and written) or numbers (refused). And 200,000
    // unknown keys. CPU time of this process (the server runs in it): robust where wall-clock is not.
    const tags = (item: string) => `{"title":"t","body":"b","status":"draft","author":{"name":"A"},"tags":[${Array(800_000).fill(item).join(",")}]}`
    const good = tags(`"a"`)
    const badTags = tags("1")
    const badKeys = `{${ARTICLE},${unknownKeys(200_000)}}`
    const cpu = async (body: string, status: number) => {
      const start = process.cpuUsage()
      const res = await post("/api/articles", body)
      const used = process.cpuUsage(start)
      expect(res.status).toBe(status)
      return used.user + used.system
    }
    const goodCpu = Math.min(await cpu(good, 201), await cpu(good, 201))
    const badTagsCpu = Math.min(await cpu(badTags, 400), await cpu(badTags, 400))
    const badKeysCpu = Math.min(await cpu(badKeys, 400), await cpu(badKeys, 400))
    console.log(`server CPU per 3 MB body: good ${goodCpu} µs, 800,000 wrong tags ${badTagsCpu} µs, 200,000 unknown keys ${badKeysCpu} µs`)
    expect(badTagsCpu, `bad tags ${badTagsCpu} µs vs good ${goodCpu} µs`).toBeLessThanOrEqual(3 * goodCpu)
    expect(badKeysCpu, `unknown keys ${badKeysCpu} µs vs good ${goodCpu} µs`).toBeLessThanOrEqual(3 * goodCpu)
  })
})

describe("MCP where keys go through the input rules REST applies", () => {
  it("refuses __proto__ and constructor in articles_list where, naming the key, both eras, as REST does", async () => {
    await post("/api/articles", `{${ARTICLE}}`)
    for (const key of ["__proto__", "constructor"]) {
      const rest = await http(`${blog.url}/api/articles?${key}=1`)
      expect(rest.status, key).toBe(400)
      expect(rest.json.issues).toEqual([{ path: [key], message: "is a reserved key, not allowed in input" }])
      for (const [era, answer] of Object.entries(await callBothEras("articles_list", `{"where":{"${key}":{"status":"draft"}}}`))) {
        expect(isErrorText(answer), `${era} ${key}`).toContain(`where.${key}: is a reserved key`)
      }
    }
  })

  it("refuses a non-finite where value, as a query string's 1e400 is", async () => {
    // The price app has numbers; articles have none, so the value is checked against a string field's Schema.
    const pricing = await startServer(apps.pricing)
    try {
      const s = await openSession(pricing.url)
      const answer = await rawMcp(pricing.url, toolCall("products_list", `{"where":{"price":1e400}}`), { "mcp-session-id": s, "mcp-protocol-version": "2025-11-25" })
      expect(isErrorText(answer)).toContain("where.price: must be a finite number")
      expect((await http(`${pricing.url}/api/products?price=1e400`)).status).toBe(400)
    } finally {
      await pricing.close()
    }
  })
})

describe("malformed percent-escapes are refused, never read as U+FFFD", () => {
  it("REST: %ff, an overlong escape or a lone % in a filter gets 400 naming the parameter", async () => {
    for (const query of ["status=%ff", "status=%C0%AF", "status=100%", "where.status=%e2%82", "%ff=draft"]) {
      const res = await http(`${blog.url}/api/articles?${query}`)
      expect(res.status, query).toBe(400)
      expect(res.json.error).toBe("ValidationFailed")
      expect(res.json.issues[0].message, query).toContain("invalid percent-escape")
    }
    const named = await http(`${blog.url}/api/articles?status=%ff`)
    expect(named.json.issues[0].path).toEqual(["status"])
    // Valid escapes still work: U+FFFD itself, sent as its UTF-8 bytes, is just text that matches no status.
    expect((await http(`${blog.url}/api/articles?status=%EF%BF%BD`)).json.issues[0].message).toContain('Expected "draft" | "published"')
    expect((await http(`${blog.url}/api/articles?status=dr%61ft`)).status).toBe(200)
  })

  it("MCP: a live-query URI with %ff is refused (-32602) on subscribe and on read, naming the parameter", async () => {
    const uri = "wo://articles?status=%ff"
    const subscribe = await rpc(blog.url, "resources/subscribe", { uri })
    expect(subscribe.json.error?.code, subscribe.text).toBe(-32602)
    expect(subscribe.json.error.message).toContain("status: has an invalid percent-escape")
    const read = await rpc(blog.url, "resources/read", { uri })
    expect(read.json.error?.code, read.text).toBe(-32602)
    expect(read.json.error.message).toContain("status: has an invalid percent-escape")
  })
})

describe("/healthz", () => {
  it("answers 200 {\"status\":\"ok\"}", async () => {
    const res = await rawRequest(`${blog.url}/healthz`)
    expect(res.status).toBe(200)
    expect(res.json).toEqual({ status: "ok" })
  })
})

describe("tampered cursors are refused, never served as a page", () => {
  const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
  const rawCursor = (text: string) => Buffer.from(text).toString("base64url")

  it("REST 400 and an MCP isError for a k of \"zz\", 1e400, null, a wrong type or a missing field", async () => {
    const pricing = await startServer(apps.pricing)
    try {
      for (let i = 0; i < 3; i++) await http(`${pricing.url}/api/products`, { method: "POST", body: { name: `P${i}`, price: i + 1, currency: "EUR" } })
      const first = await http(`${pricing.url}/api/products?order=-price&limit=1`)
      const issued = JSON.parse(Buffer.from(first.json.nextCursor, "base64url").toString())
      expect(issued).toMatchObject({ t: "products", o: "-price", k: 3 })
      const tampered = [
        cursorOf({ ...issued, k: "zz" }),
        rawCursor(`{"t":"products","a":${issued.a},"o":"-price","k":1e400}`),
        cursorOf({ ...issued, k: null }), // price is required: no row has an absent price
        cursorOf({ ...issued, k: true }),
        cursorOf({ t: "products", o: "-price", k: 3 }), // no "a"
        cursorOf({ ...issued, a: "1" })
      ]
      const s = await openSession(pricing.url)
      for (const cursor of tampered) {
        const rest = await http(`${pricing.url}/api/products?order=-price&limit=1&cursor=${cursor}`)
        expect(rest.status, Buffer.from(cursor, "base64url").toString()).toBe(400)
        expect(rest.json.issues[0].path).toEqual(["cursor"])
        const tool = await rawMcp(pricing.url, toolCall("products_list", JSON.stringify({ order: "-price", limit: 1, cursor })), { "mcp-session-id": s, "mcp-protocol-version": "2025-11-25" })
        expect(isErrorText(tool)).toContain("cursor: is not a cursor this server issued")
      }
      // An ascending-id cursor carries no key; one that does was not issued here.
      const idPage = await http(`${pricing.url}/api/products?limit=1`)
      const idCursor = JSON.parse(Buffer.from(idPage.json.nextCursor, "base64url").toString())
      expect((await http(`${pricing.url}/api/products?limit=1&cursor=${cursorOf({ ...idCursor, k: "zz" })}`)).status).toBe(400)
      // The issued cursors still page.
      expect((await http(`${pricing.url}/api/products?order=-price&limit=1&cursor=${first.json.nextCursor}`)).json.items[0].price).toBe(2)
      expect((await http(`${pricing.url}/api/products?limit=1&cursor=${idPage.json.nextCursor}`)).status).toBe(200)
    } finally {
      await pricing.close()
    }
  })
})
