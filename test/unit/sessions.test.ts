/**
 * Sessions (sessions.ts) as the one owner of a session's record, over the embedded session store in a temp dir
 * and the real registry: callers read copies, a subscribe made while the GET stream is open reaches that stream
 * through the registry, a second stream replaces the first, and ending the session frees its stream and
 * subscriptions; what was subscribed survives a restart.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Either, Exit, Layer, Scope } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pricing from "../../examples/pricing/app.ts"
import { loadSettings, WoConfig } from "../../src/support/config.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { Sessions, SessionsLive, type Session } from "../../src/http/mcp/sessions.ts"
import { Subscribed } from "../../src/http/mcp/session-caps.ts"
import type { EndReason, NoticeBuffer } from "../../src/http/streams/notice-buffer.ts"
import { ClassicLevelSessionStore } from "../../src/log/classic-level/classic-level-session-store.ts"
import { levelDbLayer } from "../../src/log/classic-level/level-db.ts"
import { topicOf } from "../../src/subscriptions/live-queries.ts"
import { makeRegistry, SubscriptionRegistry, type Notice } from "../../src/subscriptions/registry.ts"

const catalog = Either.getOrThrow(compileApp(pricing))
const topic = (uri: string) => Either.getOrThrow(topicOf(catalog, uri))
const P1 = "wo://products/1"
const EUR = "wo://products?currency=EUR"

/** A stream that records what reaches it and why it closed. */
const stream = () => {
  const got: Array<Notice> = []
  let closed: EndReason | undefined
  const buffer: NoticeBuffer & { readonly got: Array<Notice>; readonly closedWith: () => EndReason | undefined } = {
    got,
    deliver: (n) => void got.push(n),
    close: (reason) => void (closed ??= reason),
    isClosed: () => closed !== undefined,
    closedWith: () => closed
  }
  return buffer
}

/** Sessions over the store in `dir`, with a registry of their own whose routing the test drives. */
const sessionsIn = (dir: string) => {
  const registry = makeRegistry()
  const settings = loadSettings({ dataDir: dir }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))
  const layer = SessionsLive.pipe(
    Layer.provide(ClassicLevelSessionStore.pipe(Layer.provide(levelDbLayer(dir)))),
    Layer.provide(Layer.mergeAll(Layer.effect(WoConfig, settings), Catalog.layer(pricing), Layer.succeed(SubscriptionRegistry, registry)))
  )
  return { registry, layer }
}

const updated = (uri: string, seq: number): Notice => ({ _tag: "Updated", uri, seq })

describe("Sessions", () => {
  it.effect("hand out copies; a subscribe made while the stream is open reaches it; a second stream replaces the first", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wo-sessions-unit-"))
      const { registry, layer } = sessionsIn(dir)
      const scope = yield* Scope.make()
      const sessions = Context.get(yield* Layer.buildWithScope(layer, scope), Sessions)
      const session = (yield* sessions.create("2025-06-18")) as Session
      expect(Object.isFrozen(session)).toBe(true)

      expect(yield* sessions.subscribe(session, topic(P1), 3)).toBeInstanceOf(Subscribed)
      const copy = sessions.snapshot(session)
      ;(copy.subscriptions as Map<string, number>).clear()
      expect([...sessions.snapshot(session).subscriptions]).toEqual([[P1, 3]])

      const first = stream()
      const firstScope = yield* Scope.make()
      yield* Scope.extend(sessions.stream(session, first), firstScope)
      expect(sessions.snapshot(session).streaming).toBe(true)
      // Subscribed while streaming: the registry routes the live query to the open stream, read once.
      expect(yield* sessions.subscribe(session, topic(EUR), 4)).toBeInstanceOf(Subscribed)
      expect(registry.stats()).toMatchObject({ uris: 2, subscriptions: 2, liveQueries: 1 })
      registry.route([updated(P1, 5), updated(EUR, 5)])
      expect(first.got).toEqual([updated(P1, 5), updated(EUR, 5)])

      const second = stream()
      yield* Scope.extend(sessions.stream(session, second), scope)
      expect(first.closedWith()).toBe("replaced")
      registry.route([updated(P1, 6)])
      expect(first.got).toHaveLength(2)
      expect(second.got).toEqual([updated(P1, 6)])
      // The replaced stream's end changes nothing of its successor.
      yield* Scope.close(firstScope, Exit.void)
      expect(registry.stats().subscriptions).toBe(2)

      yield* sessions.unsubscribe(session, EUR)
      expect(registry.stats()).toMatchObject({ uris: 1, subscriptions: 1, liveQueries: 0 })

      expect(yield* sessions.terminate(session.id)).toBe(true)
      expect(second.closedWith()).toBe("terminated")
      expect(registry.stats().subscriptions).toBe(0)
      expect(sessions.snapshot(session).subscriptions.size).toBe(0)
      expect(yield* sessions.get(session.id)).toBeUndefined()
      yield* Scope.close(scope, Exit.void)
      fs.rmSync(dir, { recursive: true, force: true })
    }))

  it.effect("a session's subscriptions survive a restart, and its next stream follows them", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wo-sessions-unit-"))
      const before = yield* Effect.scoped(Effect.gen(function* () {
        const sessions = Context.get(yield* Layer.build(sessionsIn(dir).layer), Sessions)
        const session = (yield* sessions.create("2025-06-18")) as Session
        yield* sessions.subscribe(session, topic(EUR), 2)
        return session.id
      }))
      const { registry, layer } = sessionsIn(dir)
      yield* Effect.scoped(Effect.gen(function* () {
        const sessions = Context.get(yield* Layer.build(layer), Sessions)
        const session = (yield* sessions.get(before))!
        expect([...sessions.snapshot(session).subscriptions]).toEqual([[EUR, 2]])
        const buffer = stream()
        yield* sessions.stream(session, buffer)
        expect(registry.stats()).toMatchObject({ subscriptions: 1, liveQueries: 1 })
      }))
      fs.rmSync(dir, { recursive: true, force: true })
    }))
})
