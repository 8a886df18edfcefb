/**
 * The subscription registry (registry.ts): a committed change reaches exactly the sinks subscribed to its
 * URI (a row's, a live query's, the list watchers'), and a subscription held by a scope (the registry's own
 * feed listener, a modern listen stream) is released with it.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Either, Exit, Layer, Scope } from "effect"
import pricing from "../../examples/pricing/app.ts"
import { loadSettings } from "../../src/support/config.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import type { Row } from "../../src/domain/catalog.ts"
import type { Change, EventKind } from "../../src/domain/events.ts"
import { makeModern, OpenStreamsDefault } from "./mcp-route.ts"
import { META, MODERN_VERSIONS } from "../../src/http/mcp/protocol.ts"
import { OpenStreams } from "../../src/http/streams/open-streams.ts"
import { makeStreamHub } from "../../src/http/streams/stream-hub.ts"
import { FakeSocket } from "../../testkit/fake-socket.ts"
import { ChangeFeed, ChangeFeedLive } from "../../src/subscriptions/change-feed.ts"
import { makeRegistry, RegistryLive, SubscriptionRegistry, type Notice, type Sink } from "../../src/subscriptions/registry.ts"
import { makeRows } from "../../src/projections/rows/rows.ts"
import { topicOf } from "../../src/subscriptions/live-queries.ts"
import { compileApp } from "../../src/domain/compile.ts"

const catalog = Either.getOrThrow(compileApp(pricing))

/** A sink that records what it is given. */
const recorder = () => {
  const got: Array<Notice> = []
  const sink: Sink & { readonly got: Array<Notice> } = { got, deliver: (n) => void got.push(n) }
  return sink
}

const product = (id: string, version: number, currency: "USD" | "EUR", price = 1): Row => ({ id, version, name: `p${id}`, price, currency })

const change = (seq: number, kind: EventKind, before: Row | null, row: Row | null): Change => {
  const id = (row ?? before)!.id
  return {
    event: { seq, at: 0, type: "products", id, version: (before?.version ?? 0) + 1, kind, data: {} },
    uri: `wo://products/${id}`,
    row,
    before
  }
}

