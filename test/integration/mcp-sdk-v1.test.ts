import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { openSse } from "../../testkit/sse.ts"
import { apps, http, startServer } from "../../testkit/server.ts"
import { waitFor } from "../../testkit/wait.ts"
import { streamWatchingFetch } from "../../testkit/get-streams.ts"


describe("interop with the official SDK v1 client", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  beforeAll(async () => {
    server = await startServer(apps.blog)
  })
  afterAll(async () => {
    await server.close()
  })

  it("connects, lists tools, creates and lists articles, and reads the row resource", async () => {
    const client = new Client({ name: "interop-test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)))
    try {
      expect(client.getServerVersion()).toMatchObject({ name: "blog" })
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name)).toContain("articles_create")
      const created = await client.callTool({
        name: "articles_create",
        arguments: { title: "From the SDK", body: "b", status: "published", tags: ["sdk"], author: { name: "Bo", email: "bo@example.com" } }
      })
      expect(created.isError).toBeFalsy()
      const row = created.structuredContent as { id: string; version: number }
      expect(row.version).toBe(1)
      const listed = await client.callTool({ name: "articles_list", arguments: {} })
      expect((listed.structuredContent as any).items.map((r: any) => r.id)).toContain(row.id)
      const read = await client.readResource({ uri: `wo://articles/${row.id}` })
      const rest = await http(`${server.url}/api/articles/${row.id}`)
      expect((read.contents[0] as { text: string }).text).toBe(rest.text)
      // The SDK validates structuredContent against outputSchema; an error result must not trip it.
      const missing = await client.callTool({ name: "articles_get", arguments: { id: "nope" } })
      expect(missing.isError).toBe(true)
    } finally {
      await client.close()
    }
  })

  it("subscribes, receives notifications/resources/updated, and gets them again after its stream is dropped", async () => {
    const pricing = await startServer(apps.pricing)
    const { json: product } = await http(`${pricing.url}/api/products`, { method: "POST", body: { name: "Pen", price: 1, currency: "USD" } })
    let sessionId: string | undefined
    const client = new Client({ name: "v1-subscriber", version: "1.0.0" })
    const gets = streamWatchingFetch()
    const transport = new StreamableHTTPClientTransport(new URL(`${pricing.url}/mcp`), {
      fetch: gets.fetch,
      reconnectionOptions: { initialReconnectionDelay: 100, maxReconnectionDelay: 500, reconnectionDelayGrowFactor: 1.5, maxRetries: 5 }
    })
    const updates: Array<string> = []
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => void updates.push(n.params.uri))
    try {
      await client.connect(transport)
      sessionId = transport.sessionId
      const uri = `wo://products/${product.id}`
      await client.subscribeResource({ uri })
      expect(await waitFor(() => gets.opened() === 1, 30_000), "the client opens its GET stream after initialized").toBe(true)
      await http(`${pricing.url}/api/products/${product.id}/set_price`, { method: "POST", body: { price: 2 } })
      expect(await waitFor(() => updates.length === 1)).toBe(true)

      // Drop the client's stream: a second GET for the session replaces (closes) it, then goes away itself.
      const intruder = await openSse(`${pricing.url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": sessionId! } })
      intruder.close()
      await new Promise((r) => setTimeout(r, 1000)) // the SDK reconnects with Last-Event-ID
      await http(`${pricing.url}/api/products/${product.id}/set_price`, { method: "POST", body: { price: 3 } })
      expect(await waitFor(() => updates.length >= 2)).toBe(true)
      expect(updates).toEqual([uri, uri])
    } finally {
      await client.close()
      await pricing.close()
    }
  })
})
