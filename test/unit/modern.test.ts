/**
 * The modern era's request validation (modern-era.ts over headers.ts, behind transport.ts), in the order
 * conformance expects: `_meta`, the version header, the version itself, then the mirror headers. A
 * stub dispatcher answers every method that gets through, so what is tested is only the envelope.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import pricing from "../../examples/pricing/app.ts"
import { loadSettings } from "../../src/support/config.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import type { EdgeRequest, EdgeResponse } from "../../src/http/edge/edge-types.ts"
import type { Dispatcher } from "../../src/http/mcp/dispatcher.ts"
import { ErrorCode, META, MODERN_VERSIONS, type RpcMessage } from "../../src/http/mcp/protocol.ts"
import { OpenStreams } from "../../src/http/streams/open-streams.ts"
import { makeRegistry } from "../../src/subscriptions/registry.ts"
import { makeRows } from "../../src/projections/rows/rows.ts"
import { makeModern, OpenStreamsDefault } from "./mcp-route.ts"

const VERSION = MODERN_VERSIONS[0]

const echo: Dispatcher = {
  tools: [],
  dispatch: ({ method, params }) => Effect.succeed({ _tag: "Result", outcome: { result: { method, name: params.name ?? null } } })
}

const Modern = Effect.gen(function* () {
  const catalog = yield* Catalog
  const settings = yield* loadSettings({ dataDir: "/nonexistent" }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))
  return makeModern({
    catalog,
    dispatcher: echo,
    registry: makeRegistry(),
    rows: makeRows(new Map(), 0, { rows: 0, events: 0, tailEvents: 0, millis: 0 }),
    streams: yield* OpenStreams,
    settings
  })
})
const layer = Layer.mergeAll(Catalog.layer(pricing), OpenStreamsDefault)

const capabilities = { [META.protocolVersion]: VERSION, [META.clientCapabilities]: {} }

const edge = (headers: Record<string, string>): EdgeRequest => ({
  method: "POST",
  path: "/mcp",
  query: new URLSearchParams(),
  headers,
  body: Buffer.alloc(0),
  remoteAddress: "127.0.0.1"
})

/** The JSON body of a buffered answer. */
const body = (response: EdgeResponse) => {
  if (response._tag !== "Buffered") throw new Error("expected a buffered response")
  return JSON.parse(response.body ?? "null")
}

const post = (method: string, params: Record<string, unknown>, headers: Record<string, string>) =>
  Effect.flatMap(Modern, (modern) => modern.post({ _tag: "Request", id: 1, method, params }, edge(headers)))

const refused = (response: EdgeResponse, code: number, message: RegExp) => {
  expect(response.status).toBe(400)
  expect(body(response)).toMatchObject({ jsonrpc: "2.0", id: 1, error: { code } })
  expect(body(response).error.message).toMatch(message)
}

describe("modern request validation", () => {
  it.effect("a request with _meta and every mirror header is dispatched and decorated", () =>
    Effect.gen(function* () {
      const response = yield* post("tools/call", { name: "products_get", arguments: { id: "1" }, _meta: capabilities }, {
        "mcp-protocol-version": VERSION,
        "mcp-method": "tools/call",
        "mcp-name": "products_get"
      })
      expect(response.status).toBe(200)
      expect(body(response)).toMatchObject({
        id: 1,
        result: { method: "tools/call", name: "products_get", resultType: "complete", _meta: { [META.serverInfo]: { name: "pricing" } } }
      })
    }).pipe(Effect.provide(layer)))

  it.effect("_meta without a protocol version or client capabilities is invalid params", () =>
    Effect.gen(function* () {
      const h = { "mcp-protocol-version": VERSION, "mcp-method": "tools/list" }
      refused(yield* post("tools/list", {}, h), ErrorCode.InvalidParams, /params._meta must carry/)
      refused(yield* post("tools/list", { _meta: { [META.protocolVersion]: VERSION } }, h), ErrorCode.InvalidParams, /clientCapabilities/)
    }).pipe(Effect.provide(layer)))

  it.effect("the MCP-Protocol-Version header must repeat the body's version", () =>
    Effect.gen(function* () {
      refused(yield* post("tools/list", { _meta: capabilities }, { "mcp-method": "tools/list" }), ErrorCode.HeaderMismatch, /MCP-Protocol-Version header value ''/)
      refused(
        yield* post("tools/list", { _meta: capabilities }, { "mcp-protocol-version": "2025-11-25", "mcp-method": "tools/list" }),
        ErrorCode.HeaderMismatch,
        /does not match body value/
      )
    }).pipe(Effect.provide(layer)))

  it.effect("a version that is not a modern revision, consistently sent, is unsupported", () =>
    Effect.gen(function* () {
      const response = yield* post("tools/list", { _meta: { ...capabilities, [META.protocolVersion]: "2025-11-25" } }, {
        "mcp-protocol-version": "2025-11-25",
        "mcp-method": "tools/list"
      })
      refused(response, ErrorCode.UnsupportedProtocolVersion, /Unsupported protocol version/)
      expect(body(response).error.data).toEqual({ supported: [...MODERN_VERSIONS], requested: "2025-11-25" })
    }).pipe(Effect.provide(layer)))

  it.effect("a missing or different Mcp-Method or Mcp-Name is a header mismatch", () =>
    Effect.gen(function* () {
      const params = { name: "products_get", _meta: capabilities }
      const base = { "mcp-protocol-version": VERSION }
      refused(yield* post("tools/call", params, { ...base, "mcp-name": "products_get" }), ErrorCode.HeaderMismatch, /^Header mismatch: the Mcp-Method header is required/)
      refused(yield* post("tools/call", params, { ...base, "mcp-method": "tools/list", "mcp-name": "products_get" }), ErrorCode.HeaderMismatch, /Mcp-Method/)
      refused(yield* post("tools/call", params, { ...base, "mcp-method": "tools/call" }), ErrorCode.HeaderMismatch, /Mcp-Name header is required/)
      refused(yield* post("tools/call", params, { ...base, "mcp-method": "tools/call", "mcp-name": "products_list" }), ErrorCode.HeaderMismatch, /Mcp-Name/)
      const encoded = `=?base64?${Buffer.from("products_get").toString("base64")}?=`
      expect((yield* post("tools/call", params, { ...base, "mcp-method": "tools/call", "mcp-name": encoded })).status).toBe(200)
    }).pipe(Effect.provide(layer)))

  it.effect("notifications and responses are accepted with 202; GET is 405", () =>
    Effect.gen(function* () {
      const modern = yield* Modern
      const notification: RpcMessage = { _tag: "Notification", method: "notifications/cancelled", params: {} }
      // The era is the header's: the SDK v2 client's notifications/cancelled carries no Mcp-Method.
      const modernHeader = { "mcp-protocol-version": VERSION }
      expect(yield* modern.post(notification, edge(modernHeader))).toEqual({ _tag: "Buffered", status: 202, headers: {} })
      expect(yield* modern.post({ _tag: "Response" }, edge(modernHeader))).toMatchObject({ status: 202 })
      const get = yield* modern.other({ ...edge(modernHeader), method: "GET" })
      expect(get.status).toBe(405)
      expect(get.headers).toMatchObject({ allow: "POST" })
    }).pipe(Effect.provide(layer)))
})
