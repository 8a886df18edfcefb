/**
 * The console lists an app's commands across types beside its types, in real headless
 * Chromium (Debian's `chromium`, driven by playwright-core), and a lend made over REST shows up in the tail.
 */
import * as fs from "node:fs"
import { chromium, type BrowserContext } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import library from "../../examples/library/app.ts"
import { http, startServer, tempDir } from "../../testkit/server.ts"

const CHROMIUM = "/usr/bin/chromium"
const hasChromium = fs.existsSync(CHROMIUM)
if (!hasChromium) console.warn(`SKIPPED: the console's commands browser test (${CHROMIUM} is missing: apt-get install -y chromium)`)

describe.skipIf(!hasChromium)("the console of an app with commands", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  let browser: BrowserContext
  let profile: string
  beforeAll(async () => {
    server = await startServer(library)
    profile = tempDir("wo-chromium-")
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    })
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
    if (profile) fs.rmSync(profile, { recursive: true, force: true })
  })

  it("lists lend and return with their params, route and tool, and a lend's events in the tail, tagged with it", async () => {
    const page = browser.pages()[0] ?? (await browser.newPage())
    const errors: Array<string> = []
    page.on("pageerror", (e) => errors.push(e.message))
    await page.goto(`${server.url}/`)
    await page.locator('#status[data-state="live"]').waitFor({ timeout: 10_000 })

    const lend = page.locator('#catalog tr[data-command="lend"]')
    await lend.waitFor({ timeout: 10_000 })
    const cells = await lend.locator("td").allInnerTexts()
    expect(cells[0]).toContain("lend")
    expect(cells[0]).toContain("one copy leaves the shelf")
    expect(cells[1]).toMatch(/book[\s\S]*string[\s\S]*member[\s\S]*string/)
    expect(cells[2]).toBe("POST /api/_commands/lend")
    expect(cells[3]).toBe("lend")
    expect(await page.locator('#catalog tr[data-command="return"] td').nth(2).innerText()).toBe("POST /api/_commands/return")
    // The types are still there, before the commands.
    expect(await page.locator("#catalog .type-name").allInnerTexts()).toEqual(["books", "members", "loans", "commands"])

    expect((await http(`${server.url}/api/books`, { method: "POST", body: { title: "Dune", author: "Frank Herbert" } })).status).toBe(201)
    expect((await http(`${server.url}/api/books/1/add_copies`, { method: "POST", body: { n: 1 } })).status).toBe(200)
    expect((await http(`${server.url}/api/members`, { method: "POST", body: { name: "Ann" } })).status).toBe(201)
    expect((await http(`${server.url}/api/_commands/lend`, { method: "POST", body: { book: "1", member: "1" } })).status).toBe(200)
    // The lend's two events, one per entity, reach the tail.
    const tail = page.locator("#tail")
    await expect.poll(async () => (await tail.innerText()).includes("loans"), { timeout: 10_000 }).toBe(true)
    expect(await tail.innerText()).toMatch(/available 1 → 0/)
    // Each is tagged with the command that wrote it.
    expect(await tail.locator("tr", { hasText: "books/1" }).first().innerText()).toContain("by lend")
    expect(await tail.locator("tr", { hasText: "loans/1" }).first().innerText()).toContain("by lend")
    expect(await tail.locator("tr", { hasText: "members/1" }).first().innerText()).not.toContain("by ")
    expect(errors).toEqual([])
  })
})
