/**
 * The live console, end to end:
 *  - `GET /api/_events`, the event log as SSE, over real HTTP: replay then live with no gap or duplicate,
 *    Last-Event-ID, bounded readers, shutdown;
 *  - the page itself in real headless Chromium (Debian's `chromium`, driven by playwright-core; never a
 *    browser download): an MCP `set_price` shows up in the tail and in the table without a reload; a view being
 *    folded again shows as refolding, then its value once it goes live.
 *
 * The screenshot goes to a temp file, or to docs/console.png with WO_UPDATE_SCREENSHOT=1 (so that a test run
 * does not rewrite a committed image every time).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Layer, Schema } from "effect"
import { defineApp, view } from "../../src/domain/catalog.ts"
import { chromium, type BrowserContext } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LogFaults } from "../../testkit/log-faults.ts"
import { callTool, MCP_HEADERS, openSession, rpc } from "../../testkit/legacy-client.ts"
import { openSse, type SseConnection } from "../../testkit/sse.ts"
import { apps, http, ROOT, startServer, tempDir } from "../../testkit/server.ts"
import { startGatedRefold } from "../../testkit/gated-refold.ts"
import { writeProducts } from "../../bench/lib/row-writer.ts"
import { keyedTasks } from "../../testkit/keyed-tasks.ts"

// Functions passed to page.evaluate run in the browser; the test program itself has no DOM types.
declare const window: any, document: any, sessionStorage: any

type Server = Awaited<ReturnType<typeof startServer>>

const createProduct = async (url: string, name: string, price: number, currency = "USD") => {
  const res = await http(`${url}/api/products`, { method: "POST", body: { name, price, currency } })
  expect(res.status).toBe(201)
  return res.json as { id: string; version: number }
}
const setPrice = (url: string, id: string, price: number) => http(`${url}/api/products/${id}/set_price`, { method: "POST", body: { price } })

/**
 * The bound on every wait for the page or a stream to show something: generous, since headless Chromium beside a
 * loaded machine's other work can take seconds to render; a wait ends as soon as its condition holds.
 */
const WAIT_MS = 30_000

/** Reads `count` events, returning their seqs (and failing on a timeout). */
const readSeqs = async (stream: SseConnection, count: number, timeoutMs = WAIT_MS) => {
  const seqs: Array<number> = []
  while (seqs.length < count) {
    const m = await stream.next(timeoutMs)
    if (m === undefined) throw new Error(`the stream ended or stalled after ${seqs.length} of ${count} events`)
    const event = JSON.parse(m.data ?? "")
    expect(m.id).toBe(String(event.seq))
    seqs.push(event.seq)
  }
  return seqs
}
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

describe("GET /api/_events: the event log as SSE", () => {
  let server: Server
  beforeAll(async () => {
    server = await startServer(apps.pricing)
  })
  afterAll(() => server.close())

  it("replays from `from`, then follows live, each event once, with its seq as the SSE id", async () => {
    const a = await createProduct(server.url, "Lamp", 10)
    await createProduct(server.url, "Mug", 4)
    const stream = await openSse(`${server.url}/api/_events?from=1`)
    expect(stream.status).toBe(200)
    expect(stream.headers["content-type"]).toBe("text/event-stream")
    const first = await stream.next()
    expect(JSON.parse(first?.data ?? "")).toMatchObject({ seq: 1, type: "products", id: a.id, version: 1, kind: "created", data: { name: "Lamp", price: 10, currency: "USD" } })
    expect(await readSeqs(stream, 1)).toEqual([2])
    await setPrice(server.url, a.id, 12)
    const live = JSON.parse((await stream.next())?.data ?? "")
    expect(live).toMatchObject({ seq: 3, kind: "invoked", method: "set_price", version: 2, data: { price: 12 } })
    expect(await stream.next(300)).toBeUndefined() // nothing twice
    stream.close()
  })

  it("resumes after Last-Event-ID, which wins over `from`; rejects a bad position", async () => {
    const stream = await openSse(`${server.url}/api/_events?from=1`, { headers: { "last-event-id": "2" } })
    expect(await readSeqs(stream, 1)).toEqual([3])
    stream.close()
    const bad = await http(`${server.url}/api/_events?from=-4`)
    expect(bad.status).toBe(400)
    expect(bad.json.error).toBe("ValidationFailed")
    expect((await http(`${server.url}/api/_events`, { method: "POST", body: {} })).status).toBe(405)
  })

  it("has no gap or duplicate between replay and live while writes keep landing", async () => {
    let writing = true
    const writer = (async () => {
      let n = 0
      while (writing) await createProduct(server.url, `p${n++}`, 1 + n)
    })()
    const streams = []
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setTimeout(r, 15))
      streams.push(await openSse(`${server.url}/api/_events?from=1`))
    }
    await new Promise((r) => setTimeout(r, 100))
    writing = false
    await writer
    const head = (await http(`${server.url}/api/_rows`)).json.seq as number
    for (const stream of streams) {
      expect(await readSeqs(stream, head)).toEqual(range(1, head))
      expect(await stream.next(200)).toBeUndefined()
      stream.close()
    }
  })

  it("ends the tails at shutdown instead of holding it up", async () => {
    const own = await startServer(apps.pricing)
    const stream = await openSse(`${own.url}/api/_events`)
    const started = Date.now()
    await own.close()
    expect(Date.now() - started).toBeLessThan(3000) // the edge's grace period is 10 s
    expect(await stream.next(1000)).toBeUndefined()
    expect(stream.ended()).toBe(true)
  })
})

