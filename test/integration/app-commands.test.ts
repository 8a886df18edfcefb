/**
 * App commands (commands across entity types) on every surface: `POST /api/_commands/<name>` and the MCP tool
 * `<name>` (legacy and modern eras) answer the same bytes; a refusal, bad params or an unknown command write
 * nothing; every event of a command carries its name and one correlation, in one atomic write.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Chunk, Effect, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EventLog } from "../../src/log/event-log.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { openSession, rawMcp, rpc } from "../../testkit/legacy-client.ts"
import { MODERN_META, modernHeaders } from "../../testkit/modern-client.ts"
import { http, rawRequest, startServer } from "../../testkit/server.ts"
import { library } from "../../testkit/library-app.ts"

let server: Awaited<ReturnType<typeof startServer>>
beforeAll(async () => {
  server = await startServer(library)
})
afterAll(async () => {
  await server?.close()
})

const post = (path: string, body: unknown) => http(`${server.url}${path}`, { method: "POST", body })
const events = () =>
  server.runtime.runPromise(Effect.flatMap(EventLog, (log) => Stream.runCollect(log.readFrom(1)))).then((c) => Chunk.toReadonlyArray(c) as ReadonlyArray<StoredEvent>)
const book = async (copies: number) => {
  const { id } = (await post("/api/books", { title: `b${copies}` })).json
  if (copies > 0) await post(`/api/books/${id}/add_copies`, { n: copies })
  return id as string
}
const member = async () => (await post("/api/members", { name: "Ann" })).json.id as string
/** The body a command answers, rebuilt from what GET serves for each row: the same bytes. */
const expectedBody = async (correlation: string, changes: ReadonlyArray<{ type: string; id: string; kind: string }>) => {
  const parts: Array<string> = []
  for (const c of changes) {
    const get = await http(`${server.url}/api/${c.type}/${c.id}`)
    parts.push(`{"type":"${c.type}","id":"${c.id}","kind":"${c.kind}","version":${get.json.version},"row":${get.text}}`)
  }
  return `{"command":"lend","correlation":${JSON.stringify(correlation)},"changes":[${parts.join(",")}]}`
}

let rpcId = 1
const toolCall = (tool: string, args: object, meta?: object) =>
  JSON.stringify({ jsonrpc: "2.0", id: rpcId++, method: "tools/call", params: { name: tool, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) } })

describe("an app command over REST", () => {
  it("200 with every change; both rows move in one atomic write whose events carry the command and one correlation", async () => {
    const b = await book(2)
    const m = await member()
    const before = (await events()).length
    const lent = await post("/api/_commands/lend", { book: b, member: m })
    expect(lent.status).toBe(200)
    const { correlation, changes } = lent.json
    expect(correlation).toMatch(/^[0-9a-f-]{36}$/)
    expect(changes.map((c: any) => [c.type, c.kind])).toEqual([["books", "invoked"], ["loans", "created"]])
    expect(changes[0].row).toMatchObject({ id: b, available: 1, copies: 2 })
    expect(changes[1].row).toMatchObject({ book: b, member: m, status: "out", version: 1 })
    expect(lent.text).toBe(await expectedBody(correlation, changes))
    const written = (await events()).slice(before)
    expect(written.map((e) => [e.type, e.kind, e.command, e.correlation, e.actor])).toEqual([
      ["books", "invoked", "lend", correlation, { client: "rest" }],
      ["loans", "created", "lend", correlation, { client: "rest" }]
    ])
    expect(written[1].seq).toBe(written[0].seq + 1)
  })

  it("a refusal (a method's reject or decide's own) is 422 with its code, and writes nothing", async () => {
    const b = await book(1)
    const m = await member()
    expect((await post("/api/_commands/lend", { book: b, member: m })).status).toBe(200)
    const before = await events()
    const loans = (await http(`${server.url}/api/loans`)).json.items.length
    const noCopies = await post("/api/_commands/lend", { book: b, member: m })
    expect(noCopies.status).toBe(422)
    expect(noCopies.json).toEqual({ error: "Rejected", message: "no copies available", code: "no_copies" })
    const noMember = await post("/api/_commands/lend", { book: b, member: "999" })
    expect(noMember.status).toBe(422)
    expect(noMember.json).toEqual({ error: "Rejected", message: "no member 999", code: "no_member" })
    expect(await events()).toEqual(before)
    expect((await http(`${server.url}/api/loans`)).json.items.length).toBe(loans)
  })

  it("a change refused after earlier ones were decided (or a missing row) writes nothing of the command", async () => {
    const b = await book(3)
    const empty = await book(0)
    const m = await member()
    const before = await events()
    const pair = await post("/api/_commands/lend_pair", { book: b, other: empty, member: m })
    expect(pair.status).toBe(422)
    expect(pair.json.code).toBe("no_copies")
    const missingBook = await post("/api/_commands/lend", { book: "999", member: m })
    expect(missingBook.status).toBe(404)
    expect((await post("/api/_commands/return_book", { loan: "999" })).json.code).toBe("no_loan")
    expect(await events()).toEqual(before)
    expect((await http(`${server.url}/api/books/${b}`)).json).toMatchObject({ available: 3, version: 2 })
    // The same command on two books with copies writes its four events.
    const other = await book(1)
    const both = await post("/api/_commands/lend_pair", { book: b, other, member: m })
    expect(both.json.changes.map((c: any) => `${c.type}/${c.kind}`)).toEqual(["books/invoked", "loans/created", "books/invoked", "loans/created"])
    const loanIds = both.json.changes.filter((c: any) => c.type === "loans").map((c: any) => Number(c.id))
    expect(loanIds[1]).toBe(loanIds[0] + 1)
  })

  it("decide throwing is the author's bug: 500 MethodFailed naming the command, nothing written", async () => {
    const b = await book(1)
    const before = await events()
    const failed = await post("/api/_commands/broken", { book: b })
    expect(failed.status).toBe(500)
    expect(failed.json).toEqual({ error: "MethodFailed", message: "broken failed: cannot lend b1" })
    expect(await events()).toEqual(before)
  })

  it("400 for params that do not decode, 404 for an unknown command or one not served over REST, 405 for GET", async () => {
    const bad = await post("/api/_commands/lend", { book: 1 })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toBe("ValidationFailed")
    expect((await post("/api/_commands/lend", { book: "1", member: "1", extra: true })).status).toBe(400)
    expect((await post("/api/_commands/nope", {})).status).toBe(404)
    expect((await post("/api/_commands/hidden", {})).status).toBe(404)
    expect((await http(`${server.url}/api/_commands/lend`)).status).toBe(405)
  })
})

