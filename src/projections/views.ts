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
 * day. Startup loads the stored values (no replay); a view without a usable one (new, failed, or declared
 * differently since it was stored: `on`, `initial`, `schema` or `version`) is folded from the whole log once,
 * and stored at once, so that the next start loads it, whether a batch was written in between or not.
 */
import { Context, Data, Effect, Either, Layer } from "effect"
import { EventLog, type EventLogShape, type ViewRecord } from "../log/event-log.ts"
import { Catalog } from "../domain/app-catalog.ts"
import type { CompiledApp } from "../domain/compile.ts"
import type { CompiledView } from "../domain/compile-views.ts"
import { DataCorrupt } from "../domain/errors.ts"
import type { Change } from "../domain/events.ts"
import { viewUri } from "../domain/uri.ts"
import { runUserCode } from "../domain/user-code.ts"
import { foldViews, misfitFailure, viewFailure } from "./view-fold.ts"
import { parseViewRecord, viewDefinition, viewRecordJson } from "../log/view-record.ts"

/** A view whose evolve failed: served as an error naming it, until a restart folds it again. REST 500. */
export class ViewFailed extends Data.TaggedError("ViewFailed")<{ readonly name: string; readonly reason: string }> {
  override get message() {
    return `${this.reason}; it is folded again from the log at the next start`
  }
}

export interface ViewSnapshot {
  readonly name: string
  readonly description?: string
  /** The log sequence of the value's last change (0: never changed). */
  readonly seq: number
  /** The value's JSON text; absent when the view failed. */
  readonly valueJson?: string
  readonly failed?: string
}

/** A committed change of a view's value, routed to the subscribers of its URI. */
export interface ViewUpdate {
  readonly name: string
  readonly uri: string
  readonly seq: number
}

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
  readonly loaded: number
  readonly rebuilt: ReadonlyArray<string>
  readonly millis: number
}

export interface ViewsShape {
  readonly get: (name: string) => ViewSnapshot | undefined
  readonly all: () => ReadonlyArray<ViewSnapshot>
  /** Folds a batch's changes, before it is written. Never throws: user code failures fail their view. */
  readonly prepare: (changes: ReadonlyArray<Change>) => PreparedViews
  readonly recovered: ViewsRecovery
}

export class Views extends Context.Tag("writeonce/Views")<Views, ViewsShape>() {}

interface ViewState {
  readonly view: CompiledView
  readonly definition: string
  value: unknown
  json: string | undefined
  seq: number
  failed: string | undefined
  /** Rebuilt at startup and not stored yet (a log that cannot store views alone): written with the next batch. */
  dirty: boolean
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
  ...(s.failed === undefined ? { valueJson: s.json } : { failed: s.failed })
})

/** The projection over the given states (recovered or rebuilt). */
export const makeViews = (states: ReadonlyArray<ViewState>, recovered: ViewsRecovery): ViewsShape => {
  const byName = new Map(states.map((s) => [s.view.name, s]))
  const prepare = (changes: ReadonlyArray<Change>): PreparedViews => {
    const next: Array<Next> = []
    const failures: Array<{ message: string; stack: string }> = []
    const evolved: Array<ViewState> = []
    for (const s of states) {
      if (s.failed !== undefined) {
        if (s.dirty) next.push({ state: s, seq: s.seq, failed: s.failed, changed: false })
        continue
      }
      let value = s.value
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
        if (s.dirty) next.push({ state: s, value: s.value, json: s.json, seq: s.seq, changed: false })
        continue
      }
      if (failed === undefined) {
        const encoded = s.view.encode(value)
        if (Either.isRight(encoded)) {
          const changed = encoded.right !== s.json
          if (changed || s.dirty) next.push({ state: s, value, json: encoded.right, seq: changed ? last.event.seq : s.seq, changed })
          continue
        }
        failed = misfitFailure(s.view, last.event, encoded.left)
        failures.push({ message: failed, stack: failed })
      }
      next.push({ state: s, seq: last.event.seq, failed, changed: true })
    }
    return {
      records: next.map((n) => ({
        name: n.state.view.name,
        json: viewRecordJson(n.state.definition, n.seq, n.failed === undefined ? { valueJson: n.json! } : { failed: n.failed })
      })),
      failures,
      commit: () => {
        const updates: Array<ViewUpdate> = []
        for (const n of next) {
          const s = n.state
          s.dirty = false
          s.seq = n.seq
          if (n.failed !== undefined) {
            s.failed = n.failed
            s.json = undefined
            s.value = undefined
          } else {
            s.value = n.value
            s.json = n.json
          }
          if (n.changed) updates.push({ name: s.view.name, uri: viewUri(s.view.name), seq: n.seq })
        }
        return updates
      },
      discard: () => {
        // An evolve that changed its state in place must not leak a batch that was never written.
        for (const s of evolved) {
          if (s.json !== undefined) s.value = Either.getOrElse(s.view.decode(JSON.parse(s.json)), () => s.value)
        }
      }
    }
  }
  return {
    get: (name) => {
      const s = byName.get(name)
      return s === undefined ? undefined : snapshot(s)
    },
    all: () => states.map(snapshot),
    prepare,
    recovered
  }
}

