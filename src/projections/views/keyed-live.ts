/**
 * The keyed views as the writer keeps them: per view, the definition whose entries serve and its state (served,
 * failed, or being folded again in the background); the entries themselves stay in the store (keyed-store.ts).
 * Each batch is folded into the entries it touches (`prepare`, then `commit` or `discard`); a view folded again
 * from the log is served once it has caught up and nothing is in between (`refold`), as whole views are
 * (live-views.ts). Startup builds it (keyed-recovery.ts); keyed-views.ts serves it.
 */
import { Duration, Effect, Either, Schedule } from "effect"
import type { EventLogShape, ViewEntryWrite, ViewRecord } from "../../log/event-log.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import type { ViewChange } from "../../domain/catalog.ts"
import { viewChangeCopy, type CompiledView } from "../../domain/compile-views.ts"
import type { Change } from "../../domain/events.ts"
import { isStoreError, StoreFailed, type StoreError } from "../../domain/errors.ts"
import { runUserCode } from "../../domain/decide/user-code.ts"
import { viewEntryUri, viewUri } from "../../domain/uri.ts"
import { keyedViewRecordJson } from "../../log/view-entry-record.ts"
import type { ViewUpdate } from "../../subscriptions/change-feed.ts"
import { entryWrites, foldKeyedChanges, makeKeyedFolder, type ChangedEntry } from "./keyed-fold.ts"
import { listEntries } from "./keyed-list.ts"
import type { KeyedStore } from "./keyed-store.ts"
import type { KeyedViewsRecovery, KeyedViewsShape, KeyedViewStatus, PreparedKeyed } from "./keyed-shape.ts"
import { ViewFailed, ViewRefolding, type StaleMarker } from "./views.ts"

export interface KeyedState {
  readonly view: CompiledView
  /** The digest of its declaration: its entries' generation (log-keys.ts `w!`). */
  readonly definition: string
  failed: string | undefined
  /** Why it is being folded again in the background; undefined once served. */
  refolding: string | undefined
  /** Its record (`v!<name>`) is not stored as it stands yet: written with the next batch. */
  dirty: boolean
  /** The background fold caught up to seq `at` (and failed, if `failed`): served from the batch after `at`, or when idle. */
  ready: { readonly at: number; readonly failed?: string } | undefined
  /** A generation another declaration left in the store: cleared once this one serves. */
  readonly replaces: ReadonlyArray<string>
  /**
   * The former declaration's generation, which serves (marked stale) while this one is folded, and after its fold
   * failed; undefined once this one serves, or when there is none (new view, failed or in-memory entries).
   */
  former: string | undefined
  /** The seq the former declaration's entries are exact at (frozen there: nothing folds into them any more). */
  formerAt?: number
}

/** How often the background fold looks again while a batch is between its prepare and its commit. */
const INSTALL_POLL = Duration.millis(10)
/** The pause before the background fold reads again after the store could not be read or written. */
const REFOLD_RETRY = Duration.seconds(1)

/** Why a view serves its former declaration's entries, or undefined when it serves its own (or none). */
const staleness = (s: KeyedState): string | undefined =>
  s.former === undefined
    ? undefined
    : s.refolding !== undefined
    ? `view ${s.view.name} is being folded again from the log (${s.refolding}); its former declaration's entries serve until then`
    : s.failed !== undefined
    ? `the new declaration of view ${s.view.name} failed (${s.failed}); its former declaration's entries serve, and the next start folds it again`
    : undefined

const statusOf = (s: KeyedState): KeyedViewStatus => {
  const stale = staleness(s)
  return {
    name: s.view.name,
    ...(s.view.description === undefined ? {} : { description: s.view.description }),
    ...(s.refolding !== undefined ? { refolding: s.refolding } : s.failed !== undefined ? { failed: s.failed } : {}),
    ...(stale === undefined ? {} : { stale })
  }
}

const recordOf = (s: KeyedState, failed?: { readonly seq: number; readonly reason: string }): ViewRecord =>
  ({ name: s.view.name, json: keyedViewRecordJson(s.definition, failed) })

const noEntries: ReadonlyArray<ViewEntryWrite> = []

/** The keys `view` gives the changes it folds; a key that throws is left to the fold, which fails the view. */
export const keysOf = (view: CompiledView, changes: ReadonlyArray<ViewChange>) => {
  const keys = new Set<string>()
  for (const c of changes) {
    if (!view.folds(c.event)) continue
    const keyed = runUserCode(() => view.key!(viewChangeCopy(c)))
    if (Either.isRight(keyed) && keyed.right !== undefined) keys.add(keyed.right)
  }
  return keys
}

