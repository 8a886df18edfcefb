/**
 * Keyed views on every surface, through the real runtime in-process (classic-level in a temp dir, HTTP on port 0),
 * with the official MCP SDK clients of both eras:
 *  - REST: `GET /api/_views/<name>/<key>` (404 for an absent key), `GET /api/_views/<name>` as pages with filters,
 *    orders and cursors, the row lists' errors, and pages by key cursor that neither repeat nor skip an entry while
 *    other clients write;
 *  - MCP: the tools `view_<name>` (by key) and `view_<name>_list` with structured content, the resource template
 *    `wo://views/<name>/{key}` read by URI, and a subscription to one entry that hears only its key, legacy
 *    (`resources/subscribe`) and modern (`subscriptions/listen`);
 *  - OpenAPI: both routes;
 *  - a keyed view that failed: 500 ViewFailed on REST, an isError result over MCP, listed as failed.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { defineApp, entity } from "../../src/index.ts"
import { keyedTasks } from "../../testkit/keyed-tasks.ts"
import library from "../../examples/library/app.ts"
import { http, startServer } from "../../testkit/server.ts"
import { waitFor } from "../../testkit/wait.ts"
import { streamWatchingFetch } from "../../testkit/get-streams.ts"
import { openSse } from "../../testkit/sse.ts"

const NAME = "open_by_owner"
const VIEWS = `/api/_views/${NAME}`
type Server = Awaited<ReturnType<typeof startServer>>

const task = async (url: string, owner: string, title: string, done = false) => {
  const res = await http(`${url}/api/tasks`, { method: "POST", body: { owner, title, done } })
  expect(res.status, res.text).toBe(201)
  return res.json.id as string
}

const entryUri = (key: string) => `wo://views/${NAME}/${encodeURIComponent(key)}`

/** Every page of a list, following nextCursor; each page's keys. */
const walk = async (url: string, query: string, onPage: (keys: ReadonlyArray<string>) => Promise<void> = async () => {}) => {
  const pages: Array<ReadonlyArray<string>> = []
  let cursor: string | undefined
  for (;;) {
    const res = await http(`${url}${VIEWS}?${query}${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
    expect(res.status, res.text).toBe(200)
    const keys = (res.json.items as Array<{ key: string }>).map((e) => e.key)
    pages.push(keys)
    await onPage(keys)
    cursor = res.json.nextCursor
    if (cursor === undefined) return pages
  }
}

describe("keyed views over REST", () => {
  let server: Server
  beforeAll(async () => {
    server = await startServer(keyedTasks(), { maxPageSize: 100 })
    await task(server.url, "ann", "a1")
    await task(server.url, "ann", "a2")
    await task(server.url, "bob", "b1")
    await task(server.url, "a b/c?", "odd")
  })
  afterAll(() => server.close())

  it("answers one entry by key, {name, key, seq, value}, and 404 naming an absent key", async () => {
    const ann = await http(`${server.url}${VIEWS}/ann`)
    expect(ann.status).toBe(200)
    expect(ann.json).toEqual({ name: NAME, key: "ann", seq: 2, value: { open: 2, titles: ["a1", "a2"] } })
    expect(ann.headers.get("etag")).toBe('"2"')
    // A key holding `/`, `?` and a space, percent-encoded as one segment.
    const odd = await http(`${server.url}${VIEWS}/${encodeURIComponent("a b/c?")}`)
    expect(odd.status, odd.text).toBe(200)
    expect(odd.json.key).toBe("a b/c?")
    const none = await http(`${server.url}${VIEWS}/nobody`)
    expect(none.status).toBe(404)
    expect(none.json).toEqual({ error: "NotFound", message: `view ${NAME} has no entry under the key "nobody"` })
    // The whole list of views names the keyed one without its entries.
    const all = await http(`${server.url}/api/_views`)
    expect(all.json.views).toEqual([{ name: NAME, keyed: true, entries: VIEWS }])
  })

  it("lists entries in key order by default, filtered and ordered by the entry's scalar fields, with the row lists' errors", async () => {
    const first = await http(`${server.url}${VIEWS}?limit=2`)
    expect(first.status).toBe(200)
    expect(first.json.name).toBe(NAME)
    expect(first.json.items.map((e: { key: string }) => e.key)).toEqual(["a b/c?", "ann"])
    expect(first.json.items[1]).toEqual({ key: "ann", seq: 2, value: { open: 2, titles: ["a1", "a2"] } })
    const second = await http(`${server.url}${VIEWS}?limit=2&cursor=${encodeURIComponent(first.json.nextCursor)}`)
    expect(second.json).toEqual({ name: NAME, items: [{ key: "bob", seq: 3, value: { open: 1, titles: ["b1"] } }] })

    const busy = await http(`${server.url}${VIEWS}?open[gte]=2`)
    expect(busy.json.items.map((e: { key: string }) => e.key)).toEqual(["ann"])
    const byOpen = await http(`${server.url}${VIEWS}?order=-open&limit=1`)
    expect(byOpen.json.items.map((e: { key: string }) => e.key)).toEqual(["ann"])
    const rest = await http(`${server.url}${VIEWS}?order=-open&limit=5&cursor=${encodeURIComponent(byOpen.json.nextCursor)}`)
    expect(rest.json.items.map((e: { key: string }) => e.key)).toEqual(["a b/c?", "bob"])

    const badField = await http(`${server.url}${VIEWS}?owner=ann`)
    expect(badField.status).toBe(400)
    expect(badField.json.error).toBe("ValidationFailed")
    expect(badField.json.issues).toEqual([{ path: ["owner"], message: `is not a field of _views/${NAME}; filterable fields: open` }])
    const notScalar = await http(`${server.url}${VIEWS}?titles=x`)
    expect(notScalar.json.issues[0].message).toBe("cannot be filtered: only scalar and literal fields can (open)")
    const badOrder = await http(`${server.url}${VIEWS}?order=-key`)
    expect(badOrder.status).toBe(400)
    expect(badOrder.json.issues[0].message).toBe(`"-key" is not an order of _views/${NAME}; one of: key, open, -open`)
    const badLimit = await http(`${server.url}${VIEWS}?limit=101`)
    expect(badLimit.json.issues).toEqual([{ path: ["limit"], message: "must be an integer from 1 to 100" }])
    const foreign = await http(`${server.url}${VIEWS}?order=-open&cursor=${encodeURIComponent(first.json.nextCursor)}`)
    expect(foreign.status).toBe(400)
    expect(foreign.json.issues[0].path).toEqual(["cursor"])
  })

  it("pages by key cursor without repeating or skipping an entry while other clients write", async () => {
    const owners = Array.from({ length: 60 }, (_, i) => `owner-${String(i).padStart(3, "0")}`)
    for (const owner of owners) await task(server.url, owner, "first")
    const before = (await walk(server.url, "limit=100")).flat()
    let writes = 0
    // Every page read lets more writes land: entries of the owners already there change, new owners appear
    // (before and after the cursor), and some entries move in the order of `open`.
    const pages = await walk(server.url, "limit=7", async () => {
      const round = writes++
      await Promise.all([
        task(server.url, owners[(round * 7) % owners.length], `more-${round}`),
        task(server.url, owners[(round * 13 + 5) % owners.length], `more-${round}`),
        task(server.url, `new-${String(round).padStart(3, "0")}`, "fresh"),
        task(server.url, `zz-${round}`, "fresh")
      ])
    })
    const seen = pages.flat()
    expect(writes).toBeGreaterThan(5)
    expect(new Set(seen).size).toBe(seen.length)
    expect([...seen].sort()).toEqual(seen)
    // Each entry there before the walk (and still there) is in it once.
    for (const key of before) expect(seen).toContain(key)
    // In a field's order too: the walk of `open` under writes repeats nothing.
    const byOpen = (await walk(server.url, "limit=9&order=open", async () => {
      await task(server.url, `late-${writes++}`, "fresh")
    })).flat()
    expect(new Set(byOpen).size).toBe(byOpen.length)
    for (const key of before) expect(byOpen).toContain(key)
  }, 120_000)

  it("describes both routes in the OpenAPI document", async () => {
    const doc = (await http(`${server.url}/api/_openapi.json`)).json
    const list = doc.paths[VIEWS].get
    expect(list.operationId).toBe(`_views.${NAME}.list`)
    expect(list.parameters.find((p: { name?: string }) => p.name === "order").schema.enum).toEqual(["key", "open", "-open"])
    expect(list.parameters.some((p: { name?: string }) => p.name === "open[gte]")).toBe(true)
    const one = doc.paths[`${VIEWS}/{key}`].get
    expect(one.operationId).toBe(`_views.${NAME}.get`)
    expect(Object.keys(one.responses)).toEqual(expect.arrayContaining(["200", "404", "500", "503"]))
    expect(doc.components.schemas[`_views.${NAME}.entry`].properties.value.required).toEqual(["open", "titles"])
  })
})

const modernClient = async (url: string) => {
  const client = new ClientV2({ name: "keyed-modern", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
  await client.connect(new TransportV2(new URL(`${url}/mcp`)))
  return client
}
const legacyClient = async (url: string) => {
  const client = new ClientV1({ name: "keyed-legacy", version: "1.0.0" })
  await client.connect(new TransportV1(new URL(`${url}/mcp`)))
  return client
}

describe("keyed views over MCP", () => {
  let server: Server
  beforeAll(async () => {
    server = await startServer(keyedTasks())
    await task(server.url, "ann", "a1")
    await task(server.url, "bob", "b1")
    await task(server.url, "bob", "b2")
  })
  afterAll(() => server.close())

  it("view_<name> answers one entry by key and view_<name>_list a page, both with structured content", async () => {
    const client = await modernClient(server.url)
    try {
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name)).toEqual(["tasks_list", "tasks_get", "tasks_create", "tasks_update", "tasks_delete", `view_${NAME}`, `view_${NAME}_list`])
      const one = await client.callTool({ name: `view_${NAME}`, arguments: { key: "bob" } })
      expect(one.isError).toBeFalsy()
      const rest = await http(`${server.url}${VIEWS}/bob`)
      expect(one.structuredContent).toEqual(rest.json)
      expect((one.content as Array<{ text: string }>)[0].text).toBe(rest.text)
      const missing = await client.callTool({ name: `view_${NAME}`, arguments: { key: "nobody" } })
      expect(missing.isError).toBe(true)
      expect((missing.content as Array<{ text: string }>)[0].text).toContain(`view ${NAME} has no entry under the key "nobody"`)
      const noKey = await client.callTool({ name: `view_${NAME}`, arguments: {} })
      expect(noKey.isError).toBe(true)

      const page = await client.callTool({ name: `view_${NAME}_list`, arguments: { limit: 1 } })
      expect(page.isError).toBeFalsy()
      const first = page.structuredContent as { name: string; items: Array<{ key: string }>; nextCursor: string }
      expect(first.items.map((e) => e.key)).toEqual(["ann"])
      const next = await client.callTool({ name: `view_${NAME}_list`, arguments: { limit: 1, cursor: first.nextCursor } })
      expect(next.structuredContent).toEqual({ name: NAME, items: [{ key: "bob", seq: 3, value: { open: 2, titles: ["b1", "b2"] } }] })
      const filtered = await client.callTool({ name: `view_${NAME}_list`, arguments: { where: { open: { gte: 2 } }, order: "-open" } })
      expect((filtered.structuredContent as { items: Array<{ key: string }> }).items.map((e) => e.key)).toEqual(["bob"])
      const bad = await client.callTool({ name: `view_${NAME}_list`, arguments: { where: { titles: "x" } } })
      expect(bad.isError).toBe(true)
    } finally {
      await client.close()
    }
  })

  it("serves the entry template and reads an entry by URI, the same bytes as REST", async () => {
    const client = await modernClient(server.url)
    try {
      const { resourceTemplates } = await client.listResourceTemplates()
      expect(resourceTemplates.map((t) => t.uriTemplate)).toContain(`wo://views/${NAME}/{key}`)
      const read = await client.readResource({ uri: entryUri("ann") })
      expect((read.contents[0] as { text: string }).text).toBe((await http(`${server.url}${VIEWS}/ann`)).text)
      // The view's own URI reads its first page.
      const first = await client.readResource({ uri: `wo://views/${NAME}` })
      expect(JSON.parse((first.contents[0] as { text: string }).text).items.map((e: { key: string }) => e.key)).toEqual(["ann", "bob"])
    } finally {
      await client.close()
    }
  })

  it("a legacy subscriber to one entry hears only that entry's changes, and the ones it missed while its stream was down", async () => {
    const gets = streamWatchingFetch()
    const transport = new TransportV1(new URL(`${server.url}/mcp`), {
      fetch: gets.fetch,
      reconnectionOptions: { initialReconnectionDelay: 300, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 }
    })
    const client = new ClientV1({ name: "keyed-legacy", version: "1.0.0" })
    await client.connect(transport)
    const updates: Array<string> = []
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri))
    try {
      await client.subscribeResource({ uri: entryUri("ann") })
      expect(await waitFor(() => gets.opened() === 1, 30_000), "the client opens its GET stream after initialized").toBe(true)
      await task(server.url, "bob", "b3")
      await task(server.url, "carl", "c1")
      await task(server.url, "ann", "a2")
      expect(await waitFor(() => updates.length >= 1)).toBe(true)
      await task(server.url, "bob", "b4")
      await task(server.url, "ann", "a3")
      expect(await waitFor(() => updates.length >= 2)).toBe(true)
      await new Promise((r) => setTimeout(r, 200))
      expect(updates).toEqual([entryUri("ann"), entryUri("ann")])
      // Drop its stream (a second GET for the session replaces it) and write while it is down: the client
      // reconnects with Last-Event-ID and is told of ann's entry from the log, and of nobody else's.
      const intruder = await openSse(`${server.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": transport.sessionId! } })
      await task(server.url, "ann", "while-down")
      await task(server.url, "bob", "while-down")
      intruder.close()
      expect(await waitFor(() => updates.length >= 3, 10_000)).toBe(true)
      await new Promise((r) => setTimeout(r, 300))
      expect(updates).toEqual([entryUri("ann"), entryUri("ann"), entryUri("ann")])
      // A key spelled otherwise than the notices spell it would hear nothing: refused, naming the right form.
      await expect(client.subscribeResource({ uri: `wo://views/${NAME}/%61nn` })).rejects.toThrow(`wo://views/${NAME}/ann`)
    } finally {
      await client.close()
    }
  })

  it("a modern listener to one entry hears only that entry's changes, its removal included", async () => {
    const client = await modernClient(server.url)
    const updates: Array<string> = []
    client.setNotificationHandler("notifications/resources/updated", (n: { params: { uri: string } }) => void updates.push(n.params.uri))
    try {
      const odd = "d/e f"
      const sub = await client.listen({ resourceSubscriptions: [entryUri(odd)] })
      expect(sub.honoredFilter).toEqual({ resourceSubscriptions: [entryUri(odd)] })
      await task(server.url, "ann", "a9")
      const id = await task(server.url, odd, "x")
      await task(server.url, "bob", "b9")
      expect(await waitFor(() => updates.length >= 1)).toBe(true)
      expect((await http(`${server.url}${VIEWS}/${encodeURIComponent(odd)}`)).json.value).toEqual({ open: 1, titles: ["x"] })
      await http(`${server.url}/api/tasks/${id}`, { method: "PATCH", body: { done: true } })
      expect(await waitFor(() => updates.length >= 2)).toBe(true)
      await task(server.url, "ann", "a10")
      await new Promise((r) => setTimeout(r, 200))
      expect(updates).toEqual([entryUri(odd), entryUri(odd)])
      expect((await http(`${server.url}${VIEWS}/${encodeURIComponent(odd)}`)).status).toBe(404)
      await sub.close()
      // The key spelled otherwise than the notices spell it: refused, as on the legacy era.
      await expect(client.listen({ resourceSubscriptions: [`wo://views/${NAME}/d%2fe%20f`] })).rejects.toThrow(entryUri(odd))
    } finally {
      await client.close()
    }
  })
})

