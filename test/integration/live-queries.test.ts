/**
 * Live queries: a filtered list is a resource (`wo://articles?status=published`), read as its first page and
 * subscribed on both eras. A subscriber is notified, after durability, exactly when the result set changes: a
 * row enters it, leaves it, or changes while in it; nothing for changes that do not touch it. Legacy resumption
 * with Last-Event-ID replays what a dropped stream missed from the durable log, each notice once.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { MCP_HEADERS, openSession, rpc } from "../../testkit/legacy-client.ts"
import { modernRequest, openListen } from "../../testkit/modern-client.ts"
import { apps, http, startServer, tempDir } from "../../testkit/server.ts"
import { openSse, type SseConnection } from "../../testkit/sse.ts"

type Server = Awaited<ReturnType<typeof startServer>>

const PUBLISHED = "wo://articles?status=published"
const DRAFTS = "wo://articles?status=draft"
const article = (title: string, status: "draft" | "published" = "draft") => ({ title, body: "text", status, tags: [], author: { name: "Ann" } })
const QUIET_MS = 150

const legacyPost = (url: string, session: string, method: string, params: unknown) =>
  http(`${url}/mcp`, {
    method: "POST",
    headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
    body: { jsonrpc: "2.0", id: Math.floor(Math.random() * 1e9), method, params }
  })
const legacyStream = (url: string, session: string, lastEventId?: string) =>
  openSse(`${url}/mcp`, {
    headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25", ...(lastEventId ? { "last-event-id": lastEventId } : {}) }
  })

/**
 * The next `n` notifications (each awaited for up to 10 s), then a short look for one more: none may follow. A
 * notification that came late would still be caught, as the first of the next read, so nothing here depends on
 * how fast the machine is.
 */
const take = async (stream: SseConnection, n: number) => {
  const out: Array<{ id?: string; uri: string }> = []
  while (out.length < n) {
    const m = await stream.nextJson(10_000)
    if (m === undefined) break
    if (m.json.method === "notifications/resources/updated") out.push({ id: m.id, uri: m.json.params.uri })
  }
  const extra = await stream.nextJson(QUIET_MS)
  if (extra !== undefined) out.push({ id: extra.id, uri: extra.json.params?.uri ?? extra.json.method })
  return out
}
const idOf = (seq: number, uri: string) => `get-${seq}.${Buffer.from(uri).toString("base64url")}`

