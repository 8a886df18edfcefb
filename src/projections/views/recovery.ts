/**
 * Startup recovery of the views: load the stored values (no replay of the log), fold on top the tail of a value
 * stored at an earlier seq (a PostgreSQL node's snapshot), and leave every view without a usable value (new,
 * failed, corrupt, or declared differently since it was stored) to the background fold (live-views.ts `refold`).
 */
import { Effect, Either } from "effect"
import type { EventLogShape } from "../../log/event-log.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import type { CompiledView } from "../../domain/compile-views.ts"
import { initialCopy, makeViewFolder, misfitFailure, type FoldStart } from "./view-fold.ts"
import { parseViewRecord, viewDefinition } from "../../log/view-record.ts"
import { makeViews, type ViewState } from "./live-views.ts"

/** Why a stored record cannot be used as it is (then the view is folded again from the log), or undefined. */
const unusable = (record: { readonly definition: string; readonly failed?: string }, definition: string) =>
  record.definition !== definition
    ? "its declaration changed since its value was stored"
    : record.failed !== undefined
    ? `it had failed (${record.failed})`
    : undefined

/** A view over an empty log: its initial value (a copy of its own), stored with the first batch. */
const initialState = (view: CompiledView, definition: string): ViewState => {
  const value = initialCopy(view)
  const json = view.encode(value)
  return Either.isRight(json)
    ? { view, definition, value, json: json.right, seq: 0, failed: undefined, dirty: true, refolding: undefined, ready: undefined }
    : { view, definition, value: undefined, json: undefined, seq: 0, failed: misfitFailure(view, undefined, json.left), dirty: true, refolding: undefined, ready: undefined }
}

const fresh = (view: CompiledView, definition: string, refolding: string): ViewState =>
  ({ view, definition, value: undefined, json: undefined, seq: 0, failed: undefined, dirty: false, refolding, ready: undefined })

/**
 * Loads the stored values (folding on top the tail of a value stored at an earlier seq); the views with none usable
 * are left to the background fold (`refold`).
 */
export const recoverViews = (log: EventLogShape, catalog: CompiledApp) =>
  Effect.gen(function* () {
    const started = Date.now()
    // Keyed views keep their entries apart (keyed-views.ts).
    const views = [...catalog.views.values()].filter((v) => !v.keyed)
    if (views.length === 0) return makeViews([], { loaded: 0, tailEvents: 0, rebuilt: [], millis: 0 }, 0)
    const head = yield* log.head
    const stored = new Map((log.storedViews === undefined ? [] : yield* log.storedViews).map((v) => [v.name, v]))
    const states: Array<ViewState> = []
    const tails: Array<FoldStart & { readonly definition: string }> = []
    // Folded from the log (over an empty log: its initial value at once; else in the background).
    const rebuilt: Array<string> = []
    for (const view of views) {
      const definition = viewDefinition(view)
      const found = stored.get(view.name)
      const refoldIt = (why: string) =>
        (rebuilt.push(view.name), head.lastSeq === 0)
          ? Effect.sync(() => states.push(initialState(view, definition)))
          : Effect.sync(() => states.push(fresh(view, definition, why))).pipe(
            Effect.zipLeft(Effect.logInfo(`view ${view.name}: folding it again from the log in the background: ${why}`)))
      if (found === undefined) {
        yield* refoldIt("it has no stored value")
        continue
      }
      if (found.corrupt !== undefined) {
        yield* Effect.logWarning(`view ${view.name}: its stored value is corrupt (${found.corrupt}); it is not served`)
        yield* refoldIt("its stored value is corrupt")
        continue
      }
      const parsed = parseViewRecord(found.record)
      if (Either.isLeft(parsed)) {
        yield* refoldIt(`its stored record is not a view record (${parsed.left})`)
        continue
      }
      const record = parsed.right
      // A record written with a batch is exact at the checkpoint; one written on its own, at its `at`.
      const at = record.at ?? head.checkpoint
      const why = unusable(record, definition) ??
        (at > head.lastSeq
          ? `it was stored at seq ${at}, past the log's head ${head.lastSeq}`
          : at < head.lastSeq && (record.at === undefined || log.eventsOf === undefined)
          ? "the log holds events past its stored value"
          : undefined)
      const decoded = why === undefined ? view.decode(record.value) : undefined
      const encoded = decoded !== undefined && Either.isRight(decoded) ? view.encode(decoded.right) : undefined
      if (why !== undefined || encoded === undefined || Either.isLeft(encoded)) {
        yield* refoldIt(why ?? "its stored value does not fit its schema")
        continue
      }
      const value = (decoded as Either.Right<unknown, unknown>).right
      if (at < head.lastSeq) tails.push({ view, definition, after: at, value, json: encoded.right, seq: record.seq })
      else states.push({ view, definition, value, json: encoded.right, seq: record.seq, failed: undefined, dirty: false, refolding: undefined, ready: undefined })
    }
    let tailEvents = 0
    if (tails.length > 0) {
      // Only the events after each stored value: the log is totally ordered, so a value stored at s by any node is exact at s.
      const folder = makeViewFolder(log, catalog, tails, true)
      yield* folder.readTo(head.lastSeq)
      tailEvents = folder.read()
      const folded = folder.result()
      for (const t of tails) {
        const f = folded.get(t.view.name)!
        if (f.failed !== undefined) yield* Effect.logError(`${f.failed} (while folding the tail of its stored value at startup)`)
        states.push({ view: t.view, definition: t.definition, value: f.value, json: f.valueJson, seq: f.seq, failed: f.failed, dirty: false, refolding: undefined, ready: undefined })
      }
    }
    // Catalog order, whatever was loaded or folded first.
    states.sort((a, b) => views.indexOf(a.view) - views.indexOf(b.view))
    const loaded = states.length - rebuilt.length
    const projection = makeViews(states, { loaded, tailEvents, rebuilt, millis: Date.now() - started }, head.lastSeq, log, catalog)
    // The tail folded here is stored at once: the next start folds only what comes after it.
    if (tailEvents > 0 && log.storeViews !== undefined) {
      yield* Effect.catchAll(log.storeViews(projection.snapshot(head.lastSeq)), (e) =>
        Effect.logWarning(`views: cannot store their values at seq ${head.lastSeq} (${e.reason}); the next start folds the tail again`))
    }
    yield* Effect.logInfo(
      `views: ${loaded} loaded` + (tails.length > 0 ? ` (${tailEvents} events after their stored values folded)` : "") +
        (head.lastSeq > 0 && rebuilt.length > 0 ? `, ${rebuilt.join(", ")} folding again in the background` : "") + ` in ${Date.now() - started} ms`
    )
    return projection
  })
