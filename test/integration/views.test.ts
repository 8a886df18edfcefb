/**
 * Declared projections (views): the blog's articles_by_status over REST, the MCP resource and the read tool;
 * its value after a sequence of commits, after a restart (loaded, not folded again), after `wo replay --app`;
 * a damaged record refused at startup and named by `wo verify`; a wrong stored value caught by replay; a view
 * whose evolve throws failing alone while writes go on; subscriptions notified only when the value changes; a
 * view folded again in the background refused until it goes live, and announced once when it does.
 */
import { ClassicLevel } from "classic-level"
import { Effect, Schema } from "effect"
import { blogCountingCreates } from "../../testkit/redeclared-blog.ts"
import { startGatedRefold } from "../../testkit/gated-refold.ts"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { seal, unseal } from "../../src/log/record.ts"
import { defineApp, entity, view } from "../../src/domain/catalog.ts"
import { Views } from "../../src/projections/views/views.ts"
import { callTool, MCP_HEADERS, openSession, rpc } from "../../testkit/legacy-client.ts"
import { modernRequest, openListen } from "../../testkit/modern-client.ts"
import { apps, http, ROOT, runWo, spawnServer, startServer, tempDir } from "../../testkit/server.ts"
import { writeProducts } from "../../bench/lib/row-writer.ts"
import { openSse } from "../../testkit/sse.ts"

type Server = Awaited<ReturnType<typeof startServer>>

const article = (title: string, status: "draft" | "published" = "draft") => ({ title, body: "text", status, tags: [], author: { name: "Ann" } })
const BLOG_DIR = path.join(ROOT, "examples/blog")
const VIEW_KEY = "v!articles_by_status"

/**
 * A view's answer once its current declaration is served: a view folded again in the background answers 503
 * ViewRefolding until it is done, or, when its declaration changed, its older value marked stale (WO-View-Exact-At).
 */
const served = async (url: string, name: string) => {
  for (let polls = 0; ; polls++) {
    const res = await http(`${url}/api/_views/${name}`)
    const stale = res.status === 200 && res.headers.get("wo-view-exact-at") !== null
    if ((res.status !== 503 && !stale) || polls >= 500) return res
    if (!stale) expect(res.json.error).toBe("ViewRefolding")
    await new Promise((r) => setTimeout(r, 20))
  }
}

const counts = async (url: string) => {
  const res = await served(url, "articles_by_status")
  expect(res.status, res.text).toBe(200)
  return res.json.value as Record<string, number>
}

/** Five commits: three creates (one published), a publish, an edit of a body, a delete. */
const commitSequence = async (url: string) => {
  const a = (await http(`${url}/api/articles`, { method: "POST", body: article("a") })).json.id
  const b = (await http(`${url}/api/articles`, { method: "POST", body: article("b", "published") })).json.id
  const c = (await http(`${url}/api/articles`, { method: "POST", body: article("c") })).json.id
  await http(`${url}/api/articles/${a}`, { method: "PATCH", body: { status: "published" } })
  await http(`${url}/api/articles/${b}`, { method: "PATCH", body: { body: "edited" } })
  await http(`${url}/api/articles/${c}`, { method: "DELETE" })
  return { a, b, c }
}

const withDb = async <A>(dir: string, f: (db: ClassicLevel<string, string>) => Promise<A>) => {
  const db = new ClassicLevel<string, string>(dir, { keyEncoding: "utf8", valueEncoding: "utf8", createIfMissing: false })
  await db.open()
  try {
    return await f(db)
  } finally {
    await db.close()
  }
}

