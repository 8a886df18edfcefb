/**
 * The views projection: every declared view's value, in memory, maintained by the single writer.
 *
 * For each batch the writer asks `prepare` for the views' next values (folding the batch's changes through each
 * view's `evolve`) and stores the records of the views that changed in the same atomic write as the events.
 * Once the batch is durable, `commit` makes the new values visible (before any caller is answered:
 * read-your-writes) and names the views whose value changed, which are then notified; a view whose events
 * left its value as it was is neither written nor notified. A failed write `discard`s them.
 *
 * `evolve` is user code. If it throws (or returns a value its schema refuses), the view alone fails: it is
 * logged, stored as failed, served as a `ViewFailed` error naming the view and the event, and no longer
 * folded; writes go on. At the next start a failed view is folded again from the log, with the code of that
 * day. Startup loads the stored values (no replay of the log). A stored value exact at an earlier seq (a PostgreSQL
 * node's snapshot, `at`) has the events after it folded on top at startup: only the tail. A view without a usable
 * value (new, failed, corrupt, or declared differently since it was stored: `on`, `initial`, `schema` or `version`)
 * is folded again from the whole log IN THE BACKGROUND: startup never waits for it. It is then served from the next
 * batch, or at once when the writer is idle, and stored. Going live is announced once to the view's subscribers,
 * like a change of its value: at the seq it goes live at (the batch's last, or the position it was folded to when
 * idle). Until then:
 * - a view declared differently since it was stored keeps serving its stored value (blue/green), FROZEN where it
 *   was stored (the older declaration's evolve is gone, so no event after it is folded in) and marked stale
 *   (`staleMarker`): its version, the seq it is exact at, the version being folded. Its stored record stays as it
 *   was until the swap. If the new fold fails, the older value stays served, marked with the failure, and is
 *   neither folded nor stored; the next start folds the new declaration again;
 * - a view with no older value (new, failed, or a corrupt record) is refused (`ViewRefolding`: REST 503 with
 *   Retry-After, an MCP error), while writes and every other read go on.
 *
 * A long fold from the log (WO_REFOLD_THREAD_FROM events) runs in a worker thread at idle priority, when the app
 * was loaded from its folder (fold-thread.ts); else on the writer's thread, paced.
 *
 * Here: the service and its layer. The values and their folding: live-views.ts; startup: recovery.ts.
 */
import { Context, Data, Effect, Layer, Option, type Scope } from "effect"
import { LoadedApp } from "../../app-loading/app-worker.ts"
import { REFOLD_THREAD_FROM, WoConfig } from "../../support/config.ts"
import { EventLog } from "../../log/event-log.ts"
import { Catalog } from "../../domain/app-catalog.ts"
import { ChangeFeed } from "../../subscriptions/change-feed.ts"
import { foldInThread } from "./fold-thread.ts"
import { pacedHere, type FolderOf, type ViewSnapshot, type ViewsShape } from "./live-views.ts"
import { recoverViews } from "./recovery.ts"

/** A view whose evolve failed: served as an error naming it, until a restart folds it again. REST 500. */
export class ViewFailed extends Data.TaggedError("ViewFailed")<{ readonly name: string; readonly reason: string }> {
  override get message() {
    return `${this.reason}; it is folded again from the log at the next start`
  }
}

/** A view being folded again from the log in the background: refused until it is done. REST 503 with Retry-After. */
export class ViewRefolding extends Data.TaggedError("ViewRefolding")<{ readonly name: string; readonly reason: string }> {
  override get message() {
    return `view ${this.name} is being folded again from the log (${this.reason}); it is served once the fold is done: retry shortly`
  }
}

/** Seconds a client is told to wait before asking again for a view being folded again (Retry-After). */
export const REFOLD_RETRY_AFTER_SECONDS = 1

/**
 * The mark on an older declaration's value served while the current one is folded: the same fields in REST headers
 * (`WO-View-Version`, `WO-View-Exact-At`, `WO-View-Next-Version`, `WO-View-Next-Failed`) and in MCP `_meta`
 * (`writeonce/view`). Absent when the value served is the current declaration's.
 */
export interface StaleMarker {
  /** The digest of the declaration whose value is served. */
  readonly version: string
  /** The log position the value is exact at: it is frozen there, events after it are not in it. */
  readonly exactAt: number
  /** The digest of the current declaration, folded in the background (served once it has caught up). */
  readonly nextVersion: string
  /** Why the current declaration's fold failed: the older value stays served until a restart. */
  readonly nextFailed?: string
}

/** The `_meta` key of the mark on MCP results and resource contents. */
export const VIEW_META = "writeonce/view"

export const staleMarker = (view: ViewSnapshot): StaleMarker | undefined =>
  view.stale === undefined
    ? undefined
    : {
      version: view.version!,
      exactAt: view.stale.exactAt,
      nextVersion: view.stale.next,
      ...(view.stale.failed === undefined ? {} : { nextFailed: view.stale.failed })
    }

export type { PreparedViews, StaleMark, ViewSnapshot, ViewsRecovery, ViewsShape } from "./live-views.ts"
export type { ViewUpdate } from "../../subscriptions/change-feed.ts"

export class Views extends Context.Tag("writeonce/Views")<Views, ViewsShape>() {}

/**
 * The views recovered from the store; those with no usable stored value are folded again in the background, and
 * announced on the change feed when they go live with no batch to carry the notice.
 */
export const ViewsLive = Layer.scoped(
  Views,
  Effect.gen(function* () {
    const log = yield* EventLog
    const views = yield* recoverViews(log, yield* Catalog)
    const feed = yield* ChangeFeed
    // A long fold goes to a worker thread, when the app has a module one can load (fold-thread.ts).
    const module = Option.getOrUndefined(Option.flatMap(yield* Effect.serviceOption(LoadedApp), Option.fromNullable))
    const settings = Option.getOrUndefined(yield* Effect.serviceOption(WoConfig))
    const long = views.recovered.rebuilt.length > 0 && (yield* log.head).lastSeq >= (settings?.refoldThreadFrom ?? REFOLD_THREAD_FROM)
    const idle = (settings?.refoldPriority ?? "idle") === "idle"
    const folderOf: FolderOf<Scope.Scope> = module !== undefined && long
      ? (log, catalog, views, served) => foldInThread(module, log, catalog, views, served && idle ? "idle" : "normal")
      : pacedHere
    // Scoped to the fold: the thread ends with it.
    yield* Effect.forkScoped(Effect.scoped(views.refold((live) => feed.publish([], live), folderOf)))
    return views
  })
)
