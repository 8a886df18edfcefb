/**
 * Every event records its actor (domain/actor.ts): REST, both MCP eras through the official SDK clients, and writes
 * made in process with a principal; after a restart too. A row's history (`GET /api/<type>/<id>/history`) serves
 * them oldest first, paged, and `/api/_events?actor=<name>` keeps one principal's events.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Commands } from "../../src/commands/commands.ts"
import { actorOf } from "../../src/domain/actor.ts"
import { apps, http, startServer } from "../../testkit/server.ts"
import { eventTail } from "../../testkit/sse.ts"
import { waitFor } from "../../testkit/wait.ts"
import { streamWatchingFetch } from "../../testkit/get-streams.ts"
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"

const tail = (url: string, query = "") => eventTail(url, query)

/** Every page of a row's history, following nextCursor. */
const wholeHistory = async (url: string, path: string, limit: number) => {
  const pages: Array<any> = []
  let cursor: string | undefined
  do {
    const res = await http(`${url}/api/${path}/history?limit=${limit}${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
    expect(res.status).toBe(200)
    pages.push(res.json)
    cursor = res.json.nextCursor
  } while (cursor !== undefined)
  return pages
}

describe("the actor on every event", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  let id: string
  let legacySession: string | undefined
  beforeAll(async () => {
    server = await startServer(apps.pricing)
    // 1: REST create, 2: REST set_price
    id = (await http(`${server.url}/api/products`, { method: "POST", body: { name: "Lamp", price: 10, currency: "EUR" } })).json.id
    await http(`${server.url}/api/products/${id}/set_price`, { method: "POST", body: { price: 11 } })
    // 3: the legacy era (SDK v1), clientInfo from initialize, with its session
    const legacy = new ClientV1({ name: "legacy-agent", version: "1.2.3" })
    const transport = new TransportV1(new URL(`${server.url}/mcp`))
    await legacy.connect(transport)
    legacySession = transport.sessionId
    expect((await legacy.callTool({ name: "products_set_price", arguments: { id, price: 12 } })).isError).toBeFalsy()
    await legacy.close()
    // 4: the modern era (SDK v2), clientInfo in each request's _meta
    const modern = new ClientV2({ name: "modern-agent", version: "2.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
    await modern.connect(new TransportV2(new URL(`${server.url}/mcp`)))
    expect((await modern.callTool({ name: "products_set_price", arguments: { id, price: 13 } })).isError).toBeFalsy()
    await modern.close()
    // 5: in process, as a principal acting for a subject (what the edge attaches once access is on); 6: in process
    await server.runtime.runPromise(Effect.flatMap(Commands, (c) =>
      c.execute({ _tag: "Invoke", type: "products", id, method: "set_price", input: { price: 14 } }, { actor: actorOf({ name: "pricing-agent", onBehalfOf: "alice" }, "rest") })))
    await server.runtime.runPromise(Effect.flatMap(Commands, (c) => c.execute({ _tag: "Invoke", type: "products", id, method: "set_price", input: { price: 15 } })))
  }, 60_000)
  afterAll(async () => {
    await server?.close()
  })

  const expected = () => [
    { client: "rest" },
    { client: "rest" },
    { client: { name: "legacy-agent", version: "1.2.3", session: legacySession } },
    { client: { name: "modern-agent", version: "2.0.0" } },
    { principal: "pricing-agent", client: "rest", onBehalfOf: "alice" },
    { client: "in-process" }
  ]

  it("the event tail carries each event's actor", async () => {
    expect(legacySession).toBeTypeOf("string")
    const events = await tail(server.url)
    expect(events.map((e) => e.actor)).toEqual(expected())
  })

  it("the history route serves the row's events oldest first, paged, with their actors", async () => {
    const pages = await wholeHistory(server.url, `products/${id}`, 4)
    expect(pages.map((p) => p.items.length)).toEqual([4, 2])
    expect(pages[1].nextCursor).toBeUndefined()
    const items = pages.flatMap((p) => p.items)
    expect(items.map((e) => e.version)).toEqual([1, 2, 3, 4, 5, 6])
    expect(items.map((e) => e.actor)).toEqual(expected())
    // A page size that divides the history: no empty last page.
    expect((await wholeHistory(server.url, `products/${id}`, 3)).map((p) => p.items.length)).toEqual([3, 3])
  })

  it("history: 404 for no such row and for another spelling of an id; a foreign cursor and a bad limit are 400", async () => {
    expect((await http(`${server.url}/api/products/999/history`)).status).toBe(404)
    expect((await http(`${server.url}/api/products/0${id}/history`)).status).toBe(404)
    const other = (await http(`${server.url}/api/products`, { method: "POST", body: { name: "Desk", price: 90, currency: "EUR" } })).json.id
    const cursor = (await http(`${server.url}/api/products/${other}/history?limit=1`)).json.nextCursor
    expect(cursor).toBeUndefined()
    const first = (await http(`${server.url}/api/products/${id}/history?limit=1`)).json
    const foreign = await http(`${server.url}/api/products/${other}/history?cursor=${encodeURIComponent(first.nextCursor)}`)
    expect(foreign.status).toBe(400)
    expect((await http(`${server.url}/api/products/${id}/history?limit=0`)).status).toBe(400)
  })

  it("/api/_events?actor= keeps one principal's events, and an empty actor is refused", async () => {
    const mine = await tail(server.url, "&actor=pricing-agent")
    expect(mine.map((e) => [e.seq, e.actor.principal, e.data])).toEqual([[5, "pricing-agent", { price: 14 }]])
    expect(await tail(server.url, "&actor=nobody")).toEqual([])
    expect((await http(`${server.url}/api/_events?actor=`)).status).toBe(400)
  })

  it("wo://<type>/{id}/history: a template in both eras, read as REST serves it", async () => {
    const legacy = new ClientV1({ name: "reader", version: "1" })
    await legacy.connect(new TransportV1(new URL(`${server.url}/mcp`)))
    const modern = new ClientV2({ name: "reader", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
    await modern.connect(new TransportV2(new URL(`${server.url}/mcp`)))
    try {
      for (const client of [legacy, modern] as const) {
        const { resourceTemplates } = await client.listResourceTemplates()
        expect(resourceTemplates.map((t) => t.uriTemplate)).toContain("wo://products/{id}/history")
        const read = await client.readResource({ uri: `wo://products/${id}/history` })
        expect((read.contents[0] as { text: string }).text).toBe((await http(`${server.url}/api/products/${id}/history`)).text)
        const page = await client.readResource({ uri: `wo://products/${id}/history?limit=2` })
        expect(JSON.parse((page.contents[0] as { text: string }).text).items.map((e: any) => e.version)).toEqual([1, 2])
        await expect(client.readResource({ uri: "wo://products/999/history" })).rejects.toThrow()
      }
    } finally {
      await legacy.close()
      await modern.close()
    }
  })

  it("a history is subscribable like a row, in both eras: a new event of the row notifies it", async () => {
    const uri = `wo://products/${id}/history`
    const legacyUpdates: Array<string> = []
    const legacy = new ClientV1({ name: "watcher", version: "1" })
    legacy.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void legacyUpdates.push(n.params.uri))
    const gets = streamWatchingFetch()
    await legacy.connect(new TransportV1(new URL(`${server.url}/mcp`), { fetch: gets.fetch }))
    const modernUpdates: Array<string> = []
    const modern = new ClientV2({ name: "watcher", version: "1" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
    modern.setNotificationHandler("notifications/resources/updated", (n: { params: { uri: string } }) => void modernUpdates.push(n.params.uri))
    await modern.connect(new TransportV2(new URL(`${server.url}/mcp`)))
    try {
      await legacy.subscribeResource({ uri })
      expect(await waitFor(() => gets.opened() === 1, 30_000), "the client opens its GET stream after initialized").toBe(true)
      const sub = await modern.listen({ resourceSubscriptions: [uri] })
      expect(sub.honoredFilter).toEqual({ resourceSubscriptions: [uri] })
      // Another row's change notifies nobody here; this row's does, once per event.
      const other = (await http(`${server.url}/api/products`, { method: "POST", body: { name: "Rug", price: 5, currency: "EUR" } })).json.id
      await http(`${server.url}/api/products/${other}/set_price`, { method: "POST", body: { price: 6 } })
      await http(`${server.url}/api/products/${id}/set_price`, { method: "POST", body: { price: 16 } })
      expect(await waitFor(() => legacyUpdates.length >= 1 && modernUpdates.length >= 1)).toBe(true)
      await new Promise((r) => setTimeout(r, 300))
      expect(legacyUpdates).toEqual([uri])
      expect(modernUpdates).toEqual([uri])
      await sub.close()
    } finally {
      await legacy.close()
      await modern.close()
    }
  })

  it("the actors are read back after a restart (classic-level)", async () => {
    const dataDir = server.dataDir
    await server.close()
    server = await startServer(apps.pricing, { dataDir })
    const items = (await http(`${server.url}/api/products/${id}/history`)).json.items
    expect(items.map((e: any) => e.actor)).toEqual([...expected(), { client: "rest" }])
  })
})
