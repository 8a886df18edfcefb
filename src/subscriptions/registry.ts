/**
 * The subscription registry: committed changes routed to exactly the streams subscribed to their URI, with
 * O(1) lookup per change. It is fed by the change feed, so only durable changes are ever announced.
 * Delivery is synchronous and non-blocking: each sink owns a bounded buffer and closes itself on overflow.
 *
 * Four kinds of URI are notified: a row's (`wo://articles/3`, on every change of the row), its history's
 * (`wo://articles/3/history`, likewise, looked up only while some history is subscribed), a view's
 * (`wo://views/<name>`, when its value changed) and a live query's (`wo://articles?status=published`, when
 * the change touches its result, found through the live-query index). A change's notices go out in one order
 * everywhere, which legacy resumption relies on: by log sequence, the row's own first, then the others by URI.
 *
 * It is the one owner of who listens to what: a sink is subscribed only through `subscribe`, for a scope (a
 * listen stream's, a legacy GET stream's), and takes its URIs as topics, read once where they came in.
 */
import { Context, Effect, Layer, type Scope } from "effect"
import type { Change } from "../domain/events.ts"
import { ChangeFeed } from "./change-feed.ts"
import { LiveQueryIndex, type LiveQuery, type Topic } from "./live-queries.ts"
import type { ViewUpdate } from "./change-feed.ts"
import { scopedSync } from "../support/scoped-sync.ts"
import { historyUri } from "../domain/uri.ts"

export type Notice =
  | { readonly _tag: "Updated"; readonly uri: string; readonly seq: number }
  /** A row was created or deleted, so resource lists changed. */
  | { readonly _tag: "ListChanged"; readonly seq: number }

export interface Sink {
  /** Must not block; a full sink closes itself rather than slowing the publisher. */
  readonly deliver: (notice: Notice) => void
}

/** One sink's subscriptions, held for a scope: changed while it lasts (a legacy session's subscribe), ended with it. */
export interface Subscription {
  /** Routes the topic's notices to the sink too (nothing when it has it already). */
  add(topic: Topic): void
  remove(uri: string): void
  /** Ends every subscription of the sink now (a replaced or ended session's stream); the scope's end does it too. */
  end(): void
}

export interface RegistryShape {
  /**
   * The one way in: subscribes `sink` to `topics` (and to list changes) for the lifetime of the current scope.
   * The registry alone knows who listens to what.
   */
  readonly subscribe: (sink: Sink, topics: Iterable<Topic>, listChanges?: boolean) => Effect.Effect<Subscription, never, Scope.Scope>
  readonly stats: () => { readonly uris: number; readonly subscriptions: number; readonly listWatchers: number; readonly liveQueries: number }
}

export class SubscriptionRegistry extends Context.Tag("writeonce/SubscriptionRegistry")<SubscriptionRegistry, RegistryShape>() {}

const endSubscription = (subscription: Subscription) => subscription.end()

const NO_HISTORIES: ReadonlySet<string> = new Set()

/**
 * The notices a batch makes, in order: per change, the row's, a list change for creates and deletes, then
 * the live queries it touches and the views whose last change it is, by URI; then views at no change of it.
 */
