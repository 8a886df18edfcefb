import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { apps, http, startServer } from "../support/server.ts"

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
})