/** The keyed views over `states`, exact at `head`; `log` and `catalog` serve the background fold. */
export const makeKeyedViews = (
  states: ReadonlyArray<KeyedState>,
  store: KeyedStore,
  recovered: KeyedViewsRecovery,
  head: number,
  log: EventLogShape,
  catalog: CompiledApp
): KeyedViewsShape => {
  const byName = new Map(states.map((s) => [s.view.name, s]))
  // As live-views.ts: the seq the served entries are exact at, and the batches prepared but not settled. A view
  // folded again is served only where nothing is in between.
  let committed = head
  let outstanding = 0

  const prepare = (changes: ReadonlyArray<Change>): PreparedKeyed => {
    const records: Array<ViewRecord> = []
    const entries: Array<ViewEntryWrite> = []
    const failures: Array<{ message: string; stack: string }> = []
    const changed: Array<{ readonly state: KeyedState; readonly entries: ReadonlyArray<ChangedEntry> }> = []
    const failing: Array<{ readonly state: KeyedState; readonly reason: string }> = []
    const installed: Array<KeyedState> = []
    const lastSeq = changes.length === 0 ? committed : changes[changes.length - 1].event.seq
    let viewChanges: Array<ViewChange> | undefined
    for (const s of states) {
      if (s.refolding !== undefined) {
        // Caught up to the seq this batch follows: served from this batch on.
        const r = s.ready
        if (r === undefined || r.at !== committed) continue
        installed.push(s)
        if (r.failed !== undefined) {
          failing.push({ state: s, reason: r.failed })
          // With a former declaration serving, its record stays: the next start folds the new one again beside it.
          if (store.durable && s.former === undefined) records.push(recordOf(s, { seq: r.at, reason: r.failed }))
          continue
        }
      } else if (s.failed !== undefined) {
        if (s.dirty && store.durable) records.push(recordOf(s, { seq: committed, reason: s.failed }))
        continue
      }
      viewChanges ??= changes.map((c) => ({ event: c.event, before: c.before ?? null, after: c.row }))
      const outcome = foldKeyedChanges(s.view, viewChanges, (key) => store.read(s.view.name, s.definition, key))
      if (outcome._tag === "Failed") {
        failures.push({ message: outcome.reason, stack: outcome.stack })
        failing.push({ state: s, reason: outcome.reason })
        // As above: a former declaration still serving keeps its record.
        if (store.durable && s.former === undefined) records.push(recordOf(s, { seq: outcome.seq, reason: outcome.reason }))
        continue
      }
      // Its record names this declaration once it serves: with the batch it goes live in, or the next one.
      if (store.durable && (s.dirty || s.refolding !== undefined)) records.push(recordOf(s))
      if (outcome.entries.length === 0) continue
      changed.push({ state: s, entries: outcome.entries })
      for (const w of entryWrites(s.view.name, s.definition, outcome.entries)) entries.push(w)
    }
    outstanding++
    let settled = false
    const settle = () => {
      if (!settled) outstanding--
      settled = true
    }
    return {
      records,
      entries: entries.length === 0 ? noEntries : entries,
      failures,
      commit: () => {
        settle()
        committed = Math.max(committed, lastSeq)
        store.committed(entries)
        const updates: Array<ViewUpdate> = []
        for (const s of installed) {
          s.refolding = undefined
          s.ready = undefined
          if (!failing.some((f) => f.state === s)) s.former = undefined
          // Going live is announced once, at the batch's last seq, like a whole view folded again.
          updates.push({ name: s.view.name, uri: viewUri(s.view.name), seq: lastSeq })
        }
        for (const s of states) if (s.failed === undefined && s.refolding === undefined) s.dirty = false
        for (const { state, reason } of failing) {
          state.failed = reason
          state.dirty = false
        }
        for (const { state, entries: changedEntries } of changed) {
          if (state.failed !== undefined) continue
          for (const e of changedEntries) updates.push({ name: state.view.name, key: e.key, uri: viewEntryUri(state.view.name, e.key), seq: e.seq })
        }
        return updates
      },
      // Nothing was applied: the entries stay as stored, the states as they were.
      discard: settle
    }
  }

  const landed = (changes: ReadonlyArray<Change>): PreparedKeyed => {
    if (!store.durable) return prepare(changes)
    const lastSeq = changes.length === 0 ? committed : changes[changes.length - 1].event.seq
    return {
      records: [],
      failures: [],
      commit: () => {
        committed = Math.max(committed, lastSeq)
        store.forget()
        return []
      },
      discard: () => undefined
    }
  }

  const refolding = () => states.filter((s) => s.refolding !== undefined)

  /** Serves every view folded again up to `at`, when nothing is in between; answers their records and notices. */
  const installIdle = (at: number) => {
    const records: Array<ViewRecord> = []
    const live: Array<ViewUpdate> = []
    if (outstanding > 0 || committed !== at) return { records, live }
    for (const s of refolding()) {
      const r = s.ready
      if (r === undefined || r.at !== at) continue
      live.push({ name: s.view.name, uri: viewUri(s.view.name), seq: at })
      s.refolding = undefined
      s.ready = undefined
      s.failed = r.failed
      if (r.failed === undefined) s.former = undefined
      else if (s.former !== undefined) continue // the former declaration's record stays (see prepare)
      // Written with the next batch too, should this write fail.
      s.dirty = true
      records.push(recordOf(s, r.failed === undefined ? undefined : { seq: at, reason: r.failed }))
    }
    return { records, live }
  }

  const refold = (publish: (live: ReadonlyArray<ViewUpdate>) => void): Effect.Effect<void> => Effect.suspend(() => {
    const pending = refolding()
    if (pending.length === 0) return Effect.void
    const started = Date.now()
    const names = pending.map((s) => s.view.name).join(", ")
    const stateOf = new Map(pending.map((s) => [s.view.name, s]))
    // A partial fold (a stop mid-fold) or a failed one may have left entries in this generation: cleared first.
    const clearing = Effect.forEach(pending, (s) => store.clear(s.view.name, s.definition), { discard: true })
    const folder = makeKeyedFolder(log, catalog, pending.map((s) => s.view), {
      read: (view, key) => store.read(view.name, stateOf.get(view.name)!.definition, key),
      put: (view, changedEntries) => store.write(entryWrites(view.name, stateOf.get(view.name)!.definition, changedEntries))
    }, 0, true)
    const step: Effect.Effect<boolean> = Effect.gen(function* () {
      const target = committed
      const read = yield* Effect.either(folder.readTo(target))
      if (Either.isLeft(read)) {
        yield* Effect.logWarning(`keyed views ${names}: cannot fold them from the log (${read.left.reason}); trying again`)
        yield* Effect.sleep(REFOLD_RETRY)
        return false
      }
      const left = refolding()
      if (left.length === 0) return true
      const failures = folder.failures()
      for (const s of left) {
        const f = failures.get(s.view.name)
        s.ready = f === undefined ? { at: target } : { at: target, failed: f.reason }
      }
      const { records, live } = installIdle(target)
      if (live.length > 0) publish(live)
      if (records.length > 0 && store.durable && log.storeViews !== undefined) {
        yield* Effect.catchAll(log.storeViews(records), (e) =>
          Effect.logWarning(`keyed views ${names}: cannot store their records (${e.reason}); they are stored with the next write`))
      }
      if (refolding().length > 0) {
        if (committed === target) yield* Effect.sleep(INSTALL_POLL)
        return false
      }
      for (const s of pending) if (s.failed !== undefined) yield* Effect.logError(`${s.failed} (while folding it from the log)`)
      yield* Effect.logInfo(`keyed views: ${names} folded from ${folder.read()} events in ${Date.now() - started} ms; served from seq ${target}`)
      return true
    })
    // The generations folded again are stored at once (PostgreSQL): memory holds them only until this snapshot, not
    // until the next interval's. Copied in the same step as `committed`: the entries are exact at it.
    const stored = Effect.suspend(() => {
      if (snapshot === undefined || !pending.some((s) => s.failed === undefined)) return Effect.void
      const at = committed
      return Effect.catchAll(snapshot(at), (e) =>
        Effect.logWarning(`keyed views ${names}: cannot store their entries at seq ${at} (${e.reason}); they are stored with the next snapshot`))
    })
    // A former declaration still serving (the new fold failed) keeps its entries.
    const cleared = Effect.suspend(() => Effect.forEach(pending.filter((s) => s.former === undefined), (s) => Effect.forEach(s.replaces, (old) =>
      Effect.catchAll(store.clear(s.view.name, old), (e) => Effect.logWarning(`keyed view ${s.view.name}: cannot clear the entries of its former declaration (${e.reason})`)), { discard: true }), { discard: true }))
    // Folding into a generation that still holds a former fold's entries would serve them: retried until cleared.
    return clearing.pipe(
      Effect.tapError((e) => Effect.logWarning(`keyed views ${names}: cannot clear a former fold (${e.reason}); trying again`)),
      Effect.retry(Schedule.spaced(REFOLD_RETRY)),
      // Retried forever: never fails.
      Effect.orDie,
      Effect.zipRight(Effect.iterate(false, { while: (done) => !done, body: () => step })),
      Effect.zipRight(stored),
      Effect.zipRight(cleared),
      Effect.asVoid
    )
  })

  /** The generation a read is served from (and why it is stale, if it is the former declaration's), or why none. */
  const served = (name: string) =>
    Effect.suspend((): Effect.Effect<{ readonly state: KeyedState; readonly definition: string; readonly stale?: string; readonly mark?: StaleMarker } | undefined, ViewFailed | ViewRefolding> => {
      const s = byName.get(name)
      if (s === undefined) return Effect.succeed(undefined)
      const stale = staleness(s)
      if (stale !== undefined) {
        const mark: StaleMarker = { version: s.former!, exactAt: s.formerAt ?? 0, nextVersion: s.definition, ...(s.failed === undefined ? {} : { nextFailed: s.failed }) }
        return Effect.succeed({ state: s, definition: s.former!, stale, mark })
      }
      if (s.refolding !== undefined) return Effect.fail(new ViewRefolding({ name, reason: s.refolding }))
      if (s.failed !== undefined) return Effect.fail(new ViewFailed({ name, reason: s.failed }))
      return Effect.succeed({ state: s, definition: s.definition })
    })

  const snapshots = store.snapshots
  /**
   * The served views' records and changed entries, exact at `at`. A view being folded again is left out, and so is
   * one whose new fold failed while its former declaration serves: the former's record stays, so that the next start
   * folds the new one again beside it.
   */
  const snapshot = snapshots === undefined ? undefined : (at: number) => {
    const served = states.filter((s) => s.refolding === undefined && s.former === undefined)
    const records = served.map((s) => ({ ...recordOf(s, s.failed === undefined ? undefined : { seq: at, reason: s.failed }), at }))
    const live = served.filter((s) => s.failed === undefined).map((s) => ({ name: s.view.name, definition: s.definition }))
    return snapshots.snapshot(live, records, at)
  }
  /** The keys each served view's `key` gives these changes (no evolve), read ahead of the synchronous fold. */
  const readAhead = snapshots === undefined ? undefined : (changes: ReadonlyArray<Change>) =>
    Effect.suspend(() => {
      const reads: Array<Effect.Effect<void, StoreError>> = []
      let viewChanges: Array<ViewChange> | undefined
      for (const s of states) {
        if (s.refolding !== undefined || s.failed !== undefined) continue
        viewChanges ??= changes.map((c) => ({ event: c.event, before: c.before ?? null, after: c.row }))
        const keys = keysOf(s.view, viewChanges)
        if (keys.size > 0) reads.push(snapshots.readAhead(s.view.name, s.definition, keys))
      }
      return Effect.all(reads, { discard: true })
    })

  return {
    names: states.map((s) => s.view.name),
    status: (name) => {
      const s = byName.get(name)
      return s === undefined ? undefined : statusOf(s)
    },
    get: (name, key) =>
      Effect.flatMap(served(name), (s) =>
        s === undefined
          ? Effect.succeed(undefined)
          : snapshots !== undefined
          ? Effect.map(snapshots.readAsync(name, s.definition, key), (entry) =>
            entry === undefined ? undefined : { key, json: entry.json, seq: entry.seq, ...(s.stale === undefined ? {} : { stale: s.stale, mark: s.mark }) })
          : Effect.try({
          try: () => {
            const entry = store.read(name, s.definition, key)
            return entry === undefined ? undefined : { key, json: entry.json, seq: entry.seq, ...(s.stale === undefined ? {} : { stale: s.stale, mark: s.mark }) }
          },
          catch: (e) => isStoreError(e) ? e : new StoreFailed({ reason: `cannot read view ${name}: ${e instanceof Error ? e.message : String(e)}` })
        })),
    list: (name, options) =>
      Effect.flatMap(served(name), (s) =>
        s === undefined
          ? Effect.succeed({ items: [] })
          : s.stale === undefined
          ? listEntries(store, s.state.view, s.definition, options)
          : Effect.map(listEntries(store, s.state.view, s.definition, options), (page) => ({ ...page, items: page.items.map((e) => ({ ...e, stale: s.stale!, mark: s.mark })), stale: s.stale!, mark: s.mark }))),
    prepare,
    landed,
    recovered,
    refold,
    ...(snapshot === undefined ? {} : { snapshot, syncReads: snapshots!.syncReads }),
    ...(readAhead === undefined ? {} : { readAhead })
  }
}
