/**
 * The worker's side of a view refold in a thread of its own (fold-thread.ts starts it and talks to it):
 * it compiles the app the server runs, folds the events through the views it was asked for, and answers each view's
 * value at each bound. On the embedded store it reads the events itself, from the store the server lends it
 * (log/classic-level/thread-reads.ts: checked, parsed and upcast here, off the server's thread); on another store the
 * server's thread sends them. Everything the server's thread needs back is plain data: a view's JSON text, its seq,
 * why it failed.
 */
import { Either } from "effect"
import type { MessagePort } from "node:worker_threads"
import type { AppDef } from "../../domain/catalog.ts"
import { compileApp } from "../../domain/compile.ts"
import { isStoreError } from "../../domain/store-errors.ts"
import type { StoredEvent } from "../../domain/events.ts"
import { openThreadReads } from "../../log/classic-level/thread-reads.ts"
import type { ThreadLoan } from "../../log/event-log.ts"
import { RecordCorrupt } from "../../log/record.ts"
import { upcastEvent, upcastFailure } from "../../log/upcasting-log.ts"
import { viewDefinition } from "../../log/view-record.ts"
import { makeFold } from "./view-fold.ts"

/** Events folded at a time from the lent store. */
const READ_SLICE = 256
/**
 * How often, in ms of its work, the thread says how far it has read the lent store (after a slice): the server's
 * thread counts a fold that keeps its core busy and says nothing for 10 s of CPU as stuck in the app's code
 * (fold-thread.ts), so a heavy evolve must not go that long unheard: a count of events would let it (8,192 events
 * of an evolve of 1.3 ms each are 10 s).
 */
const PROGRESS_MS = 1000

/** A view to fold, as the server's thread knows it: by name, and the digest of its declaration there. */
export interface WantedView {
  readonly name: string
  readonly definition: string
}

/**
 * What the server's thread sends: the store lent to this thread (first, on the embedded store), then a bound to
 * read it to; or, on another store, events it read, then the bound they reach.
 */
export type ToFoldThread =
  | { readonly loan: ThreadLoan }
  | { readonly readTo: number }
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
 * (and why); each message of events taken (`took`), or how far it has read the lent store (`progress`, now and
 * then), or the read that failed there; the values at a bound.
 */
export type FromFoldThread =
  | { readonly thread: number | null }
  | { readonly ready: true }
  | { readonly refused: string }
  | { readonly took: number }
  | { readonly progress: number }
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
  const upcast = (event: StoredEvent): StoredEvent => {
    try {
      return upcastEvent(catalog, event)
    } catch (e) {
      throw upcastFailure(`event ${event.seq} (${event.type}/${event.id})`)(e)
    }
  }
  const values = (to: number) => {
    fold.skipTo(to)
    const folded = [...fold.result()].map(([name, f]): ThreadFolded =>
      f.failed === undefined ? { name, valueJson: f.valueJson!, seq: f.seq } : { name, seq: f.seq, failed: f.failed })
    post({ folded, read: fold.read(), to })
  }
  let reads: Promise<Awaited<ReturnType<typeof openThreadReads>>> | undefined
  const handle = async (message: ToFoldThread) => {
    if ("loan" in message) {
      reads = openThreadReads(message.loan)
      return void (await reads)
    }
    if ("readTo" in message) {
      const store = await reads!
      let said = performance.now()
      store.read(fold.position() + 1, message.readTo, READ_SLICE, (events) => {
        fold.fold(events.map(upcast))
        if (performance.now() - said < PROGRESS_MS) return
        post({ progress: events[events.length - 1]!.seq })
        said = performance.now()
      })
      return values(message.readTo)
    }
    if ("to" in message) return values(message.to)
    fold.fold(message.events.map(upcast))
    post({ took: message.events.length })
  }
  // One message at a time, in order; after a failure nothing more is folded here (the server's thread reads again
  // in a fold of its own).
  let chain = Promise.resolve()
  let broken = false
  port.on("message", (message: ToFoldThread) => {
    chain = chain.then(async () => {
      if (broken) return
      try {
        await handle(message)
      } catch (e) {
        broken = true
        post({ failed: isStoreError(e) ? e.reason : e instanceof Error ? e.message : String(e), corrupt: e instanceof RecordCorrupt })
      }
    })
  })
  post({ ready: true })
}