/** Why a stored record cannot be used as it is (then the view is folded from the log), or undefined. */
const unusable = (record: { readonly definition: string; readonly failed?: string }, definition: string, tail: boolean) =>
  record.definition !== definition
    ? "its declaration changed since its state was stored"
    : record.failed !== undefined
    ? `it had failed (${record.failed})`
    : tail
    ? "the log holds events past the stored checkpoint"
    : undefined

/** Loads the stored values, folding from the log the views that have none usable. */
export const recoverViews = (log: EventLogShape, catalog: CompiledApp) =>
  Effect.gen(function* () {
    const started = Date.now()
    const views = [...catalog.views.values()]
    if (views.length === 0) return makeViews([], { loaded: 0, rebuilt: [], millis: 0 })
    const head = yield* log.head
    const stored = new Map((log.storedViews === undefined ? [] : yield* log.storedViews).map((v) => [v.name, v.record]))
    const states: Array<ViewState> = []
    const rebuild: Array<CompiledView> = []
    for (const view of views) {
      const definition = viewDefinition(view)
      const record = stored.get(view.name)
      if (record === undefined) {
        rebuild.push(view)
        continue
      }
      const parsed = parseViewRecord(record)
      if (Either.isLeft(parsed)) {
        return yield* new DataCorrupt({ reason: `corrupt record at key v!${view.name}: not a view record (${parsed.left})` })
      }
      const why = unusable(parsed.right, definition, head.checkpoint < head.lastSeq)
      const decoded = why === undefined ? view.decode(parsed.right.value) : undefined
      const encoded = decoded !== undefined && Either.isRight(decoded) ? view.encode(decoded.right) : undefined
      if (why !== undefined || encoded === undefined || Either.isLeft(encoded)) {
        yield* Effect.logInfo(`view ${view.name}: folding it from the log: ${why ?? "its stored value does not fit its schema"}`)
        rebuild.push(view)
        continue
      }
      states.push({ view, definition, value: (decoded as Either.Right<unknown, unknown>).right, json: encoded.right, seq: parsed.right.seq, failed: undefined, dirty: false })
    }
    if (rebuild.length > 0) {
      const folded = yield* foldViews(log, catalog, rebuild, true)
      const records: Array<ViewRecord> = []
      for (const view of rebuild) {
        const f = folded.get(view.name)!
        if (f.failed !== undefined) yield* Effect.logError(`${f.failed} (while folding it from the log at startup)`)
        const definition = viewDefinition(view)
        records.push({ name: view.name, json: viewRecordJson(definition, f.seq, f.failed === undefined ? { valueJson: f.valueJson! } : { failed: f.failed }) })
        states.push({ view, definition, value: f.value, json: f.valueJson, seq: f.seq, failed: f.failed, dirty: log.storeViews === undefined })
      }
      // Stored now, not with the next batch: a restart without a write in between loads them instead of folding again.
      if (log.storeViews !== undefined) yield* log.storeViews(records)
    }
    // Catalog order, whatever was loaded or folded first.
    states.sort((a, b) => views.indexOf(a.view) - views.indexOf(b.view))
    const millis = Date.now() - started
    yield* Effect.logInfo(
      `views: ${states.length - rebuild.length} loaded` +
        (rebuild.length > 0 ? `, ${rebuild.map((v) => v.name).join(", ")} folded from ${head.lastSeq} events` : "") + ` in ${millis} ms`
    )
    return makeViews(states, { loaded: states.length - rebuild.length, rebuilt: rebuild.map((v) => v.name), millis })
  })

/** The views recovered from the store (stored values, or folded from the log when they have none). */
export const ViewsLive = Layer.effect(
  Views,
  Effect.gen(function* () {
    return yield* recoverViews(yield* EventLog, yield* Catalog)
  })
)