describe("GET /api/_events: bounded readers", () => {
  it("replays a history far longer than the buffer, then goes live, without closing", async () => {
    const server = await startServer(apps.pricing, { streamBuffer: 8 })
    try {
      for (let i = 0; i < 60; i++) await createProduct(server.url, `p${i}`, 1 + i)
      const stream = await openSse(`${server.url}/api/_events?from=1`)
      expect(await readSeqs(stream, 60)).toEqual(range(1, 60))
      await createProduct(server.url, "live", 1)
      expect(await readSeqs(stream, 1)).toEqual([61])
      stream.close()
    } finally {
      await server.close()
    }
  })

  it("closes a reader that falls behind; it resumes from the log with Last-Event-ID, missing nothing", async () => {
    // A disk that takes 20 ms per sync makes the burst below commit in one or two batches, each of which
    // is delivered at once: far more than the 8 the reader may have buffered.
    const slowDisk = Layer.succeed(LogFaults, { beforeWrite: () => Effect.sleep("20 millis") })
    const server = await startServer(apps.pricing, { streamBuffer: 8 }, slowDisk)
    try {
      const stream = await openSse(`${server.url}/api/_events?from=1`, { comments: true })
      await Promise.all(Array.from({ length: 40 }, (_, i) => createProduct(server.url, `p${i}`, 1 + i)))
      const seen: Array<number> = []
      let closing: string | undefined
      for (;;) {
        const m = await stream.next(WAIT_MS) // until it ends: undefined at once then
        if (m === undefined) break
        if (m.comment !== undefined) closing = m.comment
        else seen.push(Number(m.id))
      }
      expect(stream.ended()).toBe(true)
      expect(closing).toMatch(/closed \(overflow\)/)
      expect(seen.length).toBeLessThan(40)
      expect(seen).toEqual(range(1, seen.length))
      const resumed = await openSse(`${server.url}/api/_events`, { headers: { "last-event-id": String(seen.length) } })
      expect(await readSeqs(resumed, 40 - seen.length)).toEqual(range(seen.length + 1, 40))
      resumed.close()
    } finally {
      await server.close()
    }
  })
})

