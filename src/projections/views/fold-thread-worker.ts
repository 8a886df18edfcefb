/**
 * The worker's side of a view refold in a thread of its own (fold-thread.ts starts it, and reads the log for it):
 * it compiles the app the server runs, folds the events it is sent through the views it was asked for, and answers
 * each view's value when asked. The embedded store's events come as they are stored; they are checked, parsed
 * and upcast here, off the server's thread. Everything the server's thread needs back is plain data: a view's
 * JSON text, its seq, why it failed.
 */
import { Either } from "effect"
import type { MessagePort } from "node:worker_threads"
import type { AppDef } from "../../domain/catalog.ts"
import { compileApp } from "../../domain/compile.ts"
import { isStoreError } from "../../domain/store-errors.ts"
import type { StoredEvent } from "../../domain/events.ts"
import { decodeEvent } from "../../log/classic-level/level-records.ts"
import type { SealedEvent } from "../../log/event-log.ts"
import { RecordCorrupt } from "../../log/record.ts"
import { upcastEvent, upcastFailure } from "../../log/upcasting-log.ts"
import { viewDefinition } from "../../log/view-record.ts"
import { makeFold } from "./view-fold.ts"

/** A view to fold, as the server's thread knows it: by name, and the digest of its declaration there. */
export interface WantedView {
  readonly name: string
  readonly definition: string
}

/** What the server's thread sends: events to fold (stored or decoded), or a request for the values at `to`. */
export type ToFoldThread =
  | { readonly sealed: ReadonlyArray<SealedEvent> }
  | { readonly events: ReadonlyArray<StoredEvent> }
  | { readonly to: number }

/** A view's value as the thread folded it: `FoldedView` without the typed value, which stays in the thread. */
export interface ThreadFolded {
  readonly name: string
  readonly valueJson?: string
  readonly seq: number
  readonly failed?: string
}

/**
 * What the thread answers: its Linux thread id, first (support/thread-priority.ts); ready to fold, or refused to
 * (and why); each message of events taken (`took`), or the read that failed there; the values at `to`.
 */
export type FromFoldThread =
  | { readonly thread: number | null }
  | { readonly ready: true }
  | { readonly refused: string }
  | { readonly took: number }
  | { readonly failed: string; readonly corrupt: boolean }
  | { readonly folded: ReadonlyArray<ThreadFolded>; readonly read: number; readonly to: number }

/**
 * Serves one refold on `port`: the views `wanted` of `app` (the module the server imported, loaded again here),
 * each from its initial value before seq 1. Refuses when the app does not compile here, or declares one of the
 * views differently (a module that builds its declarations differently on each import).
 */
export const serveFold = (port: MessagePort, app: AppDef, wanted: ReadonlyArray<WantedView>): void => {
  const post = (message: FromFoldThread) => port.postMessage(message)
  const compiled = compileApp(app)
  if (Either.isLeft(compiled)) return post({ refused: `the app does not compile in the thread: ${compiled.left.message}` })
  const catalog = compiled.right
  const views = []
  for (const w of wanted) {
    const view = catalog.views.get(w.name)
    if (view === undefined || viewDefinition(view) !== w.definition) return post({ refused: `view ${w.name} is declared differently in the thread` })
    views.push(view)
  }
  const fold = makeFold(catalog, views.map((view) => ({ view, after: 0 })), true)
  /** A sealed record, checked and parsed, in the app's current schema version. */
  const decode = ([, key, record]: SealedEvent): StoredEvent => {
    const event = decodeEvent(key, record)
    try {
      return upcastEvent(catalog, event)
    } catch (e) {
      throw upcastFailure(`event ${event.seq} (${event.type}/${event.id})`)(e)
    }
  }
  let broken = false
  port.on("message", (message: ToFoldThread) => {
    // After a failed read, the server's thread reads again in a fold of its own: nothing more is folded here.
    if (broken) return
    if ("to" in message) {
      fold.skipTo(message.to)
      const folded = [...fold.result()].map(([name, f]): ThreadFolded =>
        f.failed === undefined ? { name, valueJson: f.valueJson!, seq: f.seq } : { name, seq: f.seq, failed: f.failed })
      return post({ folded, read: fold.read(), to: message.to })
    }
    try {
      const events = "sealed" in message ? message.sealed.map(decode) : message.events
      fold.fold(events)
      post({ took: events.length })
    } catch (e) {
      broken = true
      post({ failed: isStoreError(e) ? e.reason : e instanceof Error ? e.message : String(e), corrupt: e instanceof RecordCorrupt })
    }
  })
  post({ ready: true })
}
