import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SubscriptionRegistry } from "../../src/subscriptions/registry.ts"
import { apps, http, startServer } from "../../testkit/server.ts"
import { waitFor } from "../../testkit/wait.ts"

const modernClient = async (url: string) => {
  const client = new ClientV2({ name: "modern-interop", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
  await client.connect(new TransportV2(new URL(`${url}/mcp`)))
  return client
}

describe("interop with the official SDK v2 client", () => {
  let server: Awaited<ReturnType<typeof startServer>>
  let productId: string
  beforeAll(async () => {
    server = await startServer(apps.pricing)
    productId = (await http(`${server.url}/api/products`, { method: "POST", body: { name: "Lamp", price: 10, currency: "EUR" } })).json.id
  })
  afterAll(async () => {
    await server.close()
  })
  const registryStats = () => server.runtime.runSync(Effect.map(SubscriptionRegistry, (r) => r.stats()))

  it("modern (pinned 2026-07-28): discover, tools/list, tools/call, resources/read", async () => {
    const client = await modernClient(server.url)
    try {
      expect(client.getServerVersion()).toMatchObject({ name: "pricing" })
      const { tools } = await client.listTools()
      expect(tools.map((t) => t.name)).toEqual(["products_list", "products_get", "products_set_price", "view_products_by_currency"])
      const result = await client.callTool({ name: "products_set_price", arguments: { id: productId, price: 12 } })
      expect(result.isError).toBeFalsy()
      expect(result.structuredContent).toMatchObject({ id: productId, price: 12 })
      const read = await client.readResource({ uri: `wo://products/${productId}` })
      const rest = await http(`${server.url}/api/products/${productId}`)
      expect((read.contents[0] as { text: string }).text).toBe(rest.text)
    } finally {
      await client.close()
    }
  })

  it("listen: a REST set_price arrives as notifications/resources/updated; closing frees the registry", async () => {
    const client = await modernClient(server.url)
    const updates: Array<string> = []
    client.setNotificationHandler("notifications/resources/updated", (n: { params: { uri: string } }) => void updates.push(n.params.uri))
    const before = registryStats().subscriptions
    const sub = await client.listen({ resourceSubscriptions: [`wo://products/${productId}`], toolsListChanged: true })
    expect(sub.honoredFilter).toEqual({ resourceSubscriptions: [`wo://products/${productId}`] })
    expect(registryStats().subscriptions).toBe(before + 1)
    await http(`${server.url}/api/products/${productId}/set_price`, { method: "POST", body: { price: 13 } })
    expect(await waitFor(() => updates.length === 1)).toBe(true)
    expect(updates).toEqual([`wo://products/${productId}`])
    await sub.close()
    expect(await sub.closed).toBe("local")
    expect(await waitFor(() => registryStats().subscriptions === before)).toBe(true)
    await client.close()
  })

  it("serves v2 legacy mode and the v1 client at the same time as modern traffic", async () => {
    const legacyV2 = new ClientV2({ name: "legacy-v2", version: "1.0.0" })
    await legacyV2.connect(new TransportV2(new URL(`${server.url}/mcp`)))
    const v1 = new ClientV1({ name: "legacy-v1", version: "1.0.0" })
    await v1.connect(new TransportV1(new URL(`${server.url}/mcp`)))
    const modern = await modernClient(server.url)
    try {
      const prices = Array.from({ length: 30 }, (_, i) => i + 20)
      const calls = prices.map((price, i) => {
        const args = { name: "products_set_price", arguments: { id: productId, price } }
        return i % 3 === 0 ? legacyV2.callTool(args) : i % 3 === 1 ? v1.callTool(args) : modern.callTool(args)
      })
      const results = await Promise.all(calls)
      expect(results.every((r) => !r.isError)).toBe(true)
      const versions = results.map((r) => (r.structuredContent as { version: number }).version)
      expect(new Set(versions).size).toBe(30)
      const final = (await http(`${server.url}/api/products/${productId}`)).json
      expect(final.version).toBe(Math.max(...versions))
    } finally {
      await Promise.all([legacyV2.close(), v1.close(), modern.close()])
    }
  })
})

describe("graceful shutdown of listen streams", () => {
  it("ends every listen stream with the listen result", async () => {
    const server = await startServer(apps.pricing)
    const client = await modernClient(server.url)
    const sub = await client.listen({ resourcesListChanged: true })
    expect(sub.honoredFilter).toEqual({ resourcesListChanged: true })
    await server.close()
    expect(await sub.closed).toBe("graceful")
    await client.close().catch(() => undefined)
  })
})