describe("the registry's routing", () => {
  it.scoped("an Updated notice reaches exactly the sinks subscribed to its URI; ListChanged only list watchers", () =>
    Effect.gen(function* () {
      const registry = makeRegistry()
      const one = recorder()
      const two = recorder()
      const both = recorder()
      const lists = recorder()
      yield* registry.subscribe(one, [{ uri: "wo://products/1" }])
      yield* registry.subscribe(two, [{ uri: "wo://products/2" }])
      const bothOf = yield* registry.subscribe(both, [{ uri: "wo://products/1" }, { uri: "wo://products/2" }])
      bothOf.add({ uri: "wo://products/2" }) // twice: still one subscription
      const listsScope = yield* Scope.make()
      yield* Scope.extend(registry.subscribe(lists, [], true), listsScope)
      expect(registry.stats()).toEqual({ uris: 2, subscriptions: 4, listWatchers: 1, liveQueries: 0 })

      registry.route([
        { _tag: "Updated", uri: "wo://products/1", seq: 1 },
        { _tag: "ListChanged", seq: 1 },
        { _tag: "Updated", uri: "wo://products/2", seq: 2 },
        { _tag: "Updated", uri: "wo://products/3", seq: 3 }
      ])
      expect(one.got.map((n) => n.seq)).toEqual([1])
      expect(two.got.map((n) => n.seq)).toEqual([2])
      expect(both.got.map((n) => n.seq)).toEqual([1, 2])
      expect(lists.got).toEqual([{ _tag: "ListChanged", seq: 1 }])

      bothOf.remove("wo://products/1")
      bothOf.remove("wo://products/1") // no-op
      yield* Scope.close(listsScope, Exit.void)
      registry.route([{ _tag: "Updated", uri: "wo://products/1", seq: 4 }, { _tag: "ListChanged", seq: 4 }])
      expect(one.got.map((n) => n.seq)).toEqual([1, 4])
      expect(both.got.map((n) => n.seq)).toEqual([1, 2])
      expect(lists.got).toHaveLength(1)
      expect(registry.stats()).toEqual({ uris: 2, subscriptions: 3, listWatchers: 0, liveQueries: 0 })
    }))

  it.scoped("fed by the change feed: row, live-query and list notices, each to its own subscribers, in order", () =>
    Effect.gen(function* () {
      const registry = yield* SubscriptionRegistry
      const topic = (uri: string) => Either.getOrThrow(topicOf(catalog, uri))
      const feed = yield* ChangeFeed
      const row1 = recorder()
      const row2 = recorder()
      const eur = recorder()
      const usd = recorder()
      const lists = recorder()
      const many = recorder()
      yield* registry.subscribe(row1, [topic("wo://products/1")])
      yield* registry.subscribe(row2, [topic("wo://products/2")])
      yield* registry.subscribe(eur, [topic("wo://products?currency=EUR")])
      const usdOf = yield* registry.subscribe(usd, [topic("wo://products?currency=USD")])
      yield* registry.subscribe(lists, [], true)
      const manyOf = yield* registry.subscribe(many, ["wo://products?currency=EUR", "wo://products/1", "wo://products?currency=USD"].map(topic))
      expect(registry.stats().liveQueries).toBe(2)

      const created = product("1", 1, "EUR")
      const repriced = product("1", 2, "EUR", 9)
      const moved = product("1", 3, "USD", 9)
      feed.publish([change(1, "created", null, created), change(2, "invoked", created, repriced)])
      feed.publish([change(3, "updated", repriced, moved)])
      feed.publish([change(4, "deleted", moved, null)])

      expect(row1.got).toEqual([1, 2, 3, 4].map((seq) => ({ _tag: "Updated", uri: "wo://products/1", seq })))
      expect(row2.got).toEqual([])
      // The EUR query sees the row enter, change, and leave it; the USD query only once it is in USD.
      expect(eur.got.map((n) => n.seq)).toEqual([1, 2, 3])
      expect(usd.got.map((n) => n.seq)).toEqual([3, 4])
      // Lists change on create and delete, not on updates.
      expect(lists.got).toEqual([{ _tag: "ListChanged", seq: 1 }, { _tag: "ListChanged", seq: 4 }])
      // One change's notices: the row's first, then the others by URI.
      expect(many.got.filter((n) => n.seq === 3)).toEqual([
        { _tag: "Updated", uri: "wo://products/1", seq: 3 },
        { _tag: "Updated", uri: "wo://products?currency=EUR", seq: 3 },
        { _tag: "Updated", uri: "wo://products?currency=USD", seq: 3 }
      ])

      // The last subscriber of a list URI leaving ends its live query.
      usdOf.remove("wo://products?currency=USD")
      manyOf.remove("wo://products?currency=USD")
      expect(registry.stats().liveQueries).toBe(1)
      feed.publish([change(5, "created", null, product("2", 1, "USD"))])
      expect(usd.got.map((n) => n.seq)).toEqual([3, 4])
      expect(row2.got.map((n) => n.seq)).toEqual([5])
    }).pipe(Effect.provide(RegistryLive.pipe(Layer.provideMerge(Layer.merge(ChangeFeedLive, Catalog.layer(pricing)))))))

  it.scoped("a row's history: notified on each of the row's events, among the others by URI, while subscribed", () =>
    Effect.gen(function* () {
      const registry = yield* SubscriptionRegistry
      const topic = (uri: string) => Either.getOrThrow(topicOf(catalog, uri))
      const feed = yield* ChangeFeed
      const history = recorder()
      const many = recorder()
      const historyOf = yield* registry.subscribe(history, [topic("wo://products/1/history")])
      yield* registry.subscribe(many, ["wo://products?currency=EUR", "wo://products/1/history", "wo://products/1"].map(topic))
      const created = product("1", 1, "EUR")
      const repriced = product("1", 2, "EUR", 9)
      feed.publish([change(1, "created", null, created), change(2, "invoked", created, repriced), change(3, "created", null, product("2", 1, "EUR"))])
      expect(history.got).toEqual([1, 2].map((seq) => ({ _tag: "Updated", uri: "wo://products/1/history", seq })))
      // The row's own first, then by URI: "wo://products/1/history" sorts before "wo://products?currency=EUR".
      expect(many.got.filter((n) => n.seq === 2).map((n) => n._tag === "Updated" && n.uri)).toEqual(["wo://products/1", "wo://products/1/history", "wo://products?currency=EUR"])
      // Another spelling of the id, or a page's query, is refused: it would never be notified.
      expect(Either.isLeft(topicOf(catalog, "wo://products/01/history"))).toBe(true)
      expect(Either.isLeft(topicOf(catalog, "wo://products/1/history?limit=5"))).toBe(true)
      historyOf.remove("wo://products/1/history")
      feed.publish([change(4, "invoked", repriced, product("1", 3, "EUR", 8))])
      expect(history.got.map((n) => n.seq)).toEqual([1, 2])
      expect(many.got.filter((n) => n.seq === 4).length).toBe(3)
    }).pipe(Effect.provide(RegistryLive.pipe(Layer.provideMerge(Layer.merge(ChangeFeedLive, Catalog.layer(pricing)))))))

  it.effect("the registry stops listening to the feed when its scope closes", () =>
    Effect.gen(function* () {
      const feed = yield* ChangeFeed
      const sink = recorder()
      const scope = yield* Scope.make()
      const registry = yield* Layer.buildWithScope(RegistryLive, scope).pipe(Effect.map(Context.get(SubscriptionRegistry)))
      yield* Scope.extend(registry.subscribe(sink, [{ uri: "wo://products/1" }]), scope)
      feed.publish([change(1, "created", null, product("1", 1, "USD"))])
      expect(sink.got).toHaveLength(1)
      yield* Scope.close(scope, Exit.void)
      feed.publish([change(2, "invoked", product("1", 1, "USD"), product("1", 2, "USD"))])
      expect(sink.got).toHaveLength(1)
    }).pipe(Effect.provide(Layer.merge(ChangeFeedLive, Catalog.layer(pricing)))))
})