describe("the console's JSON views", () => {
  it("lists the catalog with REST routes and the generated tool names, and the connected agents", async () => {
    const server = await startServer(apps.pricing)
    try {
      const catalog = (await http(`${server.url}/api/_catalog`)).json
      const products = catalog.types[0]
      expect(products.fields).toEqual([
        { name: "name", required: true, summary: "string, min 1" },
        { name: "price", required: true, summary: "number > 0" },
        { name: "currency", required: true, summary: '"USD" | "EUR"' }
      ])
      const tools = (await rpc(server.url, "tools/list")).json.result.tools.map((t: { name: string }) => t.name)
      expect(products.operations.filter((o: { tool?: string }) => o.tool).map((o: { tool: string }) => o.tool)).toEqual(tools.filter((t: string) => t.startsWith("products_")))
      expect(products.operations.find((o: { name: string }) => o.name === "set_price")).toMatchObject({
        kind: "method",
        rest: "POST /api/products/:id/set_price",
        tool: "products_set_price"
      })
      expect(products.operations.find((o: { name: string }) => o.name === "delete")).toEqual({ name: "delete", kind: "crud" })
      expect(catalog.views).toEqual([{
        name: "products_by_currency",
        description: "How many products are priced in each currency.",
        on: { products: ["created", "updated", "deleted"] },
        rest: "GET /api/_views/products_by_currency",
        resource: "wo://views/products_by_currency",
        tool: "view_products_by_currency"
      }])
      expect(tools).toContain("view_products_by_currency")

      const session = await openSession(server.url)
      await http(`${server.url}/mcp`, {
        method: "POST",
        headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
        body: { jsonrpc: "2.0", id: 1, method: "resources/subscribe", params: { uri: "wo://products/1" } }
      })
      const agents = (await http(`${server.url}/api/_agents`)).json
      const shown = agents.sessions.find((s: { subscriptions: Array<string> }) => s.subscriptions.length > 0)
      expect(shown).toMatchObject({ version: "2025-11-25", streaming: false, subscriptions: ["wo://products/1"] })
      expect(shown.id).toBe(`${session.slice(0, 8)}…`) // never the whole credential
      expect(agents.listens).toEqual([])
    } finally {
      await server.close()
    }
  })

  it("serves the page with a same-origin content policy", async () => {
    const server = await startServer(apps.pricing)
    try {
      const page = await http(`${server.url}/`)
      expect(page.status).toBe(200)
      expect(page.headers.get("content-type")).toMatch(/^text\/html/)
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
      expect(page.headers.get("access-control-allow-origin")).toBeNull()
      const script = await http(`${server.url}/console/console.js`)
      expect(script.status).toBe(200)
      expect(script.text).toContain("/api/_events")
      expect((await http(`${server.url}/console/nope.js`)).status).toBe(404)
    } finally {
      await server.close()
    }
  })
})

// ---------------------------------------------------------------------------------------------------------
// The page in a real browser.

const CHROMIUM = "/usr/bin/chromium"
const hasChromium = fs.existsSync(CHROMIUM)
if (!hasChromium) {
  const bar = "!".repeat(96)
  console.warn(
    `\n${bar}\n!! SKIPPED: the console's browser test. ${CHROMIUM} is missing: install Debian's chromium package\n` +
      `!! (apt-get install -y chromium). The console page itself is NOT tested in this run.\n${bar}\n`
  )
}

/** A file of this run's own: several runs of the suite on one machine would otherwise write (and measure) one file. */
const screenshotPath = () => process.env.WO_UPDATE_SCREENSHOT === "1" ? path.join(ROOT, "docs/console.png") : path.join(tempDir("wo-console-shot-"), "console.png")

const LISTEN_META = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} }

