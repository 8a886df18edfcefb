/**
 * The store errors and their one table (domain/store-errors.ts): each cause keeps the message and the REST answer
 * StoreUnavailable had (503, Retry-After, `error: "StoreUnavailable"`), and counts in `wo_refusals_total` under its
 * cause. Over MCP (transport.ts, through the era policies' refusals) a store error or the session cap is a 503
 * that now carries Retry-After, and DELETE's store failure is spelled as the other store failures are (-32603).
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import pricing from "../../examples/pricing/app.ts"
import { loadSettings } from "../../src/support/config.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import { isStoreError, STORE_ERRORS, withReason, type StoreError, type StoreErrorTag } from "../../src/domain/errors.ts"
import type { EdgeRequest, EdgeResponse } from "../../src/http/edge/edge-types.ts"
import { SessionsFull } from "../../src/http/mcp/session-caps.ts"
import type { Session, SessionsShape } from "../../src/http/mcp/sessions.ts"
import { ErrorCode, LATEST_LEGACY } from "../../src/http/mcp/protocol.ts"
import { OpenStreams } from "../../src/http/streams/open-streams.ts"
import { errorResponse } from "../../src/http/rest/rest.ts"
import { makeMetrics } from "../../src/metrics/metrics.ts"
import { makeRegistry } from "../../src/subscriptions/registry.ts"
import { makeRows } from "../../src/projections/rows/rows.ts"
import { parsePrometheusText } from "../../testkit/prom-text.ts"
import { makeRoute, OpenStreamsDefault } from "./mcp-route.ts"

const TAGS = Object.keys(STORE_ERRORS) as ReadonlyArray<StoreErrorTag>
const make = (tag: StoreErrorTag, reason = "disk gone"): StoreError => new STORE_ERRORS[tag].make({ reason })

const bodyOf = (response: EdgeResponse) => {
  if (response._tag !== "Buffered") throw new Error("expected a buffered response")
  return JSON.parse(response.body ?? "null")
}

describe("the store errors", () => {
  it("each cause is its own tag, says what StoreUnavailable said, and keeps its cause when reworded", () => {
    expect(new Set(TAGS.map((tag) => make(tag)._tag))).toEqual(new Set(TAGS))
    for (const tag of TAGS) {
      const e = make(tag)
      expect(isStoreError(e)).toBe(true)
      expect(e.message).toBe("the store is unavailable: disk gone")
      expect(withReason(e, "elsewhere")).toMatchObject({ _tag: tag, reason: "elsewhere" })
    }
    expect(isStoreError({ _tag: "StoreFailed", reason: "a look-alike" })).toBe(false)
    expect(isStoreError(new Error("x"))).toBe(false)
  })

  it("answer on REST as StoreUnavailable did: 503, Retry-After: 1, the same body", () => {
    for (const tag of TAGS) {
      const response = errorResponse(make(tag))
      expect(response).toMatchObject({ status: 503, headers: { "retry-after": "1" } })
      expect(bodyOf(response)).toEqual({ error: "StoreUnavailable", message: "the store is unavailable: disk gone" })
    }
  })

  it("count in wo_refusals_total as StoreUnavailable, with the cause as the code", async () => {
    const metrics = makeMetrics()
    for (const tag of ["Overloaded", "Overloaded", "Contended"] as const) metrics.answered(Exit.fail(make(tag)))
    const m = parsePrometheusText(await metrics.render())
    expect(m.value("wo_refusals_total", { error: "StoreUnavailable", code: "Overloaded" })).toBe(2)
    expect(m.value("wo_refusals_total", { error: "StoreUnavailable", code: "Contended" })).toBe(1)
  })
})

// ---------------------------------------------------------------------------------------------------
// MCP: the transport gives a refusal its status, and Retry-After when the refusal says a retry can succeed.

const session: Session = { id: "s1", version: LATEST_LEGACY, createdAt: 0 }

const sessionsWith = (overrides: Partial<SessionsShape>): SessionsShape => ({
  create: () => Effect.succeed(session),
  get: () => Effect.succeed(session),
  subscribe: () => Effect.die("not used"),
  unsubscribe: () => Effect.void,
  stream: () => Effect.void,
  terminate: () => Effect.succeed(true),
  snapshot: (s) => ({ ...s, lastSeen: 0, streaming: false, subscriptions: new Map(), topics: new Map() }),
  list: () => [],
  count: () => 0,
  ...overrides
})

const Route = (sessions: SessionsShape) =>
  Effect.gen(function* () {
    const catalog = yield* Catalog
    const settings = yield* loadSettings({ dataDir: "/nonexistent" }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))
    return makeRoute({
      catalog,
      settings,
      registry: makeRegistry(),
      rows: makeRows(new Map(), 0, { rows: 0, events: 0, tailEvents: 0, millis: 0 }),
      streams: yield* OpenStreams,
      sessions
    })
  })
const layer = Layer.mergeAll(Catalog.layer(pricing), OpenStreamsDefault)

const request = (method: "POST" | "DELETE", body: unknown, headers: Record<string, string> = {}): EdgeRequest => ({
  method,
  path: "/mcp",
  query: new URLSearchParams(),
  headers: { accept: "application/json, text/event-stream", "content-type": "application/json", ...headers },
  body: Buffer.from(body === undefined ? "" : JSON.stringify(body)),
  remoteAddress: "127.0.0.1"
})
const initialize = request("POST", { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: LATEST_LEGACY } })
const toolsList = request("POST", { jsonrpc: "2.0", id: 2, method: "tools/list", params: {} }, { "mcp-session-id": "s1" })
const terminate = request("DELETE", undefined, { "mcp-session-id": "s1" })

/** A 503 with Retry-After: 1 and a JSON-RPC -32603 error naming `message`. */
const unavailable = (response: EdgeResponse, id: number | null, message: RegExp) => {
  expect(response).toMatchObject({ status: 503, headers: { "retry-after": "1" } })
  expect(bodyOf(response)).toMatchObject({ jsonrpc: "2.0", id, error: { code: ErrorCode.InternalError, message: expect.stringMatching(message) } })
}