describe("a listen stream's subscriptions", () => {
  it.effect("are registered while the stream runs and released when it ends", () =>
    Effect.gen(function* () {
      const catalog = yield* Catalog
      const streams = yield* OpenStreams
      const registry = makeRegistry()
      const settings = yield* loadSettings({ dataDir: "/nonexistent" }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map())))
      const modern = makeModern({ catalog, registry, streams, settings, rows: makeRows(new Map(), 0, { rows: 0, events: 0, tailEvents: 0, millis: 0 }) })
      const version = MODERN_VERSIONS[0]
      const params = {
        notifications: { resourceSubscriptions: ["wo://products/1", "wo://products?currency=EUR"], resourcesListChanged: true },
        _meta: { [META.protocolVersion]: version, [META.clientCapabilities]: {} }
      }
      const response = yield* modern.post({ _tag: "Request", id: "L1", method: "subscriptions/listen", params }, {
        method: "POST",
        path: "/mcp",
        query: new URLSearchParams(),
        headers: { "mcp-protocol-version": version, "mcp-method": "subscriptions/listen" },
        body: Buffer.alloc(0),
        remoteAddress: "127.0.0.1"
      })
      if (response._tag !== "Push") return expect.fail(`expected a push stream, got ${response.status}`)
      // Nothing is registered until the stream runs.
      expect(registry.stats()).toEqual({ uris: 0, subscriptions: 0, listWatchers: 0, liveQueries: 0 })

      const socket = new FakeSocket()
      const sink = makeStreamHub().open(socket, 16)
      const scope = yield* Scope.make()
      yield* Scope.extend(response.start(sink), scope)
      yield* Effect.promise(() => Promise.resolve()) // the hub flushes after the synchronous delivery
      expect(socket.text()).toContain("notifications/subscriptions/acknowledged")
      expect(registry.stats()).toEqual({ uris: 2, subscriptions: 2, listWatchers: 1, liveQueries: 1 })
      expect(streams.list()).toMatchObject([{ kind: "listen", owner: "L1" }])

      registry.route([{ _tag: "Updated", uri: "wo://products/2", seq: 1 }, { _tag: "Updated", uri: "wo://products/1", seq: 2 }])
      yield* Effect.promise(() => Promise.resolve())
      const frames = socket.chunks.slice(1).join("")
      expect(frames).toContain(`"uri":"wo://products/1"`)
      expect(frames).not.toContain("wo://products/2")
      expect(frames).toContain(`"${META.subscriptionId}":"L1"`)

      // The client goes away: the stream's scope closes and every subscription it held goes with it.
      yield* Scope.close(scope, Exit.void)
      expect(registry.stats()).toEqual({ uris: 0, subscriptions: 0, listWatchers: 0, liveQueries: 0 })
      expect(streams.list()).toEqual([])
    }).pipe(Effect.provide(Layer.merge(Catalog.layer(pricing), OpenStreamsDefault))))
})
