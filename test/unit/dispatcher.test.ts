/**
 * The dispatcher's one method table (dispatcher.ts): every method is served by the eras its entry names and
 * is unknown to the other; tools/call answers a result, or a progress stream when the request asks for
 * progress; params are checked before any handler work. Stand-ins for tools, resources and sessions.
 */
import { describe, expect, it } from "@effect/vitest"
import { Op } from "../../src/access/grants.ts"
import { ConfigProvider, Effect, Either, Exit, Option } from "effect"
import pricing from "../../examples/pricing/app.ts"
import { loadSettings } from "../../src/support/config.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { makeDispatcher, type CallContext, type Failure } from "../../src/http/mcp/dispatcher.ts"
import { ErrorCode, type Era, Method, MODERN_VERSIONS, type RpcRequest } from "../../src/http/mcp/protocol.ts"
import type { Resources } from "../../src/http/mcp/resources.ts"
import { describeServer } from "../../src/http/mcp/server-info.ts"
import { Subscribed } from "../../src/http/mcp/session-caps.ts"
import type { Session, SessionsShape } from "../../src/http/mcp/sessions.ts"
import type { Tool } from "../../src/http/mcp/tools.ts"
import { ToolsCursor } from "../../src/projections/cursor.ts"

const catalog = Either.getOrThrow(compileApp(pricing))
const settings = Effect.runSync(loadSettings({ dataDir: "/nonexistent" }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))))

const session: Session = { id: "s1", version: "2025-06-18", createdAt: 0 }
const sessions: SessionsShape = {
  create: (version) => Effect.succeed({ ...session, version }),
  get: () => Effect.succeed(session),
  subscribe: () => Effect.succeed(new Subscribed()),
  unsubscribe: () => Effect.void,
  stream: () => Effect.void,
  terminate: () => Effect.succeed(true),
  snapshot: (s) => ({ ...s, lastSeen: 0, streaming: false, subscriptions: new Map(), topics: new Map() }),
  list: () => [],
  count: () => 0
}
const resources: Resources = {
  list: () => Effect.succeed({ resources: [] }),
  templates: () => [],
  read: (uri) => (uri === "wo://products/1" ? Effect.succeed({ uri, mimeType: "application/json", text: "{}" }) : Effect.fail({ _tag: "NotFound" }))
}
/** 150 tools that echo their arguments, so tools/list has two pages. */
const tools: ReadonlyArray<Tool> = Array.from({ length: 150 }, (_, i) => ({
  definition: { name: `t${i}`, title: "", description: "", inputSchema: {}, outputSchema: {}, annotations: { title: "" } },
  operation: Op.command(`t${i}`),
  call: (args) => Effect.succeed({ result: { content: [{ type: "text", text: JSON.stringify(args) }] } })
}))

const dispatcher = makeDispatcher({
  catalog,
  tools,
  resources,
  sessions,
  server: describeServer(catalog, tools.map((t) => t.definition.name)),
  checkpoint: () => 0,
  settings
})

const context = (era: Era, meta?: Record<string, unknown>): CallContext =>
  era === "legacy"
    ? { era, version: session.version, session, meta, client: "127.0.0.1" }
    : { era, version: MODERN_VERSIONS[0], meta, client: "127.0.0.1" }

const request = (method: string, params: Record<string, unknown> = {}): RpcRequest => ({ _tag: "Request", id: 1, method, params })

const failure = (exit: Exit.Exit<unknown, Failure>) => {
  if (Exit.isSuccess(exit)) return expect.fail("expected a failure")
  return Option.getOrThrow(Exit.causeOption(exit).pipe(Option.flatMap((c) => (c._tag === "Fail" ? Option.some(c.error) : Option.none()))))
}

const PARAMS: Record<string, Record<string, unknown>> = {
  [Method.initialize]: { protocolVersion: "2025-06-18" },
  [Method.resourcesSubscribe]: { uri: "wo://products/1" },
  [Method.resourcesUnsubscribe]: { uri: "wo://products/1" },
  [Method.listen]: { notifications: { resourceSubscriptions: ["wo://products/1"] } },
  [Method.toolsCall]: { name: "t0", arguments: {} },
  [Method.resourcesRead]: { uri: "wo://products/1" }
}