describe("an app command over MCP", () => {
  it("is a tool in both eras, with its params as inputSchema; a hidden command is not", async () => {
    const session = await openSession(server.url)
    const legacy = await rawMcp(server.url, JSON.stringify({ jsonrpc: "2.0", id: rpcId++, method: "tools/list" }), { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" })
    const modern = await rawRequest(`${server.url}/mcp`, { method: "POST", headers: modernHeaders("tools/list"), body: JSON.stringify({ jsonrpc: "2.0", id: rpcId++, method: "tools/list", params: { _meta: MODERN_META } }) })
    for (const [era, answer] of Object.entries({ legacy, modern })) {
      const tools = answer.json.result.tools as Array<any>
      const lend = tools.find((t) => t.name === "lend")
      expect(lend, era).toBeDefined()
      expect(lend.inputSchema, era).toMatchObject({ type: "object", required: ["book", "member"], additionalProperties: false })
      expect(Object.keys(lend.inputSchema.properties), era).toEqual(["book", "member"])
      expect(tools.some((t) => t.name === "return_book"), era).toBe(true)
      expect(tools.some((t) => t.name === "hidden"), era).toBe(false)
    }
  })

  it("answers the same bytes as REST (text and structuredContent) and refuses as a method does, both eras", async () => {
    const session = await openSession(server.url)
    const calls = {
      legacy: (args: object) => rawMcp(server.url, toolCall("lend", args), { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" }),
      modern: (args: object) => rawRequest(`${server.url}/mcp`, { method: "POST", headers: modernHeaders("tools/call", "lend"), body: toolCall("lend", args, MODERN_META) })
    }
    for (const [era, call] of Object.entries(calls)) {
      const b = await book(1)
      const m = await member()
      const result = (await call({ book: b, member: m })).json.result
      expect(result.isError, era).toBeUndefined()
      const text = result.content[0].text
      expect(text, era).toBe(await expectedBody(result.structuredContent.correlation, result.structuredContent.changes))
      expect(result.structuredContent, era).toEqual(JSON.parse(text))
      const before = await events()
      const refused = (await call({ book: b, member: m })).json.result
      expect(refused.isError, era).toBe(true)
      expect(refused.content[0].text, era).toBe(`no copies available (Rejected: no_copies). Read books ${b} with books_get to see its current state before trying again.`)
      expect(refused._meta["writeonce/refusal"], era).toEqual({ error: "Rejected", code: "no_copies", message: "no copies available" })
      expect(await events(), era).toEqual(before)
      const invalid = (await call({ book: 5 })).json.result
      expect(invalid.isError, era).toBe(true)
    }
  })

  it("the official SDK v1 client calls it: the result matches the tool's outputSchema, a refusal is returned", async () => {
    const b = await book(1)
    const m = await member()
    const client = new Client({ name: "commands-test", version: "1.0.0" })
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`))
    await client.connect(transport)
    try {
      await client.listTools()
      const before = (await events()).length
      const lent = await client.callTool({ name: "lend", arguments: { book: b, member: m } })
      expect(lent.isError).toBeFalsy()
      // Each of the command's events names the client that ran it, with its session.
      const actor = { client: { name: "commands-test", version: "1.0.0", session: transport.sessionId } }
      expect((await events()).slice(before).map((e) => [e.command, e.actor])).toEqual([["lend", actor], ["lend", actor]])
      expect((lent.structuredContent as any).changes.map((c: any) => c.type)).toEqual(["books", "loans"])
      const refused = await client.callTool({ name: "lend", arguments: { book: b, member: m } })
      expect(refused.isError).toBe(true)
      expect((refused._meta as Record<string, unknown>)["writeonce/refusal"]).toMatchObject({ code: "no_copies" })
    } finally {
      await client.close()
    }
  })

  it("the catalog describes the commands: the resource wo://schema/_commands and the server's instructions", async () => {
    const listed = (await rpc(server.url, "resources/list")).json.result.resources as Array<{ uri: string }>
    expect(listed.map((r) => r.uri)).toContain("wo://schema/_commands")
    const read = (await rpc(server.url, "resources/read", { uri: "wo://schema/_commands" })).json.result.contents[0]
    const { commands } = JSON.parse(read.text)
    expect(commands.map((c: any) => c.name)).toEqual(["lend", "lend_pair", "return_book", "broken"])
    expect(commands[0]).toMatchObject({ tool: "lend", rest: "POST /api/_commands/lend", jsonSchema: { required: ["book", "member"] } })
    const init = await http(`${server.url}/mcp`, {
      method: "POST",
      headers: { accept: "application/json, text/event-stream" },
      body: { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }
    })
    expect(init.json.result.instructions).toMatch(/tools lend, lend_pair, return_book, broken\./)
  })
})