describe("live queries on wo://articles?status=published", () => {
  let server: Server
  const open: Array<SseConnection> = []
  beforeAll(async () => {
    server = await startServer(apps.blog)
  })
  afterAll(async () => {
    await server.close()
  })
  afterEach(() => {
    for (const s of open.splice(0)) s.close()
  })

  const create = async (title: string, status: "draft" | "published" = "draft") =>
    (await http(`${server.url}/api/articles`, { method: "POST", body: article(title, status) })).json.id as string
  const patch = async (id: string, body: Record<string, unknown>) => {
    const res = await http(`${server.url}/api/articles/${id}`, { method: "PATCH", body })
    expect(res.status).toBe(200)
    return res.json
  }
  const seqNow = async () => (await http(`${server.url}/api/_rows`)).json.seq as number

  it("notifies exactly when the result set changes, on both eras, and a second query gets only its own", async () => {
    const listen = await openListen(server.url, "lq-1", [PUBLISHED])
    const drafts = await openListen(server.url, "lq-2", [DRAFTS])
    open.push(listen, drafts)
    const session = await openSession(server.url)
    expect((await legacyPost(server.url, session, "resources/subscribe", { uri: PUBLISHED })).json.result).toEqual({})
    const stream = await legacyStream(server.url, session)
    open.push(stream)
    expect((await listen.nextJson(10_000))?.json.params.notifications).toEqual({ resourceSubscriptions: [PUBLISHED] })
    expect((await drafts.nextJson(10_000))?.json.params.notifications).toEqual({ resourceSubscriptions: [DRAFTS] })

    // Created as a draft: not in the published list.
    const id = await create("live")
    expect(await take(listen, 0)).toEqual([])
    expect(await take(stream, 0)).toEqual([])
    expect((await take(drafts, 1)).map((n) => n.uri)).toEqual([DRAFTS])

    // Published: it enters the list (and leaves the drafts).
    const published = await patch(id, { status: "published" })
    const seq = await seqNow()
    expect(published.version).toBe(2)
    expect((await take(listen, 1)).map((n) => n.uri)).toEqual([PUBLISHED])
    expect(await take(stream, 1)).toEqual([{ id: idOf(seq, PUBLISHED), uri: PUBLISHED }])
    expect((await take(drafts, 1)).map((n) => n.uri)).toEqual([DRAFTS])

    // Its body edited while published: it changed while in the list. Not in the drafts: nothing there.
    await patch(id, { body: "edited" })
    expect((await take(listen, 1)).map((n) => n.uri)).toEqual([PUBLISHED])
    expect((await take(stream, 1)).map((n) => n.uri)).toEqual([PUBLISHED])
    expect(await take(drafts, 0)).toEqual([])

    // Unpublished: it leaves the list.
    await patch(id, { status: "draft" })
    expect((await take(listen, 1)).map((n) => n.uri)).toEqual([PUBLISHED])
    expect((await take(stream, 1)).map((n) => n.uri)).toEqual([PUBLISHED])
    expect((await take(drafts, 1)).map((n) => n.uri)).toEqual([DRAFTS])

    // Edited as a draft, then deleted as a draft: the published list does not hear of it.
    await patch(id, { title: "still a draft" })
    await http(`${server.url}/api/articles/${id}`, { method: "DELETE" })
    expect(await take(listen, 0)).toEqual([])
    expect(await take(stream, 0)).toEqual([])
    expect((await take(drafts, 2)).map((n) => n.uri)).toEqual([DRAFTS, DRAFTS])
  })

  it("reads as the list's first page, the same bytes as REST, and its templates give the form", async () => {
    await create("read one", "published")
    const rest = await http(`${server.url}/api/articles?status=published&order=-title&limit=2`)
    const uri = "wo://articles?status=published&order=-title&limit=2"
    const legacy = (await rpc(server.url, "resources/read", { uri })).json.result.contents[0]
    expect(legacy).toEqual({ uri, mimeType: "application/json", text: rest.text })
    const modern = (await modernRequest(server.url, "resources/read", { uri }, uri)).json.result
    expect(modern.contents[0].text).toBe(rest.text)
    expect(modern.ttlMs).toBe(0)
    const all = (await rpc(server.url, "resources/read", { uri: "wo://articles" })).json.result.contents[0].text
    expect(all).toBe((await http(`${server.url}/api/articles`)).text)
    const templates = (await rpc(server.url, "resources/templates/list")).json.result.resourceTemplates
    expect(templates.map((t: any) => t.uriTemplate)).toContain("wo://articles{?title,body,status,order,limit}")
  })

  it("refuses a list URI naming a bad field: read, subscribe and listen, naming the field", async () => {
    const read = await rpc(server.url, "resources/read", { uri: "wo://articles?bogus=1" })
    expect(read.json.error).toMatchObject({ code: -32602, message: expect.stringContaining("bogus: is not a field of articles") })
    const session = await openSession(server.url)
    const sub = await legacyPost(server.url, session, "resources/subscribe", { uri: "wo://articles?status=archived" })
    expect(sub.json.error).toMatchObject({ code: -32602, message: expect.stringContaining('status: Expected "draft" | "published", actual "archived"') })
    const listen = await modernRequest(server.url, "subscriptions/listen", { notifications: { resourceSubscriptions: ["wo://articles?tags=x"] } })
    expect(listen.json.error).toMatchObject({ code: -32602, message: expect.stringContaining("tags: cannot be filtered") })
    // A URI outside the catalog is still accepted and never notifies.
    expect((await legacyPost(server.url, session, "resources/subscribe", { uri: "wo://nothing?x=1" })).json.result).toEqual({})
  })

  it("resumes a dropped legacy stream from Last-Event-ID: each missed notice once, in order, then live", async () => {
    const session = await openSession(server.url)
    const kept = await create("kept", "published") // in the list before the subscription
    for (const uri of [PUBLISHED, `wo://articles/${kept}`]) await legacyPost(server.url, session, "resources/subscribe", { uri })
    const first = await legacyStream(server.url, session)
    const moving = await create("moving") // a draft: nothing
    await patch(moving, { status: "published" })
    const delivered = await take(first, 1)
    expect(delivered.map((n) => n.uri)).toEqual([PUBLISHED])
    first.close()
    await new Promise((r) => setTimeout(r, 50))

    // Missed while away.
    await patch(kept, { body: "kept, edited" }) //        seq a: the row, then the list (it is in it)
    await create("another draft") //                      nothing
    await patch(moving, { status: "draft" }) //           seq b: the list (it leaves)
    const entering = await create("entering", "published") // seq c: the list (it enters)
    await patch(moving, { title: "a draft edit" }) //      nothing
    const head = await seqNow()
    const a = head - 4
    const b = head - 2
    const c = head - 1
    const expected = [
      { id: `get-${a}`, uri: `wo://articles/${kept}` },
      { id: idOf(a, PUBLISHED), uri: PUBLISHED },
      { id: idOf(b, PUBLISHED), uri: PUBLISHED },
      { id: idOf(c, PUBLISHED), uri: PUBLISHED }
    ]
    const resumed = await legacyStream(server.url, session, delivered[0].id)
    open.push(resumed)
    expect(await take(resumed, 4)).toEqual(expected)
    // From between two notices of one change: only the second one is missed.
    const middle = await legacyStream(server.url, session, `get-${a}`)
    expect(await take(middle, 3)).toEqual(expected.slice(1))
    middle.close()
    // From the last one: nothing is missed; then it goes on live.
    const caughtUp = await legacyStream(server.url, session, expected[3].id)
    open.push(caughtUp)
    expect(await take(caughtUp, 0)).toEqual([])
    await patch(entering, { status: "draft" })
    expect(await take(caughtUp, 1)).toEqual([{ id: idOf(head + 1, PUBLISHED), uri: PUBLISHED }])
  })
})

