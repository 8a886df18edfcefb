/**
 * The change feed: committed, durable changes, in log order, to whoever listens (the subscription registry,
 * the console's event tail). Listeners are called synchronously by the projector and must not block: each routes
 * into its own bounded buffers. The projector publishes to it: the writer's batches, and on a shared log every node's.
 * The views publish one thing more, with no change: a view folded again going live while the writer is idle (views.ts).
 */
import { Context, Effect, Layer, type Scope } from "effect"
import type { Change } from "../domain/events.ts"

/** A committed change of a view's value (or a view folded again going live), routed to the subscribers of its URI. */
export interface ViewUpdate {
  readonly name: string
  readonly uri: string
  /** A keyed view's entry: its key (`uri` is then `wo://views/<name>/<key>`); absent for a whole view. */
  readonly key?: string
  /** The log sequence the notice is at: the value's last change, or the seq a view folded again went live at. */
  readonly seq: number
}

/** A batch's committed changes, and the views whose value it changed. */
export type ChangeListener = (changes: ReadonlyArray<Change>, views: ReadonlyArray<ViewUpdate>) => void

export interface ChangeFeedShape {
  readonly publish: (changes: ReadonlyArray<Change>, views?: ReadonlyArray<ViewUpdate>) => void
  /** Registers a listener for the lifetime of the current scope. */
  readonly listen: (listener: ChangeListener) => Effect.Effect<void, never, Scope.Scope>
}

export class ChangeFeed extends Context.Tag("writeonce/ChangeFeed")<ChangeFeed, ChangeFeedShape>() {}

export const makeChangeFeed = (): ChangeFeedShape => {
  const listeners = new Set<ChangeListener>()
  return {
    publish: (changes, views = []) => {
      for (const l of listeners) {
        try {
          l(changes, views)
        } catch {
          // A faulty listener must never fail the writer; it only loses its own notifications.
        }
      }
    },
    listen: (listener) =>
      Effect.acquireRelease(Effect.sync(() => listeners.add(listener)), () => Effect.sync(() => listeners.delete(listener)))
        .pipe(Effect.asVoid)
  }
}

export const ChangeFeedLive = Layer.sync(ChangeFeed, makeChangeFeed)