describe("views: articles_by_status", () => {
  let server: Server
  beforeAll(async () => {
    server = await startServer(apps.blog)
  })
  afterAll(async () => {
    await server.close()
  })

  it("starts at its initial value and reads its own writes after every commit", async () => {
    expect(await counts(server.url)).toEqual({ draft: 0, published: 0 })
    const a = (await http(`${server.url}/api/articles`, { method: "POST", body: article("first") })).json.id
    expect(await counts(server.url)).toEqual({ draft: 1, published: 0 })
    await http(`${server.url}/api/articles/${a}`, { method: "PATCH", body: { status: "published" } })
    expect(await counts(server.url)).toEqual({ draft: 0, published: 1 })
    await commitSequence(server.url)
    expect(await counts(server.url)).toEqual({ draft: 0, published: 3 })
  })

  it("serves the same bytes over REST, the MCP resource and the read tool, on both eras", async () => {
    const rest = await http(`${server.url}/api/_views/articles_by_status`)
    expect(rest.json).toMatchObject({ name: "articles_by_status", seq: expect.any(Number), value: { draft: 0, published: 3 } })
    expect(rest.headers.get("etag")).toBe(`"${rest.json.seq}"`)
    const resource = (await rpc(server.url, "resources/read", { uri: "wo://views/articles_by_status" })).json.result.contents[0]
    expect(resource).toEqual({ uri: "wo://views/articles_by_status", mimeType: "application/json", text: rest.text })
    const tool = await callTool(server.url, "view_articles_by_status", {})
    expect(tool.content[0].text).toBe(rest.text)
    expect(tool.structuredContent).toEqual(rest.json)
    const modern = (await modernRequest(server.url, "resources/read", { uri: "wo://views/articles_by_status" }, "wo://views/articles_by_status")).json.result
    expect(modern.contents[0].text).toBe(rest.text)
    expect(modern.ttlMs).toBe(0)
    const all = await http(`${server.url}/api/_views`)
    expect(all.json).toEqual({ views: [rest.json] })
    expect((await http(`${server.url}/api/_views/nope`)).status).toBe(404)
    expect((await http(`${server.url}/api/_views/articles_by_status`, { method: "POST", body: {} })).status).toBe(405)
    const unknown = await rpc(server.url, "resources/read", { uri: "wo://views/nope" })
    expect(unknown.json.error.code).toBe(-32002)
  })

  it("lists the view as a resource and its tool with an outputSchema from the view's schema", async () => {
    const tools = (await rpc(server.url, "tools/list")).json.result.tools
    const tool = tools.find((t: any) => t.name === "view_articles_by_status")
    expect(tool.annotations.readOnlyHint).toBe(true)
    expect(tool.inputSchema).toEqual({ type: "object", properties: {}, additionalProperties: false })
    expect(tool.outputSchema.properties.value).toMatchObject({ type: "object", additionalProperties: { type: "integer" } })
    const bad = await callTool(server.url, "view_articles_by_status", { x: 1 })
    expect(bad.isError).toBe(true)
    const resources = (await rpc(server.url, "resources/list")).json.result.resources
    expect(resources.map((r: any) => r.uri)).toContain("wo://views/articles_by_status")
  })

  it("notifies its subscribers after a change of its value, and only then (modern listen and legacy stream)", async () => {
    const listen = await openListen(server.url, "views-1", ["wo://views/articles_by_status"])
    const session = await openSession(server.url)
    const headers = { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
    await http(`${server.url}/mcp`, { method: "POST", headers, body: { jsonrpc: "2.0", id: 1, method: "resources/subscribe", params: { uri: "wo://views/articles_by_status" } } })
    const stream = await openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } })
    try {
      expect((await listen.nextJson(10_000))?.json.method).toBe("notifications/subscriptions/acknowledged")
      const id = (await http(`${server.url}/api/articles`, { method: "POST", body: article("notify") })).json.id
      const created = await listen.nextJson(10_000)
      expect(created?.json).toMatchObject({ method: "notifications/resources/updated", params: { uri: "wo://views/articles_by_status" } })
      const legacy = await stream.nextJson(10_000)
      expect(legacy?.json.params.uri).toBe("wo://views/articles_by_status")
      const seq = (await http(`${server.url}/api/_views/articles_by_status`)).json.seq
      expect(legacy?.id).toBe(`get-${seq}.${Buffer.from("wo://views/articles_by_status").toString("base64url")}`)
      // An edit that leaves the counts as they were: no notification on either stream.
      await http(`${server.url}/api/articles/${id}`, { method: "PATCH", body: { title: "renamed" } })
      expect(await listen.nextJson(400)).toBeUndefined()
      expect(await stream.nextJson(100)).toBeUndefined()
      await http(`${server.url}/api/articles/${id}`, { method: "PATCH", body: { status: "published" } })
      expect((await listen.nextJson(10_000))?.json.params.uri).toBe("wo://views/articles_by_status")
      // The legacy id names the publish's sequence: a late notice of the edit would name another.
      const published = (await http(`${server.url}/api/_views/articles_by_status`)).json.seq
      expect((await stream.nextJson(10_000))?.id).toBe(`get-${published}.${Buffer.from("wo://views/articles_by_status").toString("base64url")}`)
      expect(await listen.nextJson(150)).toBeUndefined()
    } finally {
      listen.close()
      stream.close()
    }
  })
})