describe("the method table", () => {
  const eras: Record<string, ReadonlyArray<Era>> = {
    [Method.initialize]: ["legacy"],
    [Method.ping]: ["legacy"],
    [Method.resourcesSubscribe]: ["legacy"],
    [Method.resourcesUnsubscribe]: ["legacy"],
    [Method.discover]: ["modern"],
    [Method.listen]: ["modern"],
    [Method.toolsList]: ["legacy", "modern"],
    [Method.toolsCall]: ["legacy", "modern"],
    [Method.resourcesList]: ["legacy", "modern"],
    [Method.resourceTemplatesList]: ["legacy", "modern"],
    [Method.resourcesRead]: ["legacy", "modern"]
  }

  it("names every method of protocol.ts", () => expect(Object.keys(eras).sort()).toEqual(Object.values(Method).sort()))

  for (const [method, served] of Object.entries(eras)) {
    it.effect(`${method}: served by ${served.join(" and ")}, unknown to the other era`, () =>
      Effect.gen(function* () {
        for (const era of ["legacy", "modern"] as const) {
          const exit = yield* Effect.exit(dispatcher.dispatch(request(method, PARAMS[method]), context(era)))
          if (served.includes(era)) expect(Exit.isSuccess(exit)).toBe(true)
          else expect(failure(exit)).toMatchObject({ _tag: "RpcError", code: ErrorCode.MethodNotFound })
        }
      }))
  }

  it.effect("an unknown method, and one inherited from Object.prototype, are unknown", () =>
    Effect.gen(function* () {
      for (const method of ["prompts/list", "toString", "__proto__"]) {
        expect(failure(yield* Effect.exit(dispatcher.dispatch(request(method), context("modern"))))).toMatchObject({ code: ErrorCode.MethodNotFound })
      }
    }))
})

describe("handlers", () => {
  it.effect("tools/call: a result; with a progress token, a progress stream; malformed params are -32602", () =>
    Effect.gen(function* () {
      const plain = yield* dispatcher.dispatch(request(Method.toolsCall, { name: "t1", arguments: { a: 1 } }), context("modern"))
      expect(plain).toMatchObject({ _tag: "Result", outcome: { result: { content: [{ text: `{"a":1}` }] } } })
      const progress = yield* dispatcher.dispatch(request(Method.toolsCall, { name: "t1" }), context("legacy", { progressToken: "p" }))
      expect(progress).toMatchObject({ _tag: "Progress", token: "p" })
      for (const params of [{ name: "t1", arguments: null }, { name: "t1", arguments: [1] }, { name: 3 }, {}]) {
        expect(failure(yield* Effect.exit(dispatcher.dispatch(request(Method.toolsCall, params), context("legacy"))))).toMatchObject({ code: ErrorCode.InvalidParams })
      }
      expect(failure(yield* Effect.exit(dispatcher.dispatch(request(Method.toolsCall, { name: "nope" }), context("legacy")))))
        .toMatchObject({ code: ErrorCode.InvalidParams, message: "Unknown tool: nope" })
    }))

  it.effect("tools/list pages with the cursor module's cursors; a foreign cursor is -32602", () =>
    Effect.gen(function* () {
      const first = yield* dispatcher.dispatch(request(Method.toolsList), context("legacy"))
      if (first._tag !== "Result") return expect.fail("expected a result")
      const { tools: page, nextCursor } = first.outcome.result as { tools: Array<unknown>; nextCursor: string }
      expect(page).toHaveLength(100)
      expect(Option.getOrThrow(ToolsCursor.decode(nextCursor))).toBe(100)
      const second = yield* dispatcher.dispatch(request(Method.toolsList, { cursor: nextCursor }), context("modern"))
      expect(second).toMatchObject({ _tag: "Result", outcome: { result: { tools: { length: 50 } } } })
      expect((second as { outcome: { result: object } }).outcome.result).not.toHaveProperty("nextCursor")
      for (const cursor of ["%%%", ToolsCursor.encode(151), Buffer.from("-1").toString("base64url")]) {
        expect(failure(yield* Effect.exit(dispatcher.dispatch(request(Method.toolsList, { cursor }), context("modern"))))).toMatchObject({ code: ErrorCode.InvalidParams })
      }
    }))

  it.effect("resources/read of a missing resource fails with ResourceMissing, for each era to spell", () =>
    Effect.gen(function* () {
      expect(failure(yield* Effect.exit(dispatcher.dispatch(request(Method.resourcesRead, { uri: "wo://products/9" }), context("legacy")))))
        .toMatchObject({ _tag: "ResourceMissing", uri: "wo://products/9" })
    }))

  it.effect("initialize opens a session at the negotiated version; listen answers a listen request", () =>
    Effect.gen(function* () {
      const init = yield* dispatcher.dispatch(request(Method.initialize, { protocolVersion: "1999-01-01" }), context("legacy"))
      expect(init).toMatchObject({ _tag: "Result", opened: { version: "2025-11-25" }, outcome: { result: { protocolVersion: "2025-11-25" } } })
      const listen = yield* dispatcher.dispatch(request(Method.listen, PARAMS[Method.listen]), context("modern"))
      expect(listen).toMatchObject({ _tag: "Listen", listen: { id: 1, topics: [{ uri: "wo://products/1" }], listChanges: false } })
    }))
})