export const batchNotices = (
  changes: ReadonlyArray<Change>,
  views: ReadonlyArray<ViewUpdate>,
  liveQueries: LiveQueryIndex,
  histories: ReadonlySet<string> = NO_HISTORIES
): Array<Notice> => {
  const notices: Array<Notice> = []
  const viewsAt = new Map<number, Array<string>>()
  for (const v of views) {
    const at = viewsAt.get(v.seq)
    if (at === undefined) viewsAt.set(v.seq, [v.uri])
    else at.push(v.uri)
  }
  for (const { event, uri, row, before } of changes) {
    notices.push({ _tag: "Updated", uri, seq: event.seq })
    if (event.kind === "created" || event.kind === "deleted") notices.push({ _tag: "ListChanged", seq: event.seq })
    const queries = liveQueries.size === 0 ? [] : liveQueries.affected(event.type, before, row)
    const atThisSeq = viewsAt.get(event.seq)
    if (atThisSeq !== undefined) viewsAt.delete(event.seq)
    const history = histories.size === 0 ? undefined : historyUri(event.type, event.id)
    const others = atThisSeq === undefined && (history === undefined || !histories.has(history))
      ? queries
      : [...queries, ...(atThisSeq ?? []), ...(history !== undefined && histories.has(history) ? [history] : [])].sort()
    for (const other of others) notices.push({ _tag: "Updated", uri: other, seq: event.seq })
  }
  // Views at no change of the batch: folded again and gone live with no batch (views.ts), after the batch's own.
  for (const [seq, uris] of [...viewsAt].sort(([a], [b]) => a - b)) for (const uri of uris.sort()) notices.push({ _tag: "Updated", uri, seq })
  return notices
}

export const makeRegistry = (): RegistryShape & {
  readonly route: (notices: Iterable<Notice>) => void
  readonly liveQueries: LiveQueryIndex
  /** The history URIs someone is subscribed to. */
  readonly histories: ReadonlySet<string>
} => {
  const byUri = new Map<string, Set<Sink>>()
  const listWatchers = new Set<Sink>()
  const liveQueries = new LiveQueryIndex()
  const live = new Map<string, LiveQuery>()
  const histories = new Set<string>()
  let subscriptions = 0
  const add = ({ uri, query, history }: Topic, sink: Sink) => {
    let sinks = byUri.get(uri)
    if (sinks === undefined) {
      byUri.set(uri, (sinks = new Set()))
      if (history === true) histories.add(uri)
      // The first subscriber of a list URI makes it a live query; the last one to leave ends it.
      if (query !== undefined) {
        live.set(uri, query)
        liveQueries.add(query)
      }
    }
    if (!sinks.has(sink)) {
      sinks.add(sink)
      subscriptions++
    }
  }
  const remove = (uri: string, sink: Sink) => {
    const sinks = byUri.get(uri)
    if (sinks?.delete(sink)) {
      subscriptions--
      if (sinks.size === 0) {
        byUri.delete(uri)
        histories.delete(uri)
        const query = live.get(uri)
        if (query !== undefined) {
          live.delete(uri)
          liveQueries.remove(query)
        }
      }
    }
  }
  /** A sink's subscriptions: one class per registry, its methods shared (not three closures per open stream). */
  class SinkSubscription implements Subscription {
    private readonly mine = new Set<string>()
    constructor(private readonly sink: Sink) {}
    add(topic: Topic) {
      if (this.mine.has(topic.uri)) return
      this.mine.add(topic.uri)
      add(topic, this.sink)
    }
    remove(uri: string) {
      if (this.mine.delete(uri)) remove(uri, this.sink)
    }
    end() {
      for (const uri of this.mine) remove(uri, this.sink)
      this.mine.clear()
      listWatchers.delete(this.sink)
    }
  }
  const open = (sink: Sink, topics: Iterable<Topic>, listChanges: boolean): Subscription => {
    const subscription = new SinkSubscription(sink)
    for (const topic of topics) subscription.add(topic)
    if (listChanges) listWatchers.add(sink)
    return subscription
  }
  return {
    subscribe: (sink, topics, listChanges = false) =>
      // Not acquireRelease: its finalizer would hold the fiber's FiberRefs for as long as the stream is open.
      scopedSync(() => open(sink, topics, listChanges), endSubscription),
    stats: () => ({ uris: byUri.size, subscriptions, listWatchers: listWatchers.size, liveQueries: liveQueries.size }),
    liveQueries,
    histories,
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
    yield* feed.listen((changes, views) => registry.route(batchNotices(changes, views, registry.liveQueries, registry.histories)))
    const { route: _route, liveQueries: _liveQueries, histories: _histories, ...shape } = registry
    return shape
  })
)
