/**
 * Who may do what, on every surface: REST, MCP legacy and modern (tools and resources), subscriptions, live
 * queries, views, the event tail, the console and metrics, each operation tried {granted, not granted, without a
 * token, with a revoked token}. Granted works; everything else is refused (401 or 403 naming the grant), and
 * nothing is written or disclosed. The library sample, its access file in a temp dir, a real server on port 0.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, legacySessions, modern, rest, startWithAccess, tokenOf, type DeclaredPrincipal } from "../../testkit/access-server.ts"
import { listenBody, modernHeaders, modernRequest } from "../../testkit/mcp.ts"
import { openSse, type SseConnection } from "../../testkit/sse.ts"

const PRINCIPALS: ReadonlyArray<DeclaredPrincipal> = [
  { name: "ops", grants: ["admin"] },
  { name: "librarian", grants: ["books:*", "members:*", "loans:read", "command:lend", "command:return", "view:loans_by_member"] },
  { name: "desk", grants: ["books:read", "members:read", "loans:read", "command:lend", "command:return"] },
  { name: "auditor", grants: ["read"] },
  { name: "shelf", grants: ["books:read"] },
  { name: "scraper", grants: ["metrics"] },
  { name: "nobody", grants: [] },
  { name: "leaver", grants: ["admin"] }
]
const token = (name: string) => tokenOf(name)
const REVOKED = token("leaver")

let server: Awaited<ReturnType<typeof startWithAccess>>
let legacy: ReturnType<typeof legacySessions>
let book = ""
let member = ""

/** Rows of a type, as the admin sees them. */
const count = async (type: string) => (await rest(server.url, "GET", `/api/${type}?limit=1000`, token("ops"))).json.items.length
const allCounts = async () => [await count("books"), await count("members"), await count("loans")]

beforeAll(async () => {
  server = await startWithAccess(PRINCIPALS)
  legacy = legacySessions(server.url)
  book = (await rest(server.url, "POST", "/api/books", token("ops"), { title: "Dune", author: "Herbert" })).json.id
  await rest(server.url, "POST", `/api/books/${book}/add_copies`, token("ops"), { n: 5 })
  member = (await rest(server.url, "POST", "/api/members", token("ops"), { name: "Ada" })).json.id
  expect((await rest(server.url, "POST", "/api/_commands/lend", token("ops"), { book, member })).status).toBe(200)
  // The leaver had a session and worked before it was removed from the file.
  expect((await legacy.request(REVOKED, "tools/list")).status).toBe(200)
  expect((await rest(server.url, "GET", "/api/books", REVOKED)).status).toBe(200)
  server.write(PRINCIPALS.filter((p) => p.name !== "leaver"))
  await server.reload()
})
afterAll(() => server?.close())

/** One request of the matrix, made with a token (or none). */
type Attempt = (token: string | undefined) => Promise<{ status: number; json: any; text: string }>

interface Case {
  readonly surface: string
  readonly operation: string
  readonly attempt: Attempt
  readonly granted: string
  readonly denied: string
  /** The grant a 403 names. */
  readonly grant: string
  /** A write: nothing may change when it is refused. */
  readonly writes?: boolean
  /** How the granted answer looks. */
  readonly ok: (r: { status: number; json: any; text: string }) => void
}

const restOk = (status = 200) => (r: { status: number }) => expect(r.status).toBe(status)
const rpcOk = (r: { status: number; json: any }) => {
  expect(r.status).toBe(200)
  expect(r.json.error).toBeUndefined()
  expect(r.json.result.isError).toBeFalsy()
}
const toolCall = (era: "legacy" | "modern", name: string, args: () => Record<string, unknown>): Attempt => (t) =>
  era === "legacy" ? legacy.request(t, "tools/call", { name, arguments: args() }) : modern(server.url, t, "tools/call", { name, arguments: args() }, name)
const read = (era: "legacy" | "modern", uri: () => string): Attempt => (t) =>
  era === "legacy" ? legacy.request(t, "resources/read", { uri: uri() }) : modern(server.url, t, "resources/read", { uri: uri() }, uri())

