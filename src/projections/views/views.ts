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
 * is folded again from the whole log IN THE BACKGROUND: startup never waits for it. Until it is done the view is
 * refused (`ViewRefolding`: REST 503 with Retry-After, an MCP error), while writes and every other read go on; it
 * is then served from the next batch, or at once when the writer is idle, and stored. Going live is announced once
 * to the view's subscribers, like a change of its value: at the seq it goes live at (the batch's last, or the
 * position it was folded to when idle).
 */
import { Context, Data, Duration, Effect, Either, Layer } from "effect"
import { EventLog, type EventLogShape, type ViewRecord } from "../../log/event-log.ts"
import { Catalog } from "../../domain/app-catalog.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import type { CompiledView } from "../../domain/compile-views.ts"
import type { Change } from "../../domain/events.ts"
import { viewUri } from "../../domain/uri.ts"
import { runUserCode } from "../../domain/decide/user-code.ts"
import { initialCopy, makeViewFolder, misfitFailure, viewFailure, type FoldStart, type FoldedView } from "./view-fold.ts"
import { parseViewRecord, viewDefinition, viewRecordJson } from "../../log/view-record.ts"
import { ChangeFeed, type ViewUpdate } from "../../subscriptions/change-feed.ts"

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

export interface ViewSnapshot {
  readonly name: string
  readonly description?: string
  /** The log sequence of the value's last change (0: never changed). */
  readonly seq: number
  /** The value's JSON text; absent when the view failed or is being folded again. */
  readonly valueJson?: string
  readonly failed?: string
  /** Why the view is being folded again in the background (it is not served until then). */
  readonly refolding?: string
}
export type { ViewUpdate } from "../../subscriptions/change-feed.ts"

export interface PreparedViews {
  /** The records to store with the batch. */
  readonly records: ReadonlyArray<ViewRecord>
  /** Views that failed in this batch: what to log. */
  readonly failures: ReadonlyArray<{ readonly message: string; readonly stack: string }>
  /** The batch is durable: publish the new values; the views whose value changed, by name. */
  readonly commit: () => ReadonlyArray<ViewUpdate>
  /** The batch was not written: keep the values as they were. */
  readonly discard: () => void
}

export interface ViewsRecovery {
  /** Views served from a stored value (with its tail folded on top, if any). */
  readonly loaded: number
  /** Events read to fold the tails of stored values at startup. */
  readonly tailEvents: number
  /** Views folded from the whole log: over an empty log at once, else in the background. */
  readonly rebuilt: ReadonlyArray<string>
  readonly millis: number
}

export interface ViewsShape {
  readonly get: (name: string) => ViewSnapshot | undefined
  readonly all: () => ReadonlyArray<ViewSnapshot>
  /** Folds a batch's changes, before it is written. Never throws: user code failures fail their view. */
  readonly prepare: (changes: ReadonlyArray<Change>) => PreparedViews
  readonly recovered: ViewsRecovery
  /** The records of every view served, as folded to `at` (this node's position): a PostgreSQL node's snapshot. */
  readonly snapshot: (at: number) => ReadonlyArray<ViewRecord>
  /**
   * Folds the views being folded again, until each is served; run once, in the background (ViewsLive forks it).
   * `publish` is told the views that went live while the writer was idle (those served from a batch go out with
   * its commit), at once, in the step that serves them.
   */
  readonly refold: (publish: (live: ReadonlyArray<ViewUpdate>) => void) => Effect.Effect<void>
}

export class Views extends Context.Tag("writeonce/Views")<Views, ViewsShape>() {}

interface ViewState {
  readonly view: CompiledView
  readonly definition: string
  value: unknown
  json: string | undefined
  seq: number
  failed: string | undefined
  /** Not stored as served yet (folded again in the background): its record is written with the next batch. */
  dirty: boolean
  /** Why it is being folded again in the background; undefined once served. */
  refolding: string | undefined
  /** The background fold's result, exact at seq `at`: served from the batch after `at`, or at once when idle. */
  ready: Ready | undefined
}

interface Ready {
  readonly at: number
  readonly value?: unknown
  readonly json?: string
  readonly seq: number
  readonly failed?: string
}

interface Next {
  readonly state: ViewState
  readonly value?: unknown
  readonly json?: string
  readonly seq: number
  readonly failed?: string
  readonly changed: boolean
}

const snapshot = (s: ViewState): ViewSnapshot => ({
  name: s.view.name,
  ...(s.view.description === undefined ? {} : { description: s.view.description }),
  seq: s.seq,
  ...(s.refolding !== undefined ? { refolding: s.refolding } : s.failed === undefined ? { valueJson: s.json } : { failed: s.failed })
})