describe("live-query resumption across a restart", () => {
  it("knows which rows were in the list before the missed changes, from the log alone", async () => {
    const dataDir = tempDir("wo-live-restart-")
    let server = await startServer(apps.blog, { dataDir })
    const session = await openSession(server.url)
    // Published long before the stream drops, with many unrelated events in between.
    const old = (await http(`${server.url}/api/articles`, { method: "POST", body: article("old", "published") })).json.id
    await legacyPost(server.url, session, "resources/subscribe", { uri: PUBLISHED })
    for (let i = 0; i < 1500; i += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, j) => http(`${server.url}/api/articles`, { method: "POST", body: article(`filler ${i + j}`) })))
    }
    const stream = await legacyStream(server.url, session)
    const flip = (await http(`${server.url}/api/articles`, { method: "POST", body: article("flip", "published") })).json.id
    const seen = await take(stream, 1)
    expect(seen.map((n) => n.uri)).toEqual([PUBLISHED])
    stream.close()
    await server.close()

    server = await startServer(apps.blog, { dataDir })
    try {
      // Missed across the restart: the old article leaves the list (its status was set 1500 events earlier),
      // a filler is edited as a draft (nothing), the flipped one is edited while in it.
      await http(`${server.url}/api/articles/${old}`, { method: "PATCH", body: { status: "draft" } })
      await http(`${server.url}/api/articles/2`, { method: "PATCH", body: { title: "filler edited" } })
      await http(`${server.url}/api/articles/${flip}`, { method: "PATCH", body: { body: "changed" } })
      const head = (await http(`${server.url}/api/_rows`)).json.seq as number
      const resumed = await legacyStream(server.url, session, seen[0].id)
      expect(await take(resumed, 2)).toEqual([
        { id: idOf(head - 2, PUBLISHED), uri: PUBLISHED },
        { id: idOf(head, PUBLISHED), uri: PUBLISHED }
      ])
      resumed.close()
    } finally {
      await server.close()
    }
  })
})
