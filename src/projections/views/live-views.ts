/**
 * The views as the writer keeps them, in memory: each declared view's value, folded batch by batch (`prepare`,
 * then `commit` or `discard`), and the background fold of the views being folded again from the log, served once
 * nothing is in between (`refold`). Startup builds it from the stored values (recovery.ts); views.ts serves it.
 */
import { Deferred, Duration, Effect, Either, FiberId } from "effect"
import type { EventLogShape, ViewEntryWrite, ViewRecord } from "../../log/event-log.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import type { CompiledView } from "../../domain/compile-views.ts"
import type { Change } from "../../domain/events.ts"
import { viewUri } from "../../domain/uri.ts"
import { runUserCode } from "../../domain/decide/user-code.ts"
import { makeViewFolder, misfitFailure, viewFailure, type FoldStart, type FoldedView, type ViewFolder } from "./view-fold.ts"
import { viewRecordJson } from "../../log/view-record.ts"
import type { ViewUpdate } from "../../subscriptions/change-feed.ts"

export interface ViewSnapshot {
  readonly name: string
  readonly description?: string
  /** The log sequence of the value's last change (0: never changed). */
  readonly seq: number
  /** The value's JSON text; absent when the view failed or is being folded again. */
  readonly valueJson?: string
  readonly failed?: string
  /** Why the view is being folded again in the background (it is not served until then, unless `stale`). */
  readonly refolding?: string
  /** The digest of the declaration whose fold the served value is (absent when no value is served). */
  readonly version?: string
  /** Present when the value served is an older declaration's, frozen while the current one is folded. */
  readonly stale?: StaleMark
}

/**
 * What marks an older declaration's value served while the view's current declaration is folded from the log (or
 * after that fold failed): the older value is frozen, exact at seq `exactAt`, since the older `evolve` is gone.
 */
export interface StaleMark {
  /** The log position the served value is exact at: events after it are not in it. */
  readonly exactAt: number
  /** The digest of the current declaration, folded in the background (or failed: `failed`). */
  readonly next: string
  /** Why the current declaration's fold failed: the older value stays served until a restart folds it again. */
  readonly failed?: string
}

export interface PreparedViews {
  /** The records to store with the batch. */
  readonly records: ReadonlyArray<ViewRecord>
  /** The keyed views' entries the batch changed, to store with it (keyed-views.ts). */
  readonly entries?: ReadonlyArray<ViewEntryWrite>
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
   * its commit), at once, in the step that serves them. `folderOf` makes the fold's reader (default: paced on
   * this thread; fold-thread.ts folds in a worker thread).
   */
  readonly refold: <R = never>(publish: (live: ReadonlyArray<ViewUpdate>) => void, folderOf?: FolderOf<R>) => Effect.Effect<void, never, R>
  /**
   * Once `refold` is done: the seq up to which it read every event from seq 1, each checked on the way (sequence and
   * checksum, as the log audit checks them), or 0 when it read none (nothing to fold again). The log audit then
   * checks only what comes after (runtime.ts).
   */
  readonly checked: Effect.Effect<number>
}

/**
 * Makes the reader of a fold of `views` from the start of the log. `served`: each of them serves an older value
 * meanwhile (none is refused until the fold ends, so the fold may take its time).
 */
export type FolderOf<R> = (log: EventLogShape, catalog: CompiledApp, views: ReadonlyArray<CompiledView>, served: boolean) => Effect.Effect<ViewFolder, never, R>

/** A fold on this thread, paced: the older values of the views folded again are served meanwhile, and so is everything else. */
export const pacedHere: FolderOf<never> = (log, catalog, views) =>
  Effect.sync(() => makeViewFolder(log, catalog, views.map((view): FoldStart => ({ view, after: 0 })), true, true))

export interface ViewState {
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
  /**
   * The value of an older declaration of the view, served (frozen) while this declaration is folded from the log,
   * and after that fold failed; undefined once this declaration's value is served, or when there is none (503).
   */
  older: OlderValue | undefined
}

