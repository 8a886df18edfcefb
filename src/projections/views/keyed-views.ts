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
 * and served once caught up (`ViewRefolding` until then). Blue/green: while a new declaration is folded, the former
 * declaration's entries serve, marked `stale`, and the swap is one step (one notice); a new fold that fails leaves
 * the former serving, still marked, and the next start folds it again. On a PostgreSQL log the entries are stored by
 * the node's snapshots, and a start folds only the events after the last one (keyed-pg-store.ts).
 *
 * Here: the service's Tag and layers; its shape: keyed-shape.ts. The fold: keyed-fold.ts; the entries' store: keyed-store.ts.
 */
import { Context, Effect, Layer } from "effect"
import { Catalog } from "../../domain/app-catalog.ts"
import { EventLog } from "../../log/event-log.ts"
import { LevelDb } from "../../log/classic-level/level-db.ts"
import { WoConfig } from "../../support/config.ts"
import { ChangeFeed } from "../../subscriptions/change-feed.ts"
import { recoverKeyedViews } from "./keyed-recovery.ts"
import { levelKeyedStore, memoryKeyedStore, type KeyedStore } from "./keyed-store.ts"
import { pgKeyedStore } from "./keyed-pg-store.ts"
import type { KeyedViewsShape } from "./keyed-shape.ts"

export type { KeyedListOptions } from "../../domain/keyed-list-request.ts"
export type { KeyedEntry, KeyedPage, KeyedViewStatus, KeyedViewsRecovery, KeyedViewsShape, PreparedKeyed } from "./keyed-shape.ts"

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

/**
 * A PostgreSQL node's keyed views: entries in the store's `view_entries` table, stored by this node's snapshots and
 * read through a cache sized as the embedded store's (keyed-pg-store.ts); on a shared log that stores no entries,
 * in memory, folded from the log at every start.
 */
export const KeyedViewsSharedLive = keyedViewsLayer(Effect.gen(function* () {
  const log = yield* EventLog
  if (log.viewEntries === undefined) return memoryKeyedStore()
  const { rowCache, viewSnapshotEvery } = yield* WoConfig
  return pgKeyedStore(log.viewEntries, Math.max(1024 * 1024, Math.floor(rowCache / 4)), viewSnapshotEvery)
}))
