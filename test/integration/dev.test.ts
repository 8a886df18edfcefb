/**
 * `wo dev` as a real process, with the official MCP clients of both eras connected: an edit of app.ts reaches them
 * as list_changed and a new tool; a broken edit keeps the old app serving and prints where it broke; writes in
 * flight while the catalog swaps are all acknowledged and all kept.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ResourceListChangedNotificationSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import * as fs from "node:fs"
import * as path from "node:path"
import { chromium } from "playwright-core"
import { afterEach, describe, expect, it } from "vitest"
import { spawnWo, type Spawned } from "../../testkit/spawn.ts"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { http, tempDir } from "../../testkit/server.ts"
import { waitFor } from "../../testkit/wait.ts"

const BOUND = 30_000

const notesApp = (extra: { field?: string; method?: string; view?: string } = {}) => `
import { Schema } from "effect"
import { defineApp, entity, view } from "writeonce"

export default defineApp({
  name: "notes",
  entities: {
    notes: entity({
      fields: {
        title: Schema.String${extra.field ?? ""}
      },
      methods: {${extra.method ?? ""}}
    })
  },
  views: {${extra.view ?? ""}}
})
`

/** v2: notes gain a defaulted field, a method and a view. */
const EDITED = notesApp({
  field: `,\n        pinned: Schema.Boolean.pipe(Schema.optionalWith({ default: () => false }))`,
  method: `\n        pin: { description: "Pin the note.", params: {}, apply: () => ({ pinned: true }) }\n      `,
  view: `
    note_count: view({
      schema: Schema.Int,
      initial: 0,
      on: { notes: ["created", "deleted"] },
      evolve: (n, { after }) => (after === null ? n - 1 : n + 1)
    })
  `
})