describe("MCP refusals of a store that is down", () => {
  it.effect("a legacy request whose session cannot be read: 503 with Retry-After, for every cause", () =>
    Effect.gen(function* () {
      for (const tag of TAGS) {
        const route = yield* Route(sessionsWith({ get: () => Effect.fail(make(tag)) }))
        unavailable(yield* route(toolsList), 2, /^the store is unavailable: disk gone$/)
      }
    }).pipe(Effect.provide(layer)))

  it.effect("initialize when the session cannot be stored, or WO_MAX_SESSIONS is reached: 503 with Retry-After", () =>
    Effect.gen(function* () {
      const down = yield* Route(sessionsWith({ create: () => Effect.fail(make("StoreFailed")) }))
      unavailable(yield* down(initialize), 1, /^the store is unavailable: disk gone$/)
      const full = yield* Route(sessionsWith({ create: () => Effect.succeed(new SessionsFull()) }))
      unavailable(yield* full(initialize), 1, /^too many sessions \(WO_MAX_SESSIONS=\d+\); retry later$/)
    }).pipe(Effect.provide(layer)))

  it.effect("DELETE when the session cannot be removed: 503 with Retry-After, -32603 as every store failure", () =>
    Effect.gen(function* () {
      const route = yield* Route(sessionsWith({ terminate: () => Effect.fail(make("StoreFailed")) }))
      unavailable(yield* route(terminate), null, /^the store is unavailable: disk gone$/)
      const fine = yield* Route(sessionsWith({}))
      expect(yield* fine(terminate)).toMatchObject({ status: 200 })
    }).pipe(Effect.provide(layer)))
})