/** A server over a copy of `dataDir` with its view declared again, whose background fold waits at a gate. */
const gatedRefold = (dataDir: string, prefix: string) => {
  const copy = tempDir(prefix)
  fs.cpSync(dataDir, copy, { recursive: true })
  return startGatedRefold(blogCountingCreates("created"), copy)
}

describe("views across restarts, replay and damage", () => {
  let dataDir: string
  let expected: Record<string, number>

  beforeAll(async () => {
    dataDir = tempDir("wo-views-")
    const server = await startServer(apps.blog, { dataDir })
    await commitSequence(server.url)
    expected = await counts(server.url)
    expect(expected).toEqual({ draft: 0, published: 2 })
    await server.close()
  })

  it("restarts with the stored value, without folding the log again", async () => {
    const server = await startServer(apps.blog, { dataDir })
    try {
      expect(await counts(server.url)).toEqual(expected)
      const recovered = server.runtime.runSync(Effect.map(Views, (v) => v.recovered))
      expect(recovered).toMatchObject({ loaded: 1, rebuilt: [] })
    } finally {
      await server.close()
    }
  })

  it("stores a view folded again in the background at once: a restart with no write in between loads it (wo run)", async () => {
    // A store written directly has no view records: the first start must fold products_by_currency from the log.
    const dir = tempDir("wo-views-fold-")
    await writeProducts(dir, 300, (i) => ({ name: `item-${i}`, price: i, currency: i % 3 === 0 ? "EUR" : "USD" }))
    const pricingDir = path.join(ROOT, "examples/pricing")
    const first = await spawnServer(pricingDir, dir)
    const value = (await served(first.url, "products_by_currency")).json.value
    await first.stop()
    expect(first.output()).toMatch(/views: 0 loaded, products_by_currency folding again in the background/)
    expect(first.output()).toMatch(/views: products_by_currency folded again from 300 events in \d+ ms; served from seq 300/)
    const second = await spawnServer(pricingDir, dir)
    try {
      expect((await http(`${second.url}/api/_views/products_by_currency`)).json.value).toEqual(value)
    } finally {
      await second.stop()
    }
    expect(second.output()).toMatch(/views: 1 loaded in \d+ ms/)
    expect(second.output()).not.toMatch(/folded again/)
  })

  it("equals the log's fold under wo replay --app, and wo verify checks its record", async () => {
    const replay = await runWo(["replay", "--app", BLOG_DIR, dataDir])
    expect(replay.stdout + replay.stderr).toMatch(/view articles_by_status: equals the log's fold: \{"draft":0,"published":2\}/)
    expect(replay.stdout).toMatch(/^OK: the stored rows equal the log's fold, and so do the views$/m)
    expect(replay.code).toBe(0)
    const plain = await runWo(["replay", dataDir])
    expect(plain.stdout).toMatch(/views: not compared/)
    expect(plain.code).toBe(0)
    const verify = await runWo(["verify", dataDir])
    expect(verify.code, verify.stderr).toBe(0)
  })

  it("is caught by wo replay when its stored value differs from the log's fold (checksum intact)", async () => {
    const copy = tempDir("wo-views-wrong-")
    fs.cpSync(dataDir, copy, { recursive: true })
    await withDb(copy, async (db) => {
      const record = JSON.parse(unseal(VIEW_KEY, (await db.get(VIEW_KEY))!))
      record.value.published = 7
      await db.put(VIEW_KEY, seal(VIEW_KEY, JSON.stringify(record)))
    })
    const replay = await runWo(["replay", "--app", BLOG_DIR, copy])
    expect(replay.code).toBe(1)
    expect(replay.stderr).toMatch(/MISMATCH: view articles_by_status: stored \{"draft":0,"published":7\}, the log's fold \{"draft":0,"published":2\}/)
  })

  it("refuses to start on a damaged record, naming its key, and wo verify names it too", async () => {
    const copy = tempDir("wo-views-damaged-")
    fs.cpSync(dataDir, copy, { recursive: true })
    await withDb(copy, async (db) => {
      const value = (await db.get(VIEW_KEY))!
      // One character of the payload changed, the checksum left as it was.
      await db.put(VIEW_KEY, value.replace('"published":2', '"published":3'))
    })
    await expect(startServer(apps.blog, { dataDir: copy })).rejects.toThrow(/corrupt record at key v!articles_by_status: checksum mismatch/)
    const verify = await runWo(["verify", copy])
    expect(verify.code).toBe(1)
    expect(verify.stderr).toMatch(/corrupt record at key v!articles_by_status: checksum mismatch/)
  })

  it("folds a view again from the log when its declaration changed", async () => {
    const copy = tempDir("wo-views-redeclared-")
    fs.cpSync(dataDir, copy, { recursive: true })
    // The same view, now also counting every article ever created.
    const redeclared = blogCountingCreates("ever")
    const server = await startServer(redeclared, { dataDir: copy })
    try {
      expect(await counts(server.url)).toEqual({ ...expected, ever: 3 })
      expect(server.runtime.runSync(Effect.map(Views, (v) => v.recovered.rebuilt))).toEqual(["articles_by_status"])
      // Stored with the next batch: the restart after it loads it.
      await http(`${server.url}/api/articles`, { method: "POST", body: article("d") })
    } finally {
      await server.close()
    }
    const again = await startServer(redeclared, { dataDir: copy })
    try {
      expect(await counts(again.url)).toEqual({ draft: 1, published: 2, ever: 4 })
      expect(again.runtime.runSync(Effect.map(Views, (v) => v.recovered))).toMatchObject({ loaded: 1, rebuilt: [] })
    } finally {
      await again.close()
    }
  })

  it("folds a changed view in the background: startup does not wait; its older value is served meanwhile, frozen and marked on REST and MCP, then the new value with the writes made meanwhile", async () => {
    const { url, runtime, foldsFromStart, open, close } = await gatedRefold(dataDir, "wo-views-background-")
    try {
      // Serving, while the fold has not read one event: the older declaration's value, exact at seq 6.
      expect(runtime.runSync(Effect.map(Views, (v) => v.recovered.rebuilt))).toEqual(["articles_by_status"])
      const older = await http(`${url}/api/_views/articles_by_status`)
      expect(older.status).toBe(200)
      expect(older.json).toEqual({ name: "articles_by_status", seq: expect.any(Number), value: { draft: 0, published: 2 } })
      const version = older.headers.get("wo-view-version")!
      const nextVersion = older.headers.get("wo-view-next-version")!
      expect(version).toMatch(/^[0-9a-f]{16}$/)
      expect(nextVersion).toMatch(/^[0-9a-f]{16}$/)
      expect(nextVersion).not.toBe(version)
      expect(older.headers.get("wo-view-exact-at")).toBe("6")
      expect(older.headers.get("wo-view-next-failed")).toBeNull()
      const mark = { version, exactAt: 6, nextVersion }
      expect((await http(`${url}/api/_views`)).json.views).toEqual([{ ...older.json, stale: mark }])
      // MCP: the same bytes, the same mark in _meta (the resource's contents; the tool's result).
      const resource = (await rpc(url, "resources/read", { uri: "wo://views/articles_by_status" })).json.result.contents[0]
      expect(resource).toEqual({ uri: "wo://views/articles_by_status", mimeType: "application/json", text: older.text, _meta: { "writeonce/view": mark } })
      const tool = await callTool(url, "view_articles_by_status", {}) as { structuredContent?: unknown; _meta?: Record<string, unknown> }
      expect(tool.structuredContent).toEqual(older.json)
      expect(tool._meta?.["writeonce/view"]).toEqual(mark)
      // Everything else is served, writes included; the older value stays as it was (its evolve is gone).
      expect((await http(`${url}/api/articles`)).status).toBe(200)
      expect((await http(`${url}/api/articles`, { method: "POST", body: article("during", "published") })).status).toBe(201)
      const still = await http(`${url}/api/_views/articles_by_status`)
      expect(still.status).toBe(200)
      expect(still.text).toBe(older.text)
      expect(still.headers.get("wo-view-exact-at")).toBe("6")
      // The background fold is waiting at the gate (the log audit reads from seq 1 too, and waits as well).
      expect(foldsFromStart.count).toBeGreaterThanOrEqual(1)
      // The fold goes on: the value then includes the write made meanwhile.
      open()
      expect(await counts(url)).toEqual({ draft: 0, published: 3, created: 4 })
      expect(runtime.runSync(Effect.map(Views, (v) => v.get("articles_by_status")!.refolding))).toBeUndefined()
      // The new value is unmarked: its version is the current declaration's.
      const swapped = await http(`${url}/api/_views/articles_by_status`)
      expect(["wo-view-version", "wo-view-exact-at", "wo-view-next-version"].map((h) => swapped.headers.get(h))).toEqual([null, null, null])
      expect((await rpc(url, "resources/read", { uri: "wo://views/articles_by_status" })).json.result.contents[0]._meta).toBeUndefined()
    } finally {
      await close()
    }
  })

  it("announces a view folded again to its subscribers once, when it goes live, and not before (modern listen and legacy stream)", async () => {
    const { url, open, close } = await gatedRefold(dataDir, "wo-views-live-")
    const VIEW = "wo://views/articles_by_status"
    // Subscribed to a live query too: its notices mark each write on the streams, so no silence has to be timed.
    const QUERY = "wo://articles?status=published"
    const legacyId = (seq: number, uri: string) => `get-${seq}.${Buffer.from(uri).toString("base64url")}`
    try {
      const listen = await openListen(url, "views-live", [QUERY, VIEW])
      const session = await openSession(url)
      const headers = { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }
      for (const [id, uri] of [[1, QUERY], [2, VIEW]] as const) {
        await http(`${url}/mcp`, { method: "POST", headers, body: { jsonrpc: "2.0", id, method: "resources/subscribe", params: { uri } } })
      }
      const stream = await openSse(`${url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } })
      try {
        expect((await listen.nextJson(10_000))?.json.method).toBe("notifications/subscriptions/acknowledged")
        const uris = async () => {
          const modern = await listen.nextJson(10_000)
          const legacy = await stream.nextJson(10_000)
          expect(modern?.json.method).toBe("notifications/resources/updated")
          expect(legacy?.json.params.uri).toBe(modern?.json.params.uri)
          return { uri: modern?.json.params.uri, id: legacy?.id }
        }
        // Two writes while the view is being folded again (the store holds the six events of commitSequence: they are
        // seqs 7 and 8): the query's notices back to back, none for the view in between (its older value is frozen).
        for (const title of ["during-1", "during-2"]) {
          expect((await http(`${url}/api/articles`, { method: "POST", body: article(title, "published") })).status).toBe(201)
        }
        const older = await http(`${url}/api/_views/articles_by_status`)
        expect([older.status, older.headers.get("wo-view-exact-at")]).toEqual([200, "6"])
        expect(await uris()).toEqual({ uri: QUERY, id: legacyId(7, QUERY) })
        expect(await uris()).toEqual({ uri: QUERY, id: legacyId(8, QUERY) })
        // The fold goes on and the writer is idle: the view goes live, announced once, at the position it was folded to.
        open()
        expect(await uris()).toEqual({ uri: VIEW, id: legacyId(8, VIEW) })
        expect(await counts(url)).toEqual({ draft: 0, published: 4, created: 5 })
        // The next write that changes it (seq 9): the query's notice and the view's, nothing left over from the go-live.
        expect((await http(`${url}/api/articles`, { method: "POST", body: article("after", "published") })).status).toBe(201)
        expect(await uris()).toEqual({ uri: QUERY, id: legacyId(9, QUERY) })
        expect(await uris()).toEqual({ uri: VIEW, id: legacyId(9, VIEW) })
      } finally {
        listen.close()
        stream.close()
      }
    } finally {
      await close()
    }
  })
})

describe("a view whose evolve throws", () => {
  // Throws on the article titled "boom": the view fails, the writes go on.
  const fragile = defineApp({
    name: "fragile",
    entities: {
      notes: entity({ fields: { title: Schema.String } })
    },
    views: {
      note_count: view({
        schema: Schema.Struct({ n: Schema.Int }),
        initial: { n: 0 },
        on: { notes: ["created"] },
        evolve: (s, { after }) => {
          if (after?.title === "boom") throw new Error("cannot count boom")
          return { n: s.n + 1 }
        }
      }),
      titles: view({
        schema: Schema.Array(Schema.String),
        initial: [],
        on: { notes: ["created"] },
        evolve: (s, { after }) => [...s, String(after!.title)]
      })
    }
  })

  it("fails that view alone, served as an error naming it and the event, while writes and other views go on", async () => {
    const dataDir = tempDir("wo-views-fragile-")
    const server = await startServer(fragile, { dataDir })
    try {
      for (const title of ["a", "boom", "b"]) {
        expect((await http(`${server.url}/api/notes`, { method: "POST", body: { title } })).status).toBe(201)
      }
      const failed = await http(`${server.url}/api/_views/note_count`)
      expect(failed.status).toBe(500)
      expect(failed.json).toEqual({
        error: "ViewFailed",
        message: "view note_count failed at event 2 (notes/2 created): cannot count boom; it is folded again from the log at the next start"
      })
      const tool = await callTool(server.url, "view_note_count", {})
      expect(tool.isError).toBe(true)
      expect(tool.content[0].text).toBe(failed.json.message)
      const resource = await rpc(server.url, "resources/read", { uri: "wo://views/note_count" })
      expect(resource.json.error).toMatchObject({ code: -32603, message: expect.stringContaining("view note_count failed at event 2") })
      expect((await http(`${server.url}/api/_views/titles`)).json.value).toEqual(["a", "boom", "b"])
      expect((await http(`${server.url}/api/notes`)).json.items).toHaveLength(3)
    } finally {
      await server.close()
    }
    // Restarted with the same code it fails again, from the log, at the same event.
    const again = await startServer(fragile, { dataDir })
    try {
      expect((await served(again.url, "note_count")).json.message).toMatch(/failed at event 2/)
      expect((await http(`${again.url}/api/_views/titles`)).json.value).toEqual(["a", "boom", "b"])
    } finally {
      await again.close()
    }
  })
})