const CASES: ReadonlyArray<Case> = [
  // REST
  { surface: "REST", operation: "list", attempt: (t) => rest(server.url, "GET", "/api/books", t), granted: "auditor", denied: "nobody", grant: "books:read", ok: restOk() },
  { surface: "REST", operation: "get (direct path)", attempt: (t) => rest(server.url, "GET", `/api/books/${book}`, t), granted: "shelf", denied: "scraper", grant: "books:read", ok: restOk() },
  { surface: "REST", operation: "get another type", attempt: (t) => rest(server.url, "GET", `/api/members/${member}`, t), granted: "desk", denied: "shelf", grant: "members:read", ok: restOk() },
  { surface: "REST", operation: "create", attempt: (t) => rest(server.url, "POST", "/api/books", t, { title: "Emma", author: "Austen" }), granted: "librarian", denied: "auditor", grant: "books:create", writes: true, ok: restOk(201) },
  { surface: "REST", operation: "update", attempt: (t) => rest(server.url, "PATCH", `/api/books/${book}`, t, { title: "Dune!" }), granted: "librarian", denied: "desk", grant: "books:update", writes: true, ok: restOk() },
  { surface: "REST", operation: "method", attempt: (t) => rest(server.url, "POST", `/api/books/${book}/add_copies`, t, { n: 1 }), granted: "librarian", denied: "desk", grant: "books:add_copies", writes: true, ok: restOk() },
  { surface: "REST", operation: "app command", attempt: (t) => rest(server.url, "POST", "/api/_commands/lend", t, { book, member }), granted: "desk", denied: "auditor", grant: "command:lend", writes: true, ok: restOk() },
  { surface: "REST", operation: "a type that does not exist", attempt: (t) => rest(server.url, "GET", "/api/magazines", t), granted: "ops", denied: "shelf", grant: "magazines:read", ok: restOk(404) },
  // Views
  { surface: "views", operation: "REST view", attempt: (t) => rest(server.url, "GET", "/api/_views/loans_by_member", t), granted: "librarian", denied: "desk", grant: "view:loans_by_member", ok: restOk() },
  // The keyed view's entries are read under the view's grant (the member has a loan out: the app command's case lent).
  { surface: "views", operation: "REST view entry", attempt: (t) => rest(server.url, "GET", `/api/_views/loans_by_member/${member}`, t), granted: "librarian", denied: "desk", grant: "view:loans_by_member", ok: restOk() },
  { surface: "views", operation: "MCP view tool", attempt: toolCall("modern", "view_loans_by_member", () => ({ key: member })), granted: "auditor", denied: "shelf", grant: "view:loans_by_member", ok: rpcOk },
  { surface: "views", operation: "MCP view list tool", attempt: toolCall("legacy", "view_loans_by_member_list", () => ({})), granted: "auditor", denied: "shelf", grant: "view:loans_by_member", ok: rpcOk },
  { surface: "views", operation: "MCP view resource", attempt: read("legacy", () => "wo://views/loans_by_member"), granted: "librarian", denied: "desk", grant: "view:loans_by_member", ok: rpcOk },
  { surface: "views", operation: "MCP view entry resource", attempt: read("modern", () => `wo://views/loans_by_member/${member}`), granted: "librarian", denied: "desk", grant: "view:loans_by_member", ok: rpcOk },
  // MCP, both eras
  ...(["legacy", "modern"] as const).flatMap((era): Array<Case> => [
    { surface: `MCP ${era}`, operation: "read tool", attempt: toolCall(era, "books_get", () => ({ id: book })), granted: "shelf", denied: "nobody", grant: "books:read", ok: rpcOk },
    { surface: `MCP ${era}`, operation: "create tool", attempt: toolCall(era, "books_create", () => ({ title: "Emma", author: "Austen" })), granted: "librarian", denied: "auditor", grant: "books:create", writes: true, ok: rpcOk },
    { surface: `MCP ${era}`, operation: "method tool", attempt: toolCall(era, "books_add_copies", () => ({ id: book, n: 1 })), granted: "librarian", denied: "desk", grant: "books:add_copies", writes: true, ok: rpcOk },
    { surface: `MCP ${era}`, operation: "command tool", attempt: toolCall(era, "lend", () => ({ book, member })), granted: "desk", denied: "auditor", grant: "command:lend", writes: true, ok: rpcOk },
    { surface: `resources ${era}`, operation: "read a row", attempt: read(era, () => `wo://books/${book}`), granted: "shelf", denied: "scraper", grant: "books:read", ok: rpcOk },
    { surface: `resources ${era}`, operation: "read a list", attempt: read(era, () => "wo://members"), granted: "desk", denied: "shelf", grant: "members:read", ok: rpcOk },
    { surface: `resources ${era}`, operation: "read a schema", attempt: read(era, () => "wo://schema/loans"), granted: "auditor", denied: "shelf", grant: "loans:read", ok: rpcOk }
  ]),
  // Subscriptions (legacy) and live queries
  { surface: "subscriptions", operation: "resources/subscribe a row", attempt: (t) => legacy.request(t, "resources/subscribe", { uri: `wo://books/${book}` }), granted: "shelf", denied: "scraper", grant: "books:read", ok: rpcOk },
  { surface: "subscriptions", operation: "resources/subscribe a view's entry", attempt: (t) => legacy.request(t, "resources/subscribe", { uri: `wo://views/loans_by_member/${member}` }), granted: "librarian", denied: "desk", grant: "view:loans_by_member", ok: rpcOk },
  { surface: "live queries", operation: "resources/subscribe a live query", attempt: (t) => legacy.request(t, "resources/subscribe", { uri: "wo://loans?status=out" }), granted: "desk", denied: "shelf", grant: "loans:read", ok: rpcOk },
  // The console and metrics
  { surface: "console", operation: "rows", attempt: (t) => rest(server.url, "GET", "/api/_rows", t), granted: "ops", denied: "auditor", grant: "admin", ok: restOk() },
  { surface: "console", operation: "catalog", attempt: (t) => rest(server.url, "GET", "/api/_catalog", t), granted: "ops", denied: "librarian", grant: "admin", ok: restOk() },
  { surface: "console", operation: "agents", attempt: (t) => rest(server.url, "GET", "/api/_agents", t), granted: "ops", denied: "auditor", grant: "admin", ok: restOk() },
  { surface: "metrics", operation: "scrape", attempt: (t) => rest(server.url, "GET", "/metrics", t), granted: "scraper", denied: "auditor", grant: "metrics", ok: restOk() }
]

