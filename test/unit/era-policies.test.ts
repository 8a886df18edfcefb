/**
 * The two era policies (legacy-era.ts, modern-era.ts): how each admits a request, decorates a result and
 * spells a failure. The modern decoration of a result already in JSON text (the hot path) must be the same
 * JSON as the decoration of the object.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit } from "effect"
import pricing from "../../examples/pricing/app.ts"
import { Contended, StoreFailed } from "../../src/domain/errors.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { CATALOG_CACHE, ResourceMissing, ROW_CACHE, Unavailable, type Outcome } from "../../src/http/mcp/dispatcher.ts"
import type { Envelope } from "../../src/http/mcp/era-policy.ts"
import { makeLegacyPolicy } from "../../src/http/mcp/legacy-era.ts"
import { makeModernPolicy } from "../../src/http/mcp/modern-era.ts"
import { ErrorCode, META, methodNotFound, MODERN_VERSIONS, type RpcRequest } from "../../src/http/mcp/protocol.ts"
import { describeServer } from "../../src/http/mcp/server-info.ts"
import { SessionsFull, Subscribed } from "../../src/http/mcp/session-caps.ts"
import type { Session, SessionsShape } from "../../src/http/mcp/sessions.ts"

const catalog = Either.getOrThrow(compileApp(pricing))
const server = describeServer(catalog, [])
const session: Session = { id: "s1", version: "2025-06-18", createdAt: 0 }

const sessionsWhere = (get: SessionsShape["get"]): SessionsShape => ({
  create: () => Effect.succeed(new SessionsFull()),
  get,
  subscribe: () => Effect.succeed(new Subscribed()),
  unsubscribe: () => Effect.void,
  stream: () => Effect.void,
  terminate: () => Effect.succeed(true),
  snapshot: (s) => ({ ...s, lastSeen: 0, streaming: false, subscriptions: new Map(), topics: new Map() }),
  list: () => [],
  count: () => 0
})

const envelope = (e: Partial<Envelope>): Envelope => ({
  meta: undefined,
  protocolVersion: undefined,
  mcpMethod: undefined,
  mcpName: undefined,
  sessionId: undefined,
  client: "127.0.0.1",
  ...e
})
const request = (method: string): RpcRequest => ({ _tag: "Request", id: 1, method, params: {} })

const refusedWith = (exit: Exit.Exit<unknown, unknown>) => (Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined)

describe("the legacy policy", () => {
  const legacy = makeLegacyPolicy(sessionsWhere((id) => (id === "s1" ? Effect.succeed(session) : Effect.succeed(undefined))))

  it.effect("admits initialize without a session, anything else only with a live one and a supported version", () =>
    Effect.gen(function* () {
      expect(yield* legacy.admit(request("initialize"), envelope({}))).toMatchObject({ era: "legacy" })
      expect(yield* legacy.admit(request("tools/list"), envelope({ sessionId: "s1", protocolVersion: "2025-11-25" })))
        .toMatchObject({ era: "legacy", version: "2025-06-18", session: { id: "s1" } })
      const refused = (e: Partial<Envelope>) => Effect.map(Effect.exit(legacy.admit(request("tools/list"), envelope(e))), refusedWith)
      expect(yield* refused({})).toMatchObject({ _tag: "Malformed", error: { code: ErrorCode.InvalidRequest, message: expect.stringMatching(/Mcp-Session-Id header is required/) } })
      expect(yield* refused({ sessionId: "gone" })).toMatchObject({ _tag: "UnknownSession", error: { message: expect.stringMatching(/^Session not found/) } })
      expect(yield* refused({ sessionId: "s1", protocolVersion: "2099-01-01" })).toMatchObject({ _tag: "Malformed", error: { message: expect.stringMatching(/^Unsupported MCP-Protocol-Version/) } })
      const down = makeLegacyPolicy(sessionsWhere(() => Effect.fail(new StoreFailed({ reason: "down" }))))
      const exit = yield* Effect.exit(down.admit(request("tools/list"), envelope({ sessionId: "s1" })))
      expect(refusedWith(exit)).toMatchObject({ _tag: "Unavailable", retryAfter: 1, error: { code: ErrorCode.InternalError, message: "the store is unavailable: down" } })
    }))

  it("decides without an Effect when the sessions are all here (getHere): the same contexts and refusals", () => {
    const here = makeLegacyPolicy({ ...sessionsWhere(() => Effect.die("asked the store")), getHere: (id) => (id === "s1" ? session : undefined) })
    const admitted = here.admit(request("tools/list"), envelope({ sessionId: "s1", protocolVersion: "2025-11-25" }))
    expect(Either.isEither(admitted) && Either.getOrThrow(admitted)).toMatchObject({ era: "legacy", version: "2025-06-18", session: { id: "s1" } })
    const refused = (e: Partial<Envelope>) => {
      const admission = here.admit(request("tools/list"), envelope(e))
      return Either.isEither(admission) && Either.isLeft(admission) ? admission.left : undefined
    }
    expect(refused({})).toMatchObject({ _tag: "Malformed", error: { message: expect.stringMatching(/Mcp-Session-Id header is required/) } })
    expect(refused({ sessionId: "gone" })).toMatchObject({ _tag: "UnknownSession", error: { message: expect.stringMatching(/^Session not found/) } })
    expect(refused({ sessionId: "s1", protocolVersion: "2099-01-01" })).toMatchObject({ _tag: "Malformed", error: { message: expect.stringMatching(/^Unsupported MCP-Protocol-Version/) } })
  })

  it("leaves results as they are and spells failures its way: -32002, unavailable, and an answered error for an unknown method", () => {
    const outcome: Outcome = { result: { tools: [] }, cache: CATALOG_CACHE }
    expect(legacy.decorate(outcome)).toBe(outcome)
    expect(legacy.refuse(new ResourceMissing({ uri: "wo://x/1" }))).toMatchObject({ _tag: "Answered", error: { code: ErrorCode.ResourceNotFound, data: { uri: "wo://x/1" } } })
    expect(legacy.refuse(new Unavailable({ message: "full" }))).toMatchObject({ _tag: "Unavailable", error: { code: ErrorCode.InternalError, message: "full" } })
    expect(legacy.refuse(methodNotFound("server/discover"))).toMatchObject({ _tag: "Answered", error: { code: ErrorCode.MethodNotFound } })
  })
})

describe("the modern policy", () => {
  const modern = makeModernPolicy(server)
  const meta = { [META.protocolVersion]: MODERN_VERSIONS[0], [META.clientCapabilities]: {} }

  it.effect("admits a request with _meta and matching mirror headers", () =>
    Effect.gen(function* () {
      const context = yield* modern.admit(request("tools/list"), envelope({ meta, protocolVersion: MODERN_VERSIONS[0], mcpMethod: "tools/list" }))
      expect(context).toMatchObject({ era: "modern", version: MODERN_VERSIONS[0] })
      expect(context.session).toBeUndefined()
      yield* modern.admitNotice(envelope({}))
    }))

  it("decides every admission without an Effect (the transport serves it at once)", () => {
    const ok = modern.admit(request("tools/list"), envelope({ meta, protocolVersion: MODERN_VERSIONS[0], mcpMethod: "tools/list" }))
    expect(Either.isEither(ok) && Either.isRight(ok)).toBe(true)
    const refused = modern.admit(request("tools/list"), envelope({ meta, protocolVersion: MODERN_VERSIONS[0] }))
    expect(Either.isEither(refused) && Either.isLeft(refused) && refused.left).toMatchObject({ _tag: "Malformed", error: { code: ErrorCode.HeaderMismatch } })
  })

  it("decorates a result with resultType, cache hints and serverInfo: the same JSON from text as from the object", () => {
    const result = { content: [{ type: "text", text: "{\"id\":\"1\"}" }], structuredContent: { id: "1" } }
    for (const cache of [undefined, ROW_CACHE, CATALOG_CACHE]) {
      const fromObject = modern.decorate(cache ? { result, cache } : { result })
      const fromText = modern.decorate(cache ? { result, cache, json: JSON.stringify(result) } : { result, json: JSON.stringify(result) })
      expect(fromObject.json).toBeUndefined()
      expect(fromText.json).toBe(JSON.stringify(fromObject.result))
      expect(fromObject.result).toMatchObject({ resultType: "complete", _meta: { [META.serverInfo]: server.info }, ...(cache ?? {}) })
    }
  })

  it("spells failures its way: -32602 with data.uri, an unknown-method refusal", () => {
    expect(modern.refuse(new ResourceMissing({ uri: "wo://x/1" }))).toMatchObject({ _tag: "Answered", error: { code: ErrorCode.InvalidParams, data: { uri: "wo://x/1" } } })
    expect(modern.refuse(methodNotFound("ping"))).toMatchObject({ _tag: "UnknownMethod", error: { code: ErrorCode.MethodNotFound } })
    // A store error is spelled alike in both eras, from STORE_ERRORS: -32603, its message, Retry-After.
    const contended = new Contended({ reason: "busy" })
    for (const policy of [modern, makeLegacyPolicy(sessionsWhere(() => Effect.succeed(undefined)))]) {
      expect(policy.refuse(contended)).toMatchObject({ _tag: "Unavailable", retryAfter: 1, error: { code: ErrorCode.InternalError, message: "the store is unavailable: busy" } })
    }
    expect(modern.streamShape({ era: "modern", version: MODERN_VERSIONS[0], meta, client: "" })).toEqual({ eventIds: false, priming: false })
  })
})