/** How often the background fold looks again while a batch is between its prepare and its commit. */
const INSTALL_POLL = Duration.millis(10)
/** The pause before the background fold reads again after the store could not be read. */
const REFOLD_RETRY = Duration.seconds(1)

/** The notice of a view going live (or changing) at `seq`. */
const updateOf = (s: ViewState, seq: number): ViewUpdate => ({ name: s.view.name, uri: viewUri(s.view.name), seq })

const readyOf = (view: CompiledView, at: number, folded: FoldedView): Ready => {
  if (folded.failed !== undefined) return { at, seq: folded.seq, failed: folded.failed }
  // A copy of its own: the fold goes on from its value, and the served value's evolve may change its state in place.
  const value = Either.getOrElse(view.decode(JSON.parse(folded.valueJson!)), () => folded.value)
  return { at, value, json: folded.valueJson!, seq: folded.seq }
}

/**
 * The projection over the given states (recovered, or to be folded again: `refolding`), exact at `head`. `log` and
 * `catalog` serve the background fold of the views being folded again.
 */
export const makeViews = (
  states: ReadonlyArray<ViewState>,
  recovered: ViewsRecovery,
  head: number,
  log?: EventLogShape,
  catalog?: CompiledApp
): ViewsShape => {
  const byName = new Map(states.map((s) => [s.view.name, s]))
  // The seq the served values are exact at, and the batches prepared but not yet committed or discarded: a view
  // folded again in the background is served only at a point where both say nothing is in between.
  let committed = head
  let outstanding = 0
  const prepare = (changes: ReadonlyArray<Change>): PreparedViews => {
    const next: Array<Next> = []
    const failures: Array<{ message: string; stack: string }> = []
    const evolved: Array<ViewState> = []
    const installed: Array<ViewState> = []
    const lastSeq = changes.length === 0 ? committed : changes[changes.length - 1].event.seq
    for (const s of states) {
      let base: { readonly value?: unknown; readonly json?: string; readonly seq: number } = s
      if (s.refolding !== undefined) {
        // Folded again up to the seq this batch follows: it is served from this batch on, its record stored with it.
        const r = s.ready
        if (r === undefined || r.at !== committed) continue
        installed.push(s)
        if (r.failed !== undefined) {
          next.push({ state: s, seq: r.seq, failed: r.failed, changed: true })
          continue
        }
        base = r
      } else if (s.failed !== undefined) {
        if (s.dirty) next.push({ state: s, seq: s.seq, failed: s.failed, changed: false })
        continue
      }
      const installing = s.refolding !== undefined
      let value = base.value
      let last: Change | undefined
      let failed: string | undefined
      for (const c of changes) {
        if (!s.view.folds(c.event)) continue
        if (last === undefined) evolved.push(s)
        last = c
        const state = value
        const outcome = runUserCode(() => s.view.evolve(state, { event: c.event, before: c.before ?? null, after: c.row }))
        if (Either.isLeft(outcome)) {
          failed = viewFailure(s.view, c.event, outcome.left.reason)
          failures.push({ message: failed, stack: outcome.left.trace })
          break
        }
        value = outcome.right
      }
      if (last === undefined) {
        if (s.dirty || installing) next.push({ state: s, value: base.value, json: base.json, seq: base.seq, changed: installing })
        continue
      }
      if (failed === undefined) {
        const encoded = s.view.encode(value)
        if (Either.isRight(encoded)) {
          const changed = encoded.right !== base.json
          if (changed || s.dirty || installing) next.push({ state: s, value, json: encoded.right, seq: changed ? last.event.seq : base.seq, changed: changed || installing })
          continue
        }
        failed = misfitFailure(s.view, last.event, encoded.left)
        failures.push({ message: failed, stack: failed })
      }
      next.push({ state: s, seq: last.event.seq, failed, changed: true })
    }
    outstanding++
    let settled = false
    return {
      records: next.map((n) => ({
        name: n.state.view.name,
        json: viewRecordJson(n.state.definition, n.seq, n.failed === undefined ? { valueJson: n.json! } : { failed: n.failed })
      })),
      failures,
      commit: () => {
        if (!settled) outstanding--
        settled = true
        committed = Math.max(committed, lastSeq)
        const updates: Array<ViewUpdate> = []
        for (const n of next) {
          const s = n.state
          s.dirty = false
          s.refolding = undefined
          s.ready = undefined
          s.seq = n.seq
          if (n.failed !== undefined) {
            s.failed = n.failed
            s.json = undefined
            s.value = undefined
          } else {
            s.value = n.value
            s.json = n.json
          }
          // A view going live with this batch is announced at its last seq, whatever the seq of its value's last change.
          if (n.changed) updates.push(updateOf(s, installed.includes(s) ? lastSeq : n.seq))
        }
        return updates
      },
      discard: () => {
        if (!settled) outstanding--
        settled = true
        // An evolve that changed its state in place must not leak a batch that was never written.
        for (const s of evolved) {
          if (installed.includes(s)) {
            const r = s.ready!
            s.ready = { ...r, value: Either.getOrElse(s.view.decode(JSON.parse(r.json!)), () => r.value) }
          } else if (s.json !== undefined) s.value = Either.getOrElse(s.view.decode(JSON.parse(s.json)), () => s.value)
        }
      }
    }
  }

  const refolding = () => states.filter((s) => s.refolding !== undefined)

  /** Serves every view still being folded again from its result at `at`, when nothing is in between. */
  const installIdle = (at: number) => {
    const records: Array<ViewRecord> = []
    const live: Array<ViewUpdate> = []
    if (outstanding > 0 || committed !== at) return { records, live }
    for (const s of refolding()) {
      live.push(updateOf(s, at))
      const r = s.ready!
      s.refolding = undefined
      s.ready = undefined
      s.seq = r.seq
      s.failed = r.failed
      s.value = r.value
      s.json = r.json
      // Written with the next batch too: a record stored on its own names its seq (`at`), and is trusted only there.
      s.dirty = true
      if (r.failed === undefined) records.push({ name: s.view.name, json: viewRecordJson(s.definition, r.seq, { valueJson: r.json! }, at), at })
    }
    return { records, live }
  }

  const refold = (publish: (live: ReadonlyArray<ViewUpdate>) => void): Effect.Effect<void> => Effect.suspend(() => {
    const pending = refolding()
    if (pending.length === 0 || log === undefined || catalog === undefined) return Effect.void
    const started = Date.now()
    const folder = makeViewFolder(log, catalog, pending.map((s): FoldStart => ({ view: s.view, after: 0 })), true)
    const names = pending.map((s) => s.view.name).join(", ")
    const step: Effect.Effect<boolean> = Effect.gen(function* () {
      const target = committed
      const read = yield* Effect.either(folder.readTo(target))
      if (Either.isLeft(read)) {
        yield* Effect.logWarning(`views ${names}: cannot read the log to fold them again (${read.left.reason}); trying again`)
        yield* Effect.sleep(REFOLD_RETRY)
        return false
      }
      const left = refolding()
      if (left.length === 0) return true
      const folded = folder.result()
      for (const s of left) s.ready = readyOf(s.view, target, folded.get(s.view.name)!)
      const { records, live } = installIdle(target)
      if (live.length > 0) publish(live)
      if (refolding().length > 0) {
        // A batch is between its prepare and its commit: it serves them, or the next look does.
        if (committed === target) yield* Effect.sleep(INSTALL_POLL)
        return false
      }
      for (const s of pending) if (s.failed !== undefined) yield* Effect.logError(`${s.failed} (while folding it again from the log)`)
      yield* Effect.logInfo(`views: ${names} folded again from ${folder.read()} events in ${Date.now() - started} ms; served from seq ${target}`)
      if (records.length > 0 && log.storeViews !== undefined) {
        yield* Effect.catchAll(log.storeViews(records), (e) =>
          Effect.logWarning(`views ${names}: cannot store their values folded again (${e.reason}); they are stored with the next write`))
      }
      return true
    })
    return Effect.asVoid(Effect.iterate(false, { while: (done) => !done, body: () => step }))
  })

  return {
    get: (name) => {
      const s = byName.get(name)
      return s === undefined ? undefined : snapshot(s)
    },
    all: () => states.map(snapshot),
    prepare,
    recovered,
    snapshot: (at) =>
      states.flatMap((s) =>
        s.refolding !== undefined || s.failed !== undefined || s.json === undefined
          ? []
          : [{ name: s.view.name, json: viewRecordJson(s.definition, s.seq, { valueJson: s.json }, at), at }]),
    refold
  }
}

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
    const views = [...catalog.views.values()]
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

/**
 * The views recovered from the store; those with no usable stored value are folded again in the background, and
 * announced on the change feed when they go live with no batch to carry the notice.
 */
export const ViewsLive = Layer.scoped(
  Views,
  Effect.gen(function* () {
    const views = yield* recoverViews(yield* EventLog, yield* Catalog)
    const feed = yield* ChangeFeed
    yield* Effect.forkScoped(views.refold((live) => feed.publish([], live)))
    return views
  })
)