/** What a refusal must not carry: the row's data. */
const discloses = (text: string) => text.includes("Dune") || text.includes("Herbert") || text.includes("Ada")

describe("the access matrix", () => {
  for (const c of CASES) {
    describe(`${c.surface}: ${c.operation}`, () => {
      it(`granted (${c.granted}) works`, async () => {
        c.ok(await c.attempt(token(c.granted)))
      })

      it(`not granted (${c.denied}) is refused with 403 naming ${c.grant}, nothing written or disclosed`, async () => {
        const before = c.writes ? await allCounts() : undefined
        const r = await c.attempt(token(c.denied))
        expect(r.status).toBe(403)
        if (r.json?.jsonrpc === "2.0") {
          expect(r.json.error.code).toBe(403)
          expect(r.json.error.data.grant).toBe(c.grant)
        } else {
          expect(r.json).toMatchObject({ error: "Forbidden", grant: c.grant })
          expect(typeof r.json.message).toBe("string")
        }
        expect(discloses(r.text)).toBe(false)
        if (c.writes) expect(await allCounts()).toEqual(before)
      })

      for (const [label, t] of [["no token", undefined], ["a revoked token", REVOKED]] as const) {
        it(`with ${label} it is refused with 401, nothing written or disclosed`, async () => {
          const before = c.writes ? await allCounts() : undefined
          const r = await c.attempt(t)
          expect(r.status).toBe(401)
          expect(discloses(r.text)).toBe(false)
          if (c.writes) expect(await allCounts()).toEqual(before)
        })
      }
    })
  }
})