export interface OlderValue {
  /** The digest of the declaration that folded it. */
  readonly definition: string
  readonly json: string
  readonly seq: number
  readonly exactAt: number
  /** Why this declaration's fold failed: the older value is served until a restart. */
  failed: string | undefined
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

// Every read of a view makes one. Object.assign, not `{ ...head, seq }`: on Node 20 a spread followed by a key it
// did not have makes a new hidden class per call, kept in the old generation (test/unit/hot-path-shapes.test.ts).
const snapshot = (s: ViewState): ViewSnapshot => {
  const head = { name: s.view.name, ...(s.view.description === undefined ? {} : { description: s.view.description }) }
  const o = s.older
  if (o !== undefined) {
    const stale: StaleMark = { exactAt: o.exactAt, next: s.definition, ...(o.failed === undefined ? {} : { failed: o.failed }) }
    return Object.assign(head, { seq: o.seq, valueJson: o.json, version: o.definition, stale })
  }
  return Object.assign(
    head,
    { seq: s.seq },
    s.refolding !== undefined ? { refolding: s.refolding } : s.failed === undefined ? { valueJson: s.json, version: s.definition } : { failed: s.failed }
  )
}

/** How often the background fold looks again while a batch is between its prepare and its commit. */
const INSTALL_POLL = Duration.millis(10)
/** The pause before the background fold reads again after the store could not be read. */
const REFOLD_RETRY = Duration.seconds(1)

/** What a failure of the new fold says of the older value. */
const olderStays = (older: OlderValue) => `its older declaration's value stays served, exact at seq ${older.exactAt}, until a restart`

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
    const keptOlder: Array<{ readonly state: ViewState; readonly failed: string }> = []
    const lastSeq = changes.length === 0 ? committed : changes[changes.length - 1].event.seq
    for (const s of states) {
      // The new declaration's fold failed: the older value stays served, frozen, and nothing is folded or stored.
      if (s.older !== undefined && s.refolding === undefined) continue
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
      // The new fold, about to be swapped in, fails on this batch: the older value stays served instead.
      if (installing && s.older !== undefined) {
        keptOlder.push({ state: s, failed })
        failures[failures.length - 1] = { ...failures[failures.length - 1], message: `${failed}; ${olderStays(s.older)}` }
        continue
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
        for (const k of keptOlder) if (k.state.refolding !== undefined) keepOlder(k.state, k.failed)
        for (const n of next) {
          const s = n.state
          s.dirty = false
          s.refolding = undefined
          s.ready = undefined
          // The swap: the older value is no longer served, and this batch's record of the new one replaces its record.
          s.older = undefined
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

  /**
   * A view whose new fold failed while an older value serves it: the older one stays served (frozen, marked with the
   * failure), and the stored record stays the older one's, so the next start folds the new declaration again.
   */
  const keepOlder = (s: ViewState, failed: string) => {
    s.older!.failed = failed
    s.refolding = undefined
    s.ready = undefined
  }

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
      s.older = undefined
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

  const checked = Deferred.unsafeMake<number>(FiberId.none)

  const refold = <R>(publish: (live: ReadonlyArray<ViewUpdate>) => void, folderOf: FolderOf<R> = pacedHere): Effect.Effect<void, never, R> => Effect.suspend(() => {
    const pending = refolding()
    if (pending.length === 0 || log === undefined || catalog === undefined) return Deferred.succeed(checked, 0)
    const started = Date.now()
    const served = pending.every((s) => s.older !== undefined)
    return Effect.flatMap(folderOf(log, catalog, pending.map((s) => s.view), served), (folder) => foldUntilServed(log, folder, pending, publish, started))
  })

  /** Takes `folder` to the writer's position until every view it folds is served (or kept older), then stores them. */
  const foldUntilServed = (
    log: EventLogShape,
    folder: ViewFolder,
    pending: ReadonlyArray<ViewState>,
    publish: (live: ReadonlyArray<ViewUpdate>) => void,
    started: number
  ): Effect.Effect<void> => {
    const names = pending.map((s) => s.view.name).join(", ")
    const step: Effect.Effect<boolean> = Effect.gen(function* () {
      const target = committed
      const read = yield* Effect.either(folder.readTo(target))
      if (Either.isLeft(read)) {
        const damaged = read.left._tag === "DataCorrupt" ? ". The log is damaged: stop the server and run `wo verify <data-dir>`" : ""
        yield* Effect.logWarning(`views ${names}: cannot read the log to fold them again (${read.left.reason}); trying again${damaged}`)
        yield* Effect.sleep(REFOLD_RETRY)
        return false
      }
      const left = refolding()
      if (left.length === 0) return true
      const folded = folder.result()
      for (const s of left) {
        const f = folded.get(s.view.name)!
        if (f.failed !== undefined && s.older !== undefined) {
          keepOlder(s, f.failed)
          yield* Effect.logError(`${f.failed} (while folding it again from the log); ${olderStays(s.older)}`)
        } else s.ready = readyOf(s.view, target, f)
      }
      const { records, live } = installIdle(target)
      if (live.length > 0) publish(live)
      if (refolding().length > 0) {
        // A batch is between its prepare and its commit: it serves them, or the next look does.
        if (committed === target) yield* Effect.sleep(INSTALL_POLL)
        return false
      }
      for (const s of pending) if (s.failed !== undefined) yield* Effect.logError(`${s.failed} (while folding it again from the log)`)
      const served = pending.filter((s) => s.older === undefined).map((s) => s.view.name).join(", ")
      const place = folder.place === undefined ? "" : ` ${folder.place()}`
      if (served !== "") yield* Effect.logInfo(`views: ${served} folded again from ${folder.read()} events${place} in ${Date.now() - started} ms; served from seq ${target}`)
      if (records.length > 0 && log.storeViews !== undefined) {
        yield* Effect.catchAll(log.storeViews(records), (e) =>
          Effect.logWarning(`views ${names}: cannot store their values folded again (${e.reason}); they are stored with the next write`))
      }
      // Every event up to `target` was read, in sequence, when as many were read as its seq says (no accepted gap).
      yield* Deferred.succeed(checked, folder.read() === target ? target : 0)
      return true
    })
    return Effect.asVoid(Effect.iterate(false, { while: (done) => !done, body: () => step }))
  }

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
    refold,
    checked: Deferred.await(checked)
  }
}