/** A keyed view whose key is no key for a task titled "boom": the view fails, alone. */
const failing = defineApp({
  name: "failing_keys",
  entities: { tasks: entity({ fields: { owner: Schema.String, title: Schema.String } }) },
  views: (view) => ({
    by_owner: view({
      schema: Schema.Struct({ n: Schema.Int }),
      initial: { n: 0 },
      on: { tasks: ["created"] },
      key: ({ after }) => (after!.title === "boom" ? "" : after!.owner),
      evolve: (entry) => ({ n: entry.n + 1 })
    })
  })
})

describe("a failed keyed view on every surface", () => {
  it("answers 500 ViewFailed over REST, an isError result over MCP, and is listed as failed, while writes go on", async () => {
    const server = await startServer(failing)
    try {
      const post = (owner: string, title: string) => http(`${server.url}/api/tasks`, { method: "POST", body: { owner, title } })
      expect((await post("ann", "a")).status).toBe(201)
      expect((await http(`${server.url}/api/_views/by_owner/ann`)).json.value).toEqual({ n: 1 })
      expect((await post("bob", "boom")).status).toBe(201)
      for (const path of ["/api/_views/by_owner/ann", "/api/_views/by_owner"]) {
        const res = await http(`${server.url}${path}`)
        expect(res.status, path).toBe(500)
        expect(res.json.error).toBe("ViewFailed")
        expect(res.json.message).toContain("a key must not be empty")
      }
      const all = await http(`${server.url}/api/_views`)
      expect(all.json.views[0]).toMatchObject({ name: "by_owner", keyed: true })
      expect(all.json.views[0].failed).toContain("a key must not be empty")
      const client = await modernClient(server.url)
      try {
        const result = await client.callTool({ name: "view_by_owner", arguments: { key: "ann" } })
        expect(result.isError).toBe(true)
        expect((result.content as Array<{ text: string }>)[0].text).toContain("a key must not be empty")
      } finally {
        await client.close()
      }
      expect((await post("carl", "c")).status).toBe(201)
    } finally {
      await server.close()
    }
  })
})