describe("lists show only what the principal may use", () => {
  const toolNames = async (era: "legacy" | "modern", name: string) => {
    const r = era === "legacy" ? await legacy.request(token(name), "tools/list") : await modern(server.url, token(name), "tools/list")
    return (r.json.result.tools as Array<{ name: string }>).map((t) => t.name).sort()
  }

  for (const era of ["legacy", "modern"] as const) {
    it(`tools/list (${era}): the lending desk sees its reads and its commands, no edit; nobody sees nothing`, async () => {
      expect(await toolNames(era, "desk")).toEqual(["books_get", "books_list", "lend", "loans_get", "loans_list", "members_get", "members_list", "return"])
      expect(await toolNames(era, "nobody")).toEqual([])
      expect(await toolNames(era, "ops")).toContain("books_create")
    })

    it(`resources/list and templates (${era}) hold only readable types and views`, async () => {
      const list = era === "legacy" ? await legacy.request(token("shelf"), "resources/list") : await modern(server.url, token("shelf"), "resources/list")
      const uris = (list.json.result.resources as Array<{ uri: string }>).map((r) => r.uri)
      expect(uris).toContain(`wo://books/${book}`)
      expect(uris).toContain("wo://schema/books")
      expect(uris.filter((u) => !u.startsWith("wo://books/") && u !== "wo://schema/books")).toEqual([])
      const templates = era === "legacy" ? await legacy.request(token("shelf"), "resources/templates/list") : await modern(server.url, token("shelf"), "resources/templates/list")
      expect((templates.json.result.resourceTemplates as Array<{ uriTemplate: string }>).every((t) => t.uriTemplate.startsWith("wo://books"))).toBe(true)
      expect(templates.json.result.resourceTemplates.length).toBeGreaterThan(0)
    })
  }

  it("modern lists that depend on the caller are marked private in their caching hints", async () => {
    for (const method of ["tools/list", "resources/templates/list", "resources/list"]) {
      const r = await modern(server.url, token("desk"), method)
      expect(r.json.result.cacheScope).toBe("private")
    }
  })

  it("the app commands' description lists only the commands the principal may run", async () => {
    const r = await modern(server.url, token("librarian"), "resources/read", { uri: "wo://schema/_commands" }, "wo://schema/_commands")
    const names = JSON.parse(r.json.result.contents[0].text).commands.map((c: { name: string }) => c.name)
    expect(names.sort()).toEqual(["lend", "return"])
  })

  it("GET /api/_views lists only the views the principal may read", async () => {
    expect((await rest(server.url, "GET", "/api/_views", token("desk"))).json.views).toEqual([])
    expect((await rest(server.url, "GET", "/api/_views", token("auditor"))).json.views.map((v: { name: string }) => v.name)).toEqual(["loans_by_member"])
  })

  it("the official MCP SDK client with a bearer token sees only its tools, and a call of another is refused", async () => {
    const client = new Client({ name: "desk-agent", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: bearer(token("desk")) } }))
    try {
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name)).toContain("lend")
      expect(tools.map((t) => t.name)).not.toContain("books_create")
      const before = await count("books")
      await expect(client.callTool({ name: "books_create", arguments: { title: "Emma", author: "Austen" } })).rejects.toThrow(/403|books:create/)
      expect(await count("books")).toBe(before)
      expect((await client.callTool({ name: "books_get", arguments: { id: book } })).isError).toBeFalsy()
    } finally {
      await client.close()
    }
  })
})

describe("a legacy session belongs to the principal that opened it", () => {
  it("another principal presenting its id is answered as for an unknown session: no request, no stream", async () => {
    await legacy.open(token("librarian"))
    const session = legacy.sessionOf(token("librarian"))!
    const asDesk = { ...bearer(token("desk")), "mcp-session-id": session, "mcp-protocol-version": "2025-11-25", accept: "application/json, text/event-stream", "content-type": "application/json" }
    const call = await fetch(`${server.url}/mcp`, { method: "POST", headers: asDesk, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }) })
    expect(call.status).toBe(404)
    const stream = await openSse(`${server.url}/mcp`, { headers: { ...asDesk, accept: "text/event-stream" } })
    expect(stream.status).toBe(404)
    stream.close()
    const own = await fetch(`${server.url}/mcp`, { method: "POST", headers: { ...asDesk, ...bearer(token("librarian")) }, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }) })
    expect(own.status).toBe(200)
  })
})

