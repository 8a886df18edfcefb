/**
 * What the keyed views projection serves and hands the writer: its entries, pages, status and shape (the service's
 * Tag and layers: keyed-views.ts; the live state behind the shape: keyed-live.ts).
 */
import type { Effect } from "effect"
import type { StoreError, ValidationFailed } from "../../domain/errors.ts"
import type { Change } from "../../domain/events.ts"
import type { KeyedListOptions } from "../../domain/keyed-list-request.ts"
import type { PreparedViews } from "./live-views.ts"
import type { StaleMarker, ViewFailed, ViewRefolding } from "./views.ts"
import type { ViewUpdate } from "../../subscriptions/change-feed.ts"

/** One entry of a keyed view, as served. */
export interface KeyedEntry {
  readonly key: string
  /** The entry's JSON text, encoded through the view's schema. */
  readonly json: string
  /** The log sequence of the entry's last change. */
  readonly seq: number
  /**
   * Present while the view's new declaration is folded from the log (or after that fold failed): the entry is the
   * former declaration's, as it stood when that declaration last served, and this says why.
   */
  readonly stale?: string
  /** With `stale`: the versions and the seq the former entries are frozen at, as a whole view's mark. */
  readonly mark?: StaleMarker
}

export interface KeyedPage {
  readonly items: ReadonlyArray<KeyedEntry>
  /** The cursor of the next page; absent on the last one. */
  readonly next?: string
  /** As `KeyedEntry.stale`: the page is the former declaration's. */
  readonly stale?: string
  readonly mark?: StaleMarker
}

export interface KeyedViewStatus {
  readonly name: string
  readonly description?: string
  /** Why the view failed (served as ViewFailed until the next start folds it again). */
  readonly failed?: string
  /**
   * Why it is being folded from the log in the background: served as ViewRefolding until it is done, or, when a
   * former declaration's entries are stored, from those (`stale`).
   */
  readonly refolding?: string
  /** Served from the former declaration's entries (the new one is being folded, or its fold failed): why. */
  readonly stale?: string
}

export interface KeyedViewsRecovery {
  /** Keyed views served from their stored entries at once. */
  readonly loaded: number
  /** Keyed views folded from the log: over an empty log at once, else in the background. */
  readonly rebuilt: ReadonlyArray<string>
  /** Events folded at start on top of entries stored as a snapshot (a PostgreSQL node: the tail after its seq). */
  readonly tailEvents: number
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
  /**
   * Changes the log holds that were not prepared here: on the embedded store, a failed write that landed after all,
   * whose entries landed with it (nothing to fold again: the cache forgets what it held); in memory, every commit
   * the tailer applies (folded as `prepare` does).
   */
  readonly landed: (changes: ReadonlyArray<Change>) => PreparedKeyed
  readonly recovered: KeyedViewsRecovery
  /**
   * Present where entries are stored as snapshots (PostgreSQL): takes the served views' changed entries now, exact
   * at `at` (the seq this node applied), and answers the write that stores them with the views' records (the tailer
   * runs it every WO_VIEW_SNAPSHOT_EVERY events and at shutdown).
   */
  readonly snapshot?: (at: number) => Effect.Effect<void, StoreError>
  /** Present with `snapshot`: how many entries a fold read synchronously (neither held nor read ahead: a last resort). */
  readonly syncReads?: () => number
  /** Present with `snapshot`: reads ahead, in one statement per view, the entries these changes will read when folded. */
  readonly readAhead?: (changes: ReadonlyArray<Change>) => Effect.Effect<void, StoreError>
  /**
   * Folds the keyed views with no usable entries from the log, until each is served; run once, in the background
   * (the layer forks it). `publish` is told the views that went live while the writer was idle.
   */
  readonly refold: (publish: (live: ReadonlyArray<ViewUpdate>) => void) => Effect.Effect<void>
}
