/**
 * A method's `reject(code, message)` is the domain's own answer, not malformed input: REST 422 `Rejected` with the
 * code, MCP isError with `{error, code, message}` in `_meta["writeonce/refusal"]` (both eras, and the official SDK
 * v1 client returns it rather than throwing), decider specs `.thenRejects(code)`. Nothing is written for it.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { defineApp, entity, reject } from "../../src/index.ts"
import { DeciderSpecification, SpecFailed, created, invoke } from "../../src/testing/index.ts"
import { openSession, rawMcp } from "../../testkit/legacy-client.ts"
import { MODERN_META, modernHeaders } from "../../testkit/modern-client.ts"
import { http, rawRequest, startServer } from "../../testkit/server.ts"

const library = defineApp({
  name: "library",
  entities: {
    books: entity({
      fields: { title: Schema.String, available: Schema.Int },
      methods: {
        check_out: { params: {}, apply: (book) => (book.available === 0 ? reject("no_copies", "no copies available") : { available: book.available - 1 }) },
        retire: { params: {}, apply: () => reject("books cannot be retired yet") }
      }
    })
  }
})

let server: Awaited<ReturnType<typeof startServer>>
beforeAll(async () => {
  server = await startServer(library)
})
afterAll(async () => {
  await server?.close()
})

let nextId = 1
const toolCall = (tool: string, args: object, meta?: object) =>
  JSON.stringify({ jsonrpc: "2.0", id: nextId++, method: "tools/call", params: { name: tool, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) } })

const book = async (available: number) =>
  (await http(`${server.url}/api/books`, { method: "POST", body: { title: "Dune", available } })).json as { id: string }

describe("a refusal is the domain's own answer", () => {
  it("REST: 422 Rejected with the code and the message; nothing is written", async () => {
    const { id } = await book(0)
    const refused = await http(`${server.url}/api/books/${id}/check_out`, { method: "POST", body: {} })
    expect(refused.status).toBe(422)
    expect(refused.json).toEqual({ error: "Rejected", message: "no copies available", code: "no_copies" })
    expect((await http(`${server.url}/api/books/${id}`)).json).toMatchObject({ version: 1, available: 0 })
    // reject(message) alone: the code "rejected"
    const plain = await http(`${server.url}/api/books/${id}/retire`, { method: "POST", body: {} })
    expect(plain.status).toBe(422)
    expect(plain.json).toEqual({ error: "Rejected", message: "books cannot be retired yet", code: "rejected" })
    // Input that does not match the schema is still ValidationFailed.
    expect((await http(`${server.url}/api/books`, { method: "POST", body: { title: "x", available: "many" } })).json.error).toBe("ValidationFailed")
  })

  it("MCP: isError with the REST message and {error, code, message} in _meta, both eras", async () => {
    const { id } = await book(0)
    const session = await openSession(server.url)
    const legacy = await rawMcp(server.url, toolCall("books_check_out", { id }), { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" })
    const modern = await rawRequest(`${server.url}/mcp`, { method: "POST", headers: modernHeaders("tools/call", "books_check_out"), body: toolCall("books_check_out", { id }, MODERN_META) })
    for (const [era, answer] of Object.entries({ legacy, modern })) {
      const result = answer.json.result
      expect(result.isError, era).toBe(true)
      // The text the model reads: the message, the code, and where to look next.
      expect(result.content[0].text, era).toBe(`no copies available (Rejected: no_copies). Read books ${id} with books_get to see its current state before trying again.`)
      expect(result._meta["writeonce/refusal"], era).toEqual({ error: "Rejected", code: "no_copies", message: "no copies available" })
      expect(result.structuredContent, era).toBeUndefined()
    }
  })

  it("the SDK v1 client returns the refusal (it checks structuredContent against the row's outputSchema even on errors)", async () => {
    const { id } = await book(0)
    const client = new Client({ name: "refusal-test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)))
    try {
      await client.listTools()
      const result = await client.callTool({ name: "books_check_out", arguments: { id } })
      expect(result.isError).toBe(true)
      expect((result._meta as Record<string, unknown>)["writeonce/refusal"]).toMatchObject({ code: "no_copies" })
    } finally {
      await client.close()
    }
  })

  it("decider specs: thenRejects(code) holds for the code, and fails with a clear message otherwise", () => {
    const given = DeciderSpecification.for(library, "books")
    given([created({ title: "Dune", available: 0 })]).when(invoke("check_out")).thenRejects("no_copies", "no copies")
    expect(() => given([created({ title: "Dune", available: 0 })]).when(invoke("check_out")).thenRejects("other")).toThrow(SpecFailed)
    expect(() => given([created({ title: "Dune", available: 1 })]).when(invoke("check_out")).thenRejects("no_copies"))
      .toThrow(/expected Rejected with code "no_copies", but the command decided/)
  })
})