describe("listen is refused whole for any unreadable URI", () => {
  const listen = (t: string | undefined, uris: ReadonlyArray<string>) =>
    openSse(`${server.url}/mcp`, { method: "POST", headers: { ...modernHeaders("subscriptions/listen"), ...bearer(t) }, body: listenBody(7, uris) })

  it("granted: the ack; one unreadable URI among readable ones: 403, no stream; no token: 401", async () => {
    const ok: SseConnection = await listen(token("shelf"), [`wo://books/${book}`, "wo://books?author=Herbert"])
    expect(ok.status).toBe(200)
    expect((await ok.nextJson(5000))?.json.method).toBe("notifications/subscriptions/acknowledged")
    ok.close()
    const mixed = await listen(token("shelf"), [`wo://books/${book}`, `wo://members/${member}`])
    expect(mixed.status).toBe(403)
    mixed.close()
    const none = await listen(undefined, [`wo://books/${book}`])
    expect(none.status).toBe(401)
    none.close()
  })
})

describe("the event tail gives each principal only the events of types it may read", () => {
  const tail = async (t: string | undefined) => {
    const sse = await openSse(`${server.url}/api/_events?from=1`, { headers: bearer(t) })
    const types: Array<string> = []
    for (;;) {
      const e = await sse.next(1500)
      if (e === undefined) break
      if (e.data) types.push(JSON.parse(e.data).type)
    }
    sse.close()
    return { status: sse.status, types }
  }

  it("shelf sees books only; the auditor every type; no token 401; a revoked token 401", async () => {
    const shelf = await tail(token("shelf"))
    expect(shelf.status).toBe(200)
    expect(shelf.types.length).toBeGreaterThan(0)
    expect(new Set(shelf.types)).toEqual(new Set(["books"]))
    const auditor = await tail(token("auditor"))
    expect(new Set(auditor.types)).toEqual(new Set(["books", "members", "loans"]))
    expect(auditor.types.length).toBeGreaterThan(shelf.types.length)
    expect((await tail(undefined)).status).toBe(401)
    expect((await tail(REVOKED)).status).toBe(401)
  })
})

describe("idempotency keys belong to their principal", () => {
  it("the same key from two principals is two writes, each answered with its own", async () => {
    const before = await count("books")
    const key = { "idempotency-key": "same-key-1" }
    const send = (name: string, title: string) =>
      fetch(`${server.url}/api/books`, { method: "POST", headers: { "content-type": "application/json", ...key, ...bearer(token(name)) }, body: JSON.stringify({ title, author: "X" }) })
    const a = await send("librarian", "From the librarian")
    const b = await send("ops", "From ops")
    expect(a.status).toBe(201)
    expect(b.status).toBe(201)
    expect(((await b.json()) as { title: string }).title).toBe("From ops")
    expect(b.headers.get("idempotent-replayed")).toBeNull()
    // Each principal's retry is answered with its own first answer.
    const again = await send("librarian", "From the librarian")
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect(((await again.json()) as { title: string }).title).toBe("From the librarian")
    expect(await count("books")).toBe(before + 2)
  })

  it("over MCP too", async () => {
    const before = await count("books")
    const keyed = async (name: string, title: string) => {
      const req = modernRequest({ id: 1, method: "tools/call", params: { name: "books_create", arguments: { title, author: "Y" } }, name: "books_create", headers: bearer(token(name)) })
      const body = JSON.parse(req.body)
      body.params._meta["writeonce/idempotencyKey"] = "same-mcp-key"
      const r = await fetch(`${server.url}/mcp`, { method: "POST", headers: req.headers, body: JSON.stringify(body) })
      return ((await r.json()) as { result: any }).result
    }
    expect((await keyed("librarian", "MCP librarian")).structuredContent.title).toBe("MCP librarian")
    expect((await keyed("ops", "MCP ops")).structuredContent.title).toBe("MCP ops")
    expect(await count("books")).toBe(before + 2)
  })
})