const modernClient = async (url: string) => {
  const client = new ClientV2({ name: "dev-modern", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
  await client.connect(new TransportV2(new URL(`${url}/mcp`)))
  return client
}

const legacyClient = async (url: string) => {
  const client = new ClientV1({ name: "dev-legacy", version: "1.0.0" })
  const transport = new TransportV1(new URL(`${url}/mcp`), {
    reconnectionOptions: { initialReconnectionDelay: 50, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 20 }
  })
  const notices: Array<string> = []
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => void notices.push(n.method))
  client.setNotificationHandler(ResourceListChangedNotificationSchema, (n) => void notices.push(n.method))
  await client.connect(transport)
  return { client, notices }
}

const toolNames = async (client: { listTools: () => Promise<{ tools: Array<{ name: string }> }> }) =>
  (await client.listTools()).tools.map((t) => t.name)

let server: Spawned | undefined
afterEach(async () => {
  await server?.stop()
  server = undefined
})

const startDev = async (source: string) => {
  const dir = writeAppDir(source)
  server = await spawnWo(["dev", dir, "--data", tempDir("wo-dev-data-"), "--listen", "127.0.0.1:0"])
  return { dir, server, appFile: path.join(dir, "app.ts") }
}

const reloads = (s: Spawned) => s.stdout().split("wo dev: reloaded").length - 1

describe("wo dev", () => {
  it("an edit adding a field, a method and a view reaches both eras' clients as list_changed and new tools", async () => {
    const { server, appFile } = await startDev(notesApp())
    const legacy = await legacyClient(server.url)
    const modern = await modernClient(server.url)
    const modernNotices: Array<string> = []
    modern.setNotificationHandler("notifications/tools/list_changed", () => void modernNotices.push("notifications/tools/list_changed"))
    modern.setNotificationHandler("notifications/resources/list_changed", () => void modernNotices.push("notifications/resources/list_changed"))
    try {
      // listChanged is declared, and true, under wo dev.
      expect(legacy.client.getServerCapabilities()?.tools).toEqual({ listChanged: true })
      const listen = await modern.listen({ toolsListChanged: true, resourcesListChanged: true })
      expect(listen.honoredFilter).toEqual({ resourcesListChanged: true, toolsListChanged: true })
      expect(await toolNames(legacy.client)).not.toContain("notes_pin")
      const created = await http(`${server.url}/api/notes`, { method: "POST", body: { title: "before" } })
      expect(created.status).toBe(201)

      fs.writeFileSync(appFile, EDITED)
      expect(await waitFor(() => legacy.notices.includes("notifications/tools/list_changed"), BOUND)).toBe(true)
      expect(await waitFor(() => modernNotices.includes("notifications/tools/list_changed"), BOUND)).toBe(true)
      expect(legacy.notices).toContain("notifications/resources/list_changed")
      expect(modernNotices).toContain("notifications/resources/list_changed")

      for (const client of [legacy.client, modern]) {
        const names = await toolNames(client)
        expect(names).toContain("notes_pin")
        expect(names).toContain("view_note_count")
      }
      // The new method works on a row written under the old catalog, whose new field took its default.
      const pinned = await modern.callTool({ name: "notes_pin", arguments: { id: created.json.id } })
      expect(pinned.isError).toBeFalsy()
      expect(pinned.structuredContent).toMatchObject({ id: created.json.id, title: "before", pinned: true })
      const viewed = await legacy.client.callTool({ name: "view_note_count", arguments: {} })
      expect(JSON.stringify(viewed.structuredContent)).toContain("1")
      expect((await http(`${server.url}/api/notes/${created.json.id}`)).json).toMatchObject({ pinned: true, version: 2 })
    } finally {
      await Promise.all([legacy.client.close(), modern.close()])
    }
  })

  it("a broken edit keeps the old catalog serving and prints the error with file:line", async () => {
    const { server, appFile } = await startDev(notesApp())
    const legacy = await legacyClient(server.url)
    try {
      await http(`${server.url}/api/notes`, { method: "POST", body: { title: "kept" } })
      // A syntax error: where it is.
      fs.writeFileSync(appFile, notesApp() + "\nexport const broken = (\n")
      expect(await waitFor(() => /did not reload[\s\S]*app\.ts:\d+:\d+/.test(server.output()), BOUND)).toBe(true)
      // A new required field that the stored row lacks: the startup check's message, naming the field.
      fs.writeFileSync(appFile, notesApp({ field: `,\n        body: Schema.String` }))
      expect(await waitFor(() => server.output().split("did not reload").length === 3, BOUND)).toBe(true)
      expect(server.output()).toMatch(/"body"[^\n]*is missing|body[^\n]*missing/)
      expect(reloads(server)).toBe(0)
      expect(legacy.notices).toEqual([])
      // Still the old app: its tools, its rows, and writes go on.
      expect(await toolNames(legacy.client)).toContain("notes_create")
      const listed = await http(`${server.url}/api/notes`)
      expect(listed.json.items.map((r: { title: string }) => r.title)).toEqual(["kept"])
      expect((await http(`${server.url}/api/notes`, { method: "POST", body: { title: "after" } })).status).toBe(201)
    } finally {
      await legacy.client.close()
    }
  })

  it("writes in flight while the catalog swaps are all acknowledged and present afterwards", async () => {
    const { server, appFile } = await startDev(notesApp())
    const acked: Array<string> = []
    const failures: Array<number> = []
    // Each lane writes until the reload is logged, then five more; a lane whose write straddles the swap waits
    // at the gate (held, not refused) and is answered by the new catalog's writer.
    const deadline = Date.now() + BOUND
    const lane = async (lane: number) => {
      let after = 0
      for (let i = 0; after < 5 && Date.now() < deadline; i++) {
        const swapped = reloads(server) > 0
        const res = await http(`${server.url}/api/notes`, { method: "POST", body: { title: `lane${lane}-${i}` } })
        if (res.status === 201) acked.push(res.json.id)
        else failures.push(res.status)
        if (swapped) after++
      }
    }
    const lanes = Array.from({ length: 6 }, (_, n) => lane(n))
    expect(await waitFor(() => acked.length >= 12, BOUND)).toBe(true)
    fs.writeFileSync(appFile, EDITED)
    await Promise.all(lanes)
    expect(reloads(server)).toBe(1)
    expect(failures).toEqual([])
    // Every acknowledged write is there, under the new catalog (with the new field's default).
    const rows: Array<{ id: string; pinned: boolean }> = []
    let cursor: string | undefined
    do {
      const page = await http(`${server.url}/api/notes?limit=100${cursor ? `&cursor=${cursor}` : ""}`)
      rows.push(...page.json.items)
      cursor = page.json.nextCursor
    } while (cursor)
    expect(new Set(rows.map((r) => r.id))).toEqual(new Set(acked))
    expect(rows.every((r) => r.pinned === false)).toBe(true)
  })
})

// The page runs in the browser; the test program itself has no DOM types.
declare const document: any
const CHROMIUM = "/usr/bin/chromium"

describe.skipIf(!fs.existsSync(CHROMIUM))("wo dev and the console in headless Chromium", () => {
  it("the console shows the edited catalog without a manual reload", async () => {
    const { server, appFile } = await startDev(notesApp())
    const profile = tempDir("wo-chromium-")
    const browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    })
    try {
      const page = browser.pages()[0] ?? (await browser.newPage())
      await page.goto(`${server.url}/`)
      await page.waitForFunction(() => /notes/.test(document.querySelector("#catalog")?.textContent ?? ""), undefined, { timeout: BOUND })
      expect(await page.evaluate(() => document.querySelector("#catalog").textContent)).not.toMatch(/pinned/)
      fs.writeFileSync(appFile, EDITED)
      await page.waitForFunction(() => /pinned/.test(document.querySelector("#catalog")?.textContent ?? ""), undefined, { timeout: BOUND })
      expect(await page.evaluate(() => document.querySelector("#catalog").textContent)).toMatch(/pin/)
    } finally {
      await browser.close()
      fs.rmSync(profile, { recursive: true, force: true })
    }
  })
})
