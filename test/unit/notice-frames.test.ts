/**
 * Frames are built once per change and era (notice-frames.ts), however many streams a change reaches: every
 * legacy GET stream gets the same bytes, every listen stream the same prefix and suffix around its own id.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Exit, Layer, Scope } from "effect"
import pricing from "../../examples/pricing/app.ts"
import { loadSettings } from "../../src/support/config.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import type { EdgeResponse } from "../../src/http/edge/edge-types.ts"
import { makeListenStreams } from "../../src/http/mcp/listen-stream.ts"
import { frameBuilds } from "../../src/http/mcp/notice-frames.ts"
import { makeSessionStream } from "../../src/http/mcp/session-stream.ts"
import type { Session, SessionsShape } from "../../src/http/mcp/sessions.ts"
import { OpenStreams } from "../../src/http/streams/open-streams.ts"
import { OpenStreamsDefault } from "./mcp-route.ts"
import { makeStreamHub } from "../../src/http/streams/stream-hub.ts"
import { makeRegistry } from "../../src/subscriptions/registry.ts"
import { makeRows } from "../../src/projections/rows/rows.ts"
import { FakeSocket } from "../../testkit/fake-socket.ts"

const N = 25
const URI = "wo://products/1"
/**
 * Event-loop turns until `done` holds (at most 10,000), then 8 more so that a write too many would show. The hub
 * runs with 16 writes a slice and no pause between rounds, so every slice is one turn (setImmediate), never a timer:
 * with its default slice and pace, a loaded machine's round could end in a pause longer than any fixed count of turns.
 */
const settled = (done: () => boolean) =>
  Effect.promise(async () => {
    for (let turns = 0; !done() && turns < 10_000; turns++) await new Promise<void>((r) => setImmediate(r))
    for (let i = 0; i < 8; i++) await new Promise<void>((r) => setImmediate(r))
  })

describe("frames built once per change", () => {
  it.effect("one change to N legacy and N modern subscribers serialises once per era", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog
      const streams = yield* OpenStreams
      const registry = makeRegistry()
      const rows = makeRows(new Map(), 0, { rows: 0, events: 0, tailEvents: 0, millis: 0 })
      const settings = yield* loadSettings({ dataDir: "/nonexistent" }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))
      // Just what a GET stream needs of the sessions: its stream subscribed to the session's one URI.
      const sessions = {
        stream: (_: Session, buffer) => Effect.asVoid(registry.subscribe(buffer, [{ uri: URI }])),
        snapshot: (s: Session) => ({ ...s, lastSeen: 0, streaming: true, subscriptions: new Map([[URI, 0]]), topics: new Map([[URI, { topic: { uri: URI }, since: 0 }]]) })
      } as Partial<SessionsShape> as SessionsShape
      const getStream = makeSessionStream({ catalog, sessions, log: undefined as never, rows, views: undefined as never, streams, settings })
      const listen = makeListenStreams({ registry, rows, streams, settings, resultMeta: {} })

      const hub = makeStreamHub(undefined, 0, 0)
      const scope = yield* Scope.make()
      const run = (response: EdgeResponse) =>
        Effect.gen(function* () {
          if (response._tag !== "Push") return yield* Effect.die("expected a push stream")
          const socket = new FakeSocket()
          yield* Scope.extend(response.start(hub.open(socket, 64)), scope)
          return socket
        })
      const legacy: Array<FakeSocket> = []
      const modern: Array<FakeSocket> = []
      for (let i = 0; i < N; i++) {
        const session: Session = { id: `s${i}`, version: "2025-11-25", createdAt: 0 }
        legacy.push(yield* run(getStream(session, undefined, "127.0.0.1")))
        const response = listen({ id: `L${i}`, client: "127.0.0.1", topics: [{ uri: URI }], listChanges: false, honoured: {} })
        modern.push(yield* run(Either.getOrThrow(response)))
      }
      yield* settled(() => registry.stats().subscriptions === 2 * N)
      expect(registry.stats().subscriptions).toBe(2 * N)

      for (const seq of [7, 8]) {
        const before = { ...frameBuilds }
        const writesBefore = [...legacy, ...modern].map((s) => s.chunks.length)
        registry.route([{ _tag: "Updated", uri: URI, seq }])
        yield* settled(() => [...legacy, ...modern].every((s, i) => s.chunks.length > writesBefore[i]))
        expect(frameBuilds.legacy - before.legacy, "legacy frames built").toBe(1)
        expect(frameBuilds.modern - before.modern, "modern frames built").toBe(1)
        const last = (s: FakeSocket) => s.chunks[s.chunks.length - 1]
        // Each stream got exactly one write for the change: the shared legacy frame, or the spliced modern one.
        expect([...legacy, ...modern].map((s, i) => s.chunks.length - writesBefore[i])).toEqual(Array(2 * N).fill(1))
        expect(new Set(legacy.map(last)).size).toBe(1)
        expect(last(legacy[0])).toBe(`id: get-${seq}\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"${URI}"}}\n\n`)
        modern.forEach((s, i) => {
          const m = /^event: message\ndata: (.*)\n\n$/.exec(last(s))
          expect(JSON.parse(m![1])).toEqual({
            jsonrpc: "2.0",
            method: "notifications/resources/updated",
            params: { uri: URI, _meta: { "io.modelcontextprotocol/subscriptionId": `L${i}` } }
          })
        })
      }
      yield* Scope.close(scope, Exit.void)
      expect(registry.stats().subscriptions).toBe(0)
    }).pipe(Effect.provide(Layer.merge(Catalog.layer(pricing), OpenStreamsDefault))))
})
