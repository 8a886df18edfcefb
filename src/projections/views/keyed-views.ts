/**
 * The keyed views projection: each keyed view (declared with `key`, see `KeyedViewSpec` in catalog.ts) keeps one
 * entry per key, stored on its own, never loaded whole.
 *
 * For each batch the writer asks `prepare` for the entries the batch changes: per change a view folds, its `key`,
 * the entry as it stands (a bounded cache, then the store), and `evolve` once. Only the changed keys are encoded and
 * stored, in the same atomic write as the events (`PreparedViews.entries`); `commit` makes them visible and names
 * each changed entry (`wo://views/<name>/<key>`), `discard` drops them. A key or evolve that throws, or an entry
 * its schema refuses, fails the view alone, as a whole view fails (views.ts): logged, stored failed (its `v!<name>`
 * record), served as `ViewFailed`.
 *
 * Startup reads one record per keyed view (`v!<name>`: the definition that serves) and no entry. A view with none,
 * one of another declaration or a failed one is folded from the log IN THE BACKGROUND, into a range of its own,
 * and served once caught up (`ViewRefolding` until then). On a PostgreSQL log the entries are kept in memory,
 * folded from the log at every start in the background.
 *
 * Here: the service's Tag and shape. The fold: keyed-fold.ts; the entries' store: keyed-store.ts.
 */
import { Context, Effect, Layer } from "effect"
import { Catalog } from "../../domain/app-catalog.ts"
import { EventLog } from "../../log/event-log.ts"
import { LevelDb } from "../../log/classic-level/level-db.ts"
import { WoConfig } from "../../support/config.ts"
import { ChangeFeed } from "../../subscriptions/change-feed.ts"
import { recoverKeyedViews } from "./keyed-recovery.ts"
import { levelKeyedStore, memoryKeyedStore, type KeyedStore } from "./keyed-store.ts"
import type { StoreError, ValidationFailed } from "../../domain/errors.ts"
import type { Change } from "../../domain/events.ts"
import type { Filter, Order } from "../../domain/list-request.ts"
import type { PreparedViews } from "./live-views.ts"
import type { ViewFailed, ViewRefolding } from "./views.ts"
import type { ViewUpdate } from "../../subscriptions/change-feed.ts"

/** One entry of a keyed view, as served. */
export interface KeyedEntry {
  readonly key: string
  /** The entry's JSON text, encoded through the view's schema. */
  readonly json: string
  /** The log sequence of the entry's last change. */
  readonly seq: number
}

export interface KeyedListOptions {
  /** The cursor a previous page answered (`next`); absent: the first page. Opaque: it names a position, not an offset. */
  readonly after?: string
  /** Entries per page, at most. */
  readonly limit: number
  /** Filters on the entry's filterable fields (`CompiledView.filterable`), checked as rows' are. */
  readonly where?: ReadonlyArray<Filter>
  /**
   * Absent: key order (the cursor is the last key served). With a field: that field's order, ties by key; the
   * cursor holds the last entry's value and key, so a page stays where it was whatever is written meanwhile.
   */
  readonly order?: Order
}

export interface KeyedPage {
  readonly items: ReadonlyArray<KeyedEntry>
  /** The cursor of the next page; absent on the last one. */
  readonly next?: string
}

export interface KeyedViewStatus {
  readonly name: string
  readonly description?: string
  /** Why the view failed (served as ViewFailed until the next start folds it again). */
  readonly failed?: string
  /** Why it is being folded from the log in the background (served as ViewRefolding until it is done). */
  readonly refolding?: string
}

export interface KeyedViewsRecovery {
  /** Keyed views served from their stored entries at once. */
  readonly loaded: number
  /** Keyed views folded from the log: over an empty log at once, else in the background. */
  readonly rebuilt: ReadonlyArray<string>
  readonly millis: number
}

/** What keyed views add to a batch's prepared views: their entries, failures, meta records and notices. */
export type PreparedKeyed = PreparedViews

export interface KeyedViewsShape {
  /** The keyed views' names, as declared. */
  readonly names: ReadonlyArray<string>
  /** A keyed view's state; undefined for a name that is no keyed view. */
  readonly status: (name: string) => KeyedViewStatus | undefined
  /** One entry; undefined when the view holds none under `key` (or `name` is no keyed view). */
  readonly get: (name: string, key: string) => Effect.Effect<KeyedEntry | undefined, StoreError | ViewFailed | ViewRefolding>
  /** A page of entries. A cursor that is not one of this view's (tampered, or of another order) is a ValidationFailed. */
  readonly list: (name: string, options: KeyedListOptions) => Effect.Effect<KeyedPage, StoreError | ViewFailed | ViewRefolding | ValidationFailed>
  /** Folds a batch's changes into the entries they touch, before it is written. Never throws. */
  readonly prepare: (changes: ReadonlyArray<Change>) => PreparedKeyed
  readonly recovered: KeyedViewsRecovery
  /**
   * Folds the keyed views with no usable entries from the log, until each is served; run once, in the background
   * (the layer forks it). `publish` is told the views that went live while the writer was idle.
   */
  readonly refold: (publish: (live: ReadonlyArray<ViewUpdate>) => void) => Effect.Effect<void>
}

export class KeyedViews extends Context.Tag("writeonce/KeyedViews")<KeyedViews, KeyedViewsShape>() {}

/** The keyed views over `store`; those with no usable entries are folded in the background and announced when live. */
const keyedViewsLayer = <R>(store: Effect.Effect<KeyedStore, never, R>) =>
  Layer.scoped(
    KeyedViews,
    Effect.gen(function* () {
      const views = yield* recoverKeyedViews(yield* EventLog, yield* Catalog, yield* store)
      const feed = yield* ChangeFeed
      yield* Effect.forkScoped(views.refold((live) => feed.publish([], live)))
      return views
    })
  )

/**
 * The embedded store's keyed views: entries in the store, read through a cache of a quarter of the row cache's
 * bytes (`WO_ROW_CACHE`): entries are smaller than rows and read by key, as rows are.
 */
export const KeyedViewsStoreLive = keyedViewsLayer(Effect.gen(function* () {
  const { rowCache } = yield* WoConfig
  return levelKeyedStore(yield* LevelDb, Math.max(1024 * 1024, Math.floor(rowCache / 4)))
}))

/** A PostgreSQL node's keyed views: entries in memory, folded from the log at every start. */
export const KeyedViewsMemoryLive = keyedViewsLayer(Effect.sync(memoryKeyedStore))
