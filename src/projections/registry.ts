/**
 * The subscription registry: committed changes routed to exactly the streams subscribed to their URI, with
 * O(1) lookup per change. It is fed by the change feed, so only durable changes are ever announced (C8).
 * Delivery is synchronous and non-blocking: each sink owns a bounded buffer and closes itself on overflow.
 */
import { Context, Effect, Layer } from "effect"
import { ChangeFeed } from "./change-feed.ts"

export type Notice =
  | { readonly _tag: "Updated"; readonly uri: string; readonly seq: number }
  /** A row was created or deleted, so resource lists changed. */
  | { readonly _tag: "ListChanged"; readonly seq: number }

export interface Sink {
  /** Must not block; a full sink closes itself rather than slowing the publisher. */
  readonly deliver: (notice: Notice) => void
}

export interface RegistryShape {
  readonly add: (uri: string, sink: Sink) => void
  readonly remove: (uri: string, sink: Sink) => void
  readonly watchLists: (sink: Sink) => void
  readonly unwatchLists: (sink: Sink) => void
  readonly stats: () => { readonly uris: number; readonly subscriptions: number; readonly listWatchers: number }
}

export class SubscriptionRegistry extends Context.Tag("writeonce/SubscriptionRegistry")<SubscriptionRegistry, RegistryShape>() {}

export const makeRegistry = (): RegistryShape & { readonly route: (notices: Iterable<Notice>) => void } => {
  const byUri = new Map<string, Set<Sink>>()
  const listWatchers = new Set<Sink>()
  let subscriptions = 0
  return {
    add: (uri, sink) => {
      let sinks = byUri.get(uri)
      if (sinks === undefined) byUri.set(uri, (sinks = new Set()))
      if (!sinks.has(sink)) {
        sinks.add(sink)
        subscriptions++
      }
    },
    remove: (uri, sink) => {
      const sinks = byUri.get(uri)
      if (sinks?.delete(sink)) {
        subscriptions--
        if (sinks.size === 0) byUri.delete(uri)
      }
    },
    watchLists: (sink) => void listWatchers.add(sink),
    unwatchLists: (sink) => void listWatchers.delete(sink),
    stats: () => ({ uris: byUri.size, subscriptions, listWatchers: listWatchers.size }),
    route: (notices) => {
      for (const notice of notices) {
        if (notice._tag === "Updated") {
          const sinks = byUri.get(notice.uri)
          if (sinks !== undefined) for (const sink of sinks) sink.deliver(notice)
        } else {
          for (const sink of listWatchers) sink.deliver(notice)
        }
      }
    }
  }
}

/** The registry, listening to the change feed for the lifetime of the runtime. */
export const RegistryLive = Layer.scoped(
  SubscriptionRegistry,
  Effect.gen(function* () {
    const feed = yield* ChangeFeed
    const registry = makeRegistry()
    yield* feed.listen((changes) => {
      const notices: Array<Notice> = []
      for (const { event, uri } of changes) {
        notices.push({ _tag: "Updated", uri, seq: event.seq })
        if (event.kind === "created" || event.kind === "deleted") notices.push({ _tag: "ListChanged", seq: event.seq })
      }
      registry.route(notices)
    })
    const { route: _route, ...shape } = registry
    return shape
  })
)