describe("the library's loans_by_member, paged while others lend", () => {
  it("a walk by key cursor repeats no member and skips none that had a loan out throughout", async () => {
    const server = await startServer(library)
    const post = async (path: string, body: unknown) => {
      const res = await http(`${server.url}${path}`, { method: "POST", body })
      expect(res.status, res.text).toBeLessThan(300)
      return res.json
    }
    try {
      const book = (await post("/api/books", { title: "Dune", author: "Frank Herbert" })).id
      await post(`/api/books/${book}/add_copies`, { n: 1000 })
      const members: Array<string> = []
      for (let i = 0; i < 40; i++) members.push((await post("/api/members", { name: `m${i}` })).id)
      // Members 0-19 keep their loan all along; 20-39 lend and return meanwhile, and new members lend.
      for (const member of members) await post("/api/_commands/lend", { book, member })
      const steady = members.slice(0, 20)
      let lending = true
      let lends = 0
      const others = (async () => {
        for (let round = 0; lending; round++) {
          const member = members[20 + (round % 20)]
          const lent = await post("/api/_commands/lend", { book, member })
          await post("/api/_commands/return", { loan: lent.changes.find((c: { type: string }) => c.type === "loans").id })
          await post("/api/_commands/lend", { book, member: (await post("/api/members", { name: `late${round}` })).id })
          lends += 2
        }
      })()
      const seen: Array<string> = []
      let cursor: string | undefined
      do {
        const res = await http(`${server.url}/api/_views/loans_by_member?limit=3${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
        expect(res.status, res.text).toBe(200)
        seen.push(...res.json.items.map((e: { key: string }) => e.key))
        cursor = res.json.nextCursor
        // Let some lends land between two pages.
        await new Promise((r) => setTimeout(r, 15))
      } while (cursor !== undefined)
      lending = false
      await others
      expect(lends).toBeGreaterThan(4)
      expect(new Set(seen).size).toBe(seen.length)
      for (const member of steady) expect(seen).toContain(member)
    } finally {
      await server.close()
    }
  }, 120_000)
})
