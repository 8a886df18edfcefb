/**
 * A tools/call that meets a store error answers isError with its cause in `_meta["writeonce/refusal"]`:
 * `{error: "StoreUnavailable", code, message, retryable, retryAfter}`, so an agent knows it may retry without parsing
 * the text (REST says the same with 503 and Retry-After). Both eras, the direct route (a call without a key) and the
 * fiber's (a keyed call, an app command), and the official SDK client. The store errors are real failures of the
 * durable write: the classic-level log with a fault injected before it (testkit/log-faults.ts).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { IDEMPOTENCY_KEY_META } from "../../src/commands/idempotency.ts"
import { Contended, StoreFailed, type StoreError } from "../../src/domain/errors.ts"
import { library } from "../../testkit/library-app.ts"
import { openSession, rawMcp } from "../../testkit/legacy-client.ts"
import { LogFaults } from "../../testkit/log-faults.ts"
import { MODERN_META, modernHeaders } from "../../testkit/modern-client.ts"
import { http, rawRequest, startServer } from "../../testkit/server.ts"

/** What the next durable write fails with (undefined: it succeeds). */
let failWith: StoreError | undefined
const faults = Layer.succeed(LogFaults, { beforeWrite: () => (failWith === undefined ? Effect.void : Effect.fail(failWith)) })

let server: Awaited<ReturnType<typeof startServer>>
let session = ""
let book = ""
let member = ""
beforeAll(async () => {
  server = await startServer(library, {}, faults)
  book = (await http(`${server.url}/api/books`, { method: "POST", body: { title: "Dune" } })).json.id
  expect((await http(`${server.url}/api/books/${book}/add_copies`, { method: "POST", body: { n: 5 } })).status).toBe(200)
  member = (await http(`${server.url}/api/members`, { method: "POST", body: { name: "Ann" } })).json.id
  session = await openSession(server.url)
})
afterAll(async () => {
  await server?.close()
})

let nextId = 1
const toolCall = (tool: string, args: object, meta?: object) =>
  JSON.stringify({ jsonrpc: "2.0", id: nextId++, method: "tools/call", params: { name: tool, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) } })

/** The same tools/call in each era; `key`: sent with an idempotency key (the call then runs on a fiber). */
const callBoth = async (tool: string, args: object, key?: string) => {
  const keyed = key === undefined ? {} : { [IDEMPOTENCY_KEY_META]: key }
  const legacy = await rawMcp(server.url, toolCall(tool, args, key === undefined ? undefined : keyed), { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" })
  const modern = await rawRequest(`${server.url}/mcp`, { method: "POST", headers: modernHeaders("tools/call", tool), body: toolCall(tool, args, { ...MODERN_META, ...keyed }) })
  return { legacy, modern }
}

/** A failed append's refusal: it may have landed, so its message says how to retry safely. */
const refusal = (code: string, reason: string) => ({
  error: "StoreUnavailable",
  code,
  message: `the store is unavailable: ${reason}; the write may or may not have landed: retry it with the same idempotency key`,
  retryable: true,
  retryAfter: 1
})

describe("a store error on an MCP tools/call", () => {
  it("carries its code and retryable in _meta, both eras, a plain and a keyed call, as REST's 503 says it", async () => {
    failWith = new StoreFailed({ reason: "injected disk error" })
    try {
      const rest = await http(`${server.url}/api/books`, { method: "POST", body: { title: "x" } })
      expect(rest.status).toBe(503)
      expect(rest.headers.get("retry-after")).toBe("1")
      for (const key of [undefined, "store-error-1"]) {
        for (const [era, answer] of Object.entries(await callBoth("books_create", { title: "x" }, key))) {
          const what = `${era}${key === undefined ? "" : ", keyed"}`
          expect(answer.status, what).toBe(200)
          const result = answer.json.result
          expect(result.isError, what).toBe(true)
          expect(result.content[0].text, what).toBe(rest.json.message)
          expect(result._meta?.["writeonce/refusal"], what).toEqual(refusal("StoreFailed", "injected disk error"))
        }
      }
    } finally {
      failWith = undefined
    }
  })

  it("names the cause: an app command refused as contended answers code Contended", async () => {
    failWith = new Contended({ reason: "the command lend's rows kept changing on other nodes (64 attempts); retry" })
    try {
      for (const [era, answer] of Object.entries(await callBoth("lend", { book, member }))) {
        const result = answer.json.result
        expect(result.isError, era).toBe(true)
        expect(result._meta?.["writeonce/refusal"], era).toEqual(refusal("Contended", "the command lend's rows kept changing on other nodes (64 attempts); retry"))
      }
    } finally {
      failWith = undefined
    }
    // The store is back: the same call succeeds, and nothing of the failed ones was written.
    const lent = await callBoth("lend", { book, member })
    expect(lent.legacy.json.result.isError).toBeUndefined()
    expect((await http(`${server.url}/api/books/${book}`)).json).toMatchObject({ copies: 5, available: 3 })
  })

  it("the SDK v1 client returns the store error with its code (it does not throw)", async () => {
    const client = new Client({ name: "store-error-test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)))
    try {
      await client.listTools()
      failWith = new StoreFailed({ reason: "injected disk error" })
      const result = await client.callTool({ name: "books_create", arguments: { title: "x" } })
      expect(result.isError).toBe(true)
      expect((result._meta as Record<string, unknown>)["writeonce/refusal"]).toEqual(refusal("StoreFailed", "injected disk error"))
    } finally {
      failWith = undefined
      await client.close()
    }
  })
})