describe.skipIf(!hasChromium)("the console in headless Chromium", () => {
  let server: Server
  let browser: BrowserContext
  let profile: string
  const open: Array<SseConnection> = []
  beforeAll(async () => {
    server = await startServer(apps.pricing)
    // A fresh profile in a temp dir (Playwright passes it as --user-data-dir).
    profile = tempDir("wo-chromium-")
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
      viewport: { width: 1440, height: 900 },
      deviceScaleFactor: 2
    })
  })
  afterAll(async () => {
    for (const s of open) s.close()
    await browser?.close()
    await server?.close()
    if (profile) fs.rmSync(profile, { recursive: true, force: true })
  })

  it("shows an MCP set_price in the tail and in the table, live, without a reload", async () => {
    const lamp = await createProduct(server.url, "Desk lamp", 19.99)
    await createProduct(server.url, "Notebook", 4.5, "EUR")
    await createProduct(server.url, "Coffee mug", 8)
    await setPrice(server.url, "2", 3.9)

    // Agents for the panel: a legacy session streaming its subscription, and a modern listen stream.
    const session = await openSession(server.url)
    await http(`${server.url}/mcp`, {
      method: "POST",
      headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
      body: { jsonrpc: "2.0", id: 1, method: "resources/subscribe", params: { uri: `wo://products/${lamp.id}` } }
    })
    open.push(await openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } }))
    open.push(await openSse(`${server.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28", "mcp-method": "subscriptions/listen" },
      body: JSON.stringify({ jsonrpc: "2.0", id: "price-watch", method: "subscriptions/listen", params: { _meta: LISTEN_META, notifications: { resourceSubscriptions: [`wo://products/${lamp.id}`, "wo://products/3"], resourcesListChanged: true } } })
    }))

    const page = browser.pages()[0] ?? (await browser.newPage())
    const errors: Array<string> = []
    page.on("pageerror", (e) => errors.push(e.message))
    page.on("console", (m) => void (m.type() === "error" && errors.push(m.text())))
    let navigations = 0
    page.on("framenavigated", (f) => void (f === page.mainFrame() && navigations++))
    await page.goto(`${server.url}/`)
    await page.locator('#status[data-state="live"]').waitFor({ timeout: WAIT_MS })
    const price = page.locator(`table.rows tr[data-id="${lamp.id}"] td[data-column="price"]`)
    expect(await price.textContent()).toBe("19.99")
    await page.locator("table.events tr[data-seq='4']").waitFor()
    await page.locator("#agents code", { hasText: `wo://products/${lamp.id}` }).first().waitFor()
    await page.locator("#agents code", { hasText: "price-watch" }).waitFor()
    await page.evaluate(() => ((window as unknown as { marker: string }).marker = "same page"))

    const result = await callTool(server.url, "products_set_price", { id: lamp.id, price: 14.5 })
    expect(result.isError).toBeFalsy()

    const tailRow = page.locator("table.events tr[data-seq='5']")
    await tailRow.waitFor({ timeout: WAIT_MS })
    expect(await tailRow.locator("td.diff").textContent()).toBe("price 19.99 → 14.5")
    expect(await tailRow.textContent()).toContain(`products/${lamp.id}`)
    expect(await tailRow.textContent()).toContain("set_price")
    // Who made it: the legacy client as its initialize named itself (its session in the tooltip).
    expect(await tailRow.locator("td.actor").textContent()).toBe("test 1")
    expect(await tailRow.locator("td.actor").getAttribute("title")).toMatch(/^client MCP test 1 \(session [\w-]+\)$/)
    expect(await page.locator("table.events tr[data-seq='4'] td.actor").textContent()).toBe("rest")
    await page.waitForFunction(
      (id) => document.querySelector(`table.rows tr[data-id="${id}"] td[data-column="price"]`)?.textContent === "14.5",
      lamp.id,
      { timeout: WAIT_MS }
    )
    expect(await page.locator(`table.rows tr[data-id="${lamp.id}"] td[data-column="version"]`).textContent()).toBe("2")
    expect(await page.evaluate(() => (window as unknown as { marker?: string }).marker)).toBe("same page")
    expect(navigations).toBe(1)
    expect(await page.locator("#catalog code.tool", { hasText: "products_set_price" }).count()).toBe(1)
    expect(errors).toEqual([])

    // The tool call opened a second legacy session: the agents panel picks it up on its next poll.
    await page.locator("#agents table.agents").first().locator("tbody tr").nth(1).waitFor({ timeout: WAIT_MS })
    const SCREENSHOT = screenshotPath()
    fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true })
    // Animations finished: the picture shows the page at rest, the same every run.
    await page.screenshot({ path: SCREENSHOT, fullPage: true, animations: "disabled" })
    expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(20_000)
    console.log(`console screenshot: ${SCREENSHOT}`)
  })

  it("shows each view's value, and follows it live as writes land", async () => {
    const page = await browser.newPage()
    try {
      await page.goto(`${server.url}/`)
      await page.locator('#status[data-state="live"]').waitFor({ timeout: WAIT_MS })
      const before = (await http(`${server.url}/api/_views/products_by_currency`)).json.value
      const value = page.locator('#views pre[data-view="products_by_currency"]')
      await page.waitForFunction((text) => document.querySelector('#views pre[data-view="products_by_currency"]')?.textContent === text,
        JSON.stringify(before, null, 2), { timeout: WAIT_MS })
      expect(await page.locator("#views code.tool").textContent()).toBe("view_products_by_currency")
      await createProduct(server.url, "Teapot", 30, "EUR")
      const after = JSON.stringify({ ...before, EUR: before.EUR + 1 }, null, 2)
      await page.waitForFunction((text) => document.querySelector('#views pre[data-view="products_by_currency"]')?.textContent === text, after, { timeout: WAIT_MS })
      expect(await value.textContent()).toBe(after)
    } finally {
      await page.close()
    }
  })

  it("shows a changed view's older value, frozen, while its new declaration is folded, and why that fold failed", async () => {
    // The first start folds products_by_currency and stores it; the second declares it again, with an evolve that throws.
    const dir = tempDir("wo-console-blue-green-")
    await writeProducts(dir, 300, (i) => ({ name: `item-${i}`, price: i, currency: i % 3 === 0 ? "EUR" : "USD" }))
    const first = await startServer(apps.pricing, { dataDir: dir })
    let older: unknown
    try {
      for (let polls = 0; polls < 500; polls++) {
        const res = await http(`${first.url}/api/_views/products_by_currency`)
        if (res.status === 200) { older = res.json.value; break }
        await new Promise((r) => setTimeout(r, 20))
      }
    } finally {
      await first.close()
    }
    expect(older).toEqual({ USD: 200, EUR: 100 })
    const throwing = defineApp({
      ...apps.pricing,
      views: {
        products_by_currency: view({
          schema: Schema.Struct({ USD: Schema.Int, EUR: Schema.Int }),
          initial: { USD: 0, EUR: 0 },
          version: 2,
          on: { products: ["created"] },
          evolve: (c, { after }) => {
            if (after?.name === "item-2") throw new Error("no item-2 in this version")
            return { ...c, [String(after!.currency)]: c[String(after!.currency) as "USD" | "EUR"] + 1 }
          }
        })
      }
    })
    const gated = await startGatedRefold(throwing, dir)
    const page = await browser.newPage()
    try {
      await page.goto(`${gated.url}/`)
      await page.locator('#status[data-state="live"]').waitFor({ timeout: WAIT_MS })
      const value = page.locator('#views pre[data-view="products_by_currency"]')
      const note = page.locator('#views p[data-view-stale="products_by_currency"]')
      await note.waitFor({ state: "visible", timeout: WAIT_MS })
      expect(await value.textContent()).toBe(JSON.stringify(older, null, 2))
      expect(await note.textContent()).toMatch(/^version [0-9a-f]{16} is being folded; showing version [0-9a-f]{16}, frozen at seq 300, until it has caught up$/)
      gated.open()
      await page.locator('#views p.view-stale.failed[data-view-stale="products_by_currency"]').waitFor({ timeout: WAIT_MS })
      expect(await note.textContent()).toMatch(
        /^new version [0-9a-f]{16} failed: view products_by_currency failed at event 2 \(products\/2 created\): no item-2 in this version; showing version [0-9a-f]{16}, frozen at seq 300, until a restart$/)
      expect(await value.textContent()).toBe(JSON.stringify(older, null, 2))
    } finally {
      await page.close()
      await gated.close()
    }
  })

  it("shows a view being folded again as refolding, with why, then its value once it goes live (with no event to announce it)", async () => {
    // A store written directly has no view records: products_by_currency is folded in the background, held at a gate.
    const dir = tempDir("wo-console-refold-")
    await writeProducts(dir, 300, (i) => ({ name: `item-${i}`, price: i, currency: i % 3 === 0 ? "EUR" : "USD" }))
    const gated = await startGatedRefold(apps.pricing, dir)
    const page = await browser.newPage()
    try {
      await page.goto(`${gated.url}/`)
      await page.locator('#status[data-state="live"]').waitFor({ timeout: WAIT_MS })
      const value = page.locator('#views pre[data-view="products_by_currency"]')
      await page.locator('#views pre.refolding[data-view="products_by_currency"]').waitFor({ timeout: WAIT_MS })
      expect(await value.textContent()).toBe("refolding: view products_by_currency is being folded again from the log (it has no stored value); it is served once the fold is done: retry shortly")
      expect(await page.locator("#views .view-seq").textContent()).toBe("refolding")
      gated.open()
      await page.locator('#views pre.view-value:not(.refolding)[data-view="products_by_currency"]').waitFor({ timeout: WAIT_MS })
      const rest = await http(`${gated.url}/api/_views/products_by_currency`)
      expect(rest.status).toBe(200)
      expect(await value.textContent()).toBe(JSON.stringify(rest.json.value, null, 2))
      expect(await page.locator("#views .view-seq").textContent()).toBe(`last changed at seq ${rest.json.seq}`)
    } finally {
      await page.close()
      await gated.close()
    }
  })

  it("shows a keyed view as its first entries, follows them live, and looks one entry up by key", async () => {
    const keyed = await startServer(keyedTasks())
    const page = await browser.newPage()
    const add = (owner: string, title: string) => http(`${keyed.url}/api/tasks`, { method: "POST", body: { owner, title, done: false } })
    try {
      await add("ann", "a1")
      await add("bob", "b1")
      await page.goto(`${keyed.url}/`)
      await page.locator('#status[data-state="live"]').waitFor({ timeout: WAIT_MS })
      const entries = '#views pre.view-value[data-view="open_by_owner"]'
      await page.waitForFunction((sel) => document.querySelector(sel)?.textContent === 'ann  {"open":1,"titles":["a1"]}\nbob  {"open":1,"titles":["b1"]}', entries, { timeout: WAIT_MS })
      expect(await page.locator("#views code.tool").textContent()).toBe("view_open_by_owner, view_open_by_owner_list")
      expect(await page.locator("#views code.uri").textContent()).toBe("wo://views/open_by_owner/{key}")
      await add("ann", "a2")
      await page.waitForFunction((sel) => document.querySelector(sel)?.textContent?.startsWith('ann  {"open":2,"titles":["a1","a2"]}'), entries, { timeout: WAIT_MS })
      await page.locator('#views input.view-key[data-view="open_by_owner"]').fill("bob")
      await page.locator("#views form.view-lookup button[type=submit]").click()
      const found = page.locator('#views pre.view-entry[data-view="open_by_owner"]')
      await page.waitForFunction(() => document.querySelector('#views pre.view-entry[data-view="open_by_owner"]')?.textContent !== "", undefined, { timeout: WAIT_MS })
      expect(JSON.parse((await found.textContent())!)).toEqual({ open: 1, titles: ["b1"] })
      await page.locator('#views input.view-key[data-view="open_by_owner"]').fill("nobody")
      await page.locator("#views form.view-lookup button[type=submit]").click()
      await page.waitForFunction(() => document.querySelector('#views pre.view-entry[data-view="open_by_owner"]')?.textContent === 'no entry under the key "nobody"', undefined, { timeout: WAIT_MS })
    } finally {
      await page.close()
      await keyed.close()
    }
  })

  it("with WO_AUTH_TOKEN: asks for the token, then sends it as a Bearer header, never showing it", async () => {
    const guarded = await startServer(apps.pricing, { authToken: "s3cret" })
    const page = await browser.newPage()
    try {
      const sent = new Map<string, string | undefined>()
      page.on("request", (r) => void sent.set(new URL(r.url()).pathname, r.headers()["authorization"]))
      // The page itself is public (it holds no data); every /api request is refused without the token.
      await page.goto(`${guarded.url}/`)
      await page.locator('#status[data-state="unauthorized"]').waitFor({ timeout: WAIT_MS })
      expect(await page.locator("#token-form").isVisible()).toBe(true)
      await page.locator("#token-input").fill("s3cret")
      await page.locator("#token-form button[type=submit]").click()
      await page.locator('#status[data-state="live"]').waitFor({ timeout: WAIT_MS })
      for (const p of ["/api/_catalog", "/api/_rows", "/api/_events", "/api/_agents", "/api/_views"]) expect(sent.get(p)).toBe("Bearer s3cret")

      // Opened with ?token=, it takes the token and removes it from the address bar.
      await page.evaluate(() => sessionStorage.clear())
      await page.goto(`${guarded.url}/?token=s3cret`)
      await page.locator('#status[data-state="live"]').waitFor({ timeout: WAIT_MS })
      expect(new URL(page.url()).search).toBe("")
      // The snippets refer to the token, never contain it.
      const connect = await page.locator("#connect").textContent()
      expect(connect).toContain("$WO_AUTH_TOKEN")
      expect(connect).not.toContain("s3cret")
    } finally {
      await page.close()
      await guarded.close()
    }
  })
})
