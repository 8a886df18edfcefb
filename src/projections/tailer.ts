/**
 * The tailer: on a shared log (several nodes, PostgreSQL), each node follows the log and applies every commit,
 * its own and the other nodes', in seq order (its own batches mostly through `applyOwn`: the log then does not read
 * them back): to its rows, to its views, and to the change feed (so this node's
 * subscribers hear of every commit, whichever node made it). The group-commit writer answers a caller once
 * `reached` says this node's rows include its write: read-your-writes.
 *
 * The tailer also stores this node's views (and its keyed views' changed entries) as a snapshot exact at the seq it
 * applied (`log.storeViews`), every `WO_VIEW_SNAPSHOT_EVERY` events and at shutdown, in the background: a node
 * starting later loads it and folds only the events after it (views.ts). Off the write path: a batch never waits for it, and its cost is one upsert per
 * view per WO_VIEW_SNAPSHOT_EVERY events, whatever the write rate.
 *
 * If the store cannot be read (the primary died, a promotion is under way), the tailer logs it and follows again
 * from what it applied, so nothing is skipped or applied twice. On a single-writer log there is nothing to
 * follow: the writer applies its own commits (commands/commit-mode.ts runs a tailer only in the Shared mode).
 */
import { Deferred, Duration, Effect, Exit, Fiber, Option, Stream } from "effect"
import type { Chunk } from "effect"
import { isStoreError, ReplicaLagging, type StoreError } from "../domain/errors.ts"
import type { Change, StoredEvent } from "../domain/events.ts"
import { EventLog } from "../log/event-log.ts"
import { makeProjector } from "./projector.ts"
import { makeCachedFold, type Known } from "./cached-fold.ts"
import { Catalog } from "../domain/app-catalog.ts"
import { Rows } from "./rows/rows.ts"
import { Views } from "./views/views.ts"
import { KeyedViews } from "./views/keyed-views.ts"
import { Metrics, metricsOff } from "../metrics/metrics.ts"
import { STORE_TIMEOUT_MS, VIEW_SNAPSHOT_EVERY, WoConfig } from "../support/config.ts"

export interface TailerShape {
  /** The last seq this node's rows include. */
  readonly applied: () => number
  /**
   * Takes this node's own batch, just written to the log as consecutive seqs: applies it now if this node stands at
   * the seq just before it (true), else keeps it (false: the caller waits for `reached`) and applies it right after
   * the other nodes' commits before it, which alone the log is asked for. Either way the log does not read it back.
   */
  readonly applyOwn: (changes: ReadonlyArray<Change>) => Effect.Effect<boolean>
  /**
   * Waits until this node's rows include `seq`; fails (ReplicaLagging) past the store's bound, WO_STORE_TIMEOUT: the
   * writer waits here, and a primary paused while a batch is held must not hold every write of the node.
   */
  readonly reached: (seq: number) => Effect.Effect<void, StoreError>
  /**
   * Completes if this node applied a commit the shared log no longer has (a failover lost an unacknowledged
   * commit): its state is ahead of the log, and the process must start again from the store (`wo run` exits).
   */
  readonly diverged: Effect.Effect<string>
  /**
   * The highest id created per type in what this node applied (its own commits and the other nodes'). The writer's
   * id counters follow it: a create decided after another node's would otherwise take an id the log gave already.
   */
  readonly lastIds: ReadonlyMap<string, number>
  /** How many times it applied other nodes' commits: whether other nodes write too (the writer lingers only then). */
  readonly followed: () => number
}

/** The pause before following again after the store could not be read. */
const RETRY_AFTER = Duration.millis(200)

export const makeTailer = Effect.gen(function* () {
  const log = yield* EventLog
  const rows = yield* Rows
  const catalog = yield* Catalog
  const follow = log.follow
  if (follow === undefined) return yield* Effect.dieMessage("the Shared commit mode needs a log that can be followed (PostgreSQL)")
  const projector = yield* makeProjector
  const metrics = Option.getOrElse(yield* Effect.serviceOption(Metrics), () => metricsOff)
  // The rows and views were recovered up to the same seq (log/pinned-log.ts): follow from there.
  let applied = rows.checkpoint()
  // Writers waiting for a seq, resolved in seq order as it is applied.
  let waiters: Array<{ readonly seq: number; readonly done: () => void }> = []

  // This node's views, stored as a snapshot at the seq applied (views.ts loads it at the next start of any node).
  const views = Option.getOrUndefined(yield* Effect.serviceOption(Views))
  const storeViews = log.storeViews
  // How many applied events between two snapshots (the most a later start folds past one): WO_VIEW_SNAPSHOT_EVERY.
  const settings = yield* Effect.serviceOption(WoConfig)
  const snapshotEvery = Option.match(settings, { onNone: () => VIEW_SNAPSHOT_EVERY, onSome: (s) => s.viewSnapshotEvery })
  // How long a writer waits for its commit to be applied here (`reached`): the store's bound, as for every wait on
  // the primary (a batch held behind another node's commit waits for the tailer to read that commit).
  const readBackLimit = Duration.millis(Option.match(settings, { onNone: () => STORE_TIMEOUT_MS, onSome: (s) => s.storeTimeoutMs }))
  // Keyed views whose entries are stored as snapshots (keyed-pg-store.ts): taken at the same seq as the views.
  const keyed = Option.getOrUndefined(yield* Effect.serviceOption(KeyedViews))
  // Their fold reads entries synchronously: the tailer reads a batch's ahead (keyed-pg-store.ts).
  const readAhead = keyed?.readAhead
  let snapshotAt = applied
  let snapshotting = false
  const snapshot = Effect.suspend(() => {
    if ((views === undefined && keyed?.snapshot === undefined) || storeViews === undefined || snapshotting || applied <= snapshotAt) return Effect.void
    const at = applied
    const records = views?.snapshot(at) ?? []
    // Copied now, in the same step as `at`: the entries changed up to it, and none after.
    const entries = keyed?.snapshot?.(at) ?? Effect.void
    snapshotting = true
    return Effect.zipRight(storeViews(records), entries).pipe(
      Effect.tap(() => Effect.sync(() => (snapshotAt = Math.max(snapshotAt, at)))),
      Effect.catchAll((e) => Effect.logWarning(`tailer: cannot store this node's views at seq ${at} (${e.reason}); trying again later`)),
      Effect.ensuring(Effect.sync(() => (snapshotting = false)))
    )
  })
  const scope = yield* Effect.scope
  // The last snapshot, at shutdown (bounded like every store query: a dead primary does not hold the shutdown).
  yield* Effect.addFinalizer(() => snapshot)

  /**
   * This node's own batches written after other nodes' commits it has not applied yet (its writer's `applyOwn`), in
   * seq order: each is applied as soon as the node stands just before it, and the log is read only up to the first.
   */
  let held: Array<{ readonly first: number; readonly last: number; readonly changes: ReadonlyArray<Change> }> = []

  const lastIds = new Map<string, number>()
  let followed = 0
  /** Records the ids `changes` create (a create's id is the type's counter in the log at its seq). */
  const countCreates = (changes: ReadonlyArray<Change>) => {
    for (const { event } of changes) {
      if (event.kind !== "created") continue
      const id = Number(event.id)
      if (id > (lastIds.get(event.type) ?? 0)) lastIds.set(event.type, id)
    }
  }
  /** Where the log's reads stop for now: the first held batch, which this node applies itself. */
  const readBefore = () => held[0]?.first

  /**
   * Applies changes up to `last` and records it, then every held batch that follows on, in one synchronous step:
   * the writer's `applyOwn` cannot come between. `followed`: `changes` were read from the log (rows.ts `apply`: the
   * rows they create are not cached here), not this node's own batch.
   */
  const advance = (changes: ReadonlyArray<Change>, last: number, followed: boolean) => {
    let failures = projector.applyNow(changes, undefined, followed)
    countCreates(changes)
    applied = last
    while (held.length > 0 && held[0].first <= applied + 1) {
      const own = held.shift()!
      // Read from the log after all (a read sent before the batch was held): that copy was applied.
      if (own.first <= applied) continue
      const more = projector.applyNow(own.changes)
      countCreates(own.changes)
      failures = failures.length === 0 ? more : more.length === 0 ? failures : [...failures, ...more]
      applied = own.last
    }
    if (waiters.length > 0) {
      const ready = waiters.filter((w) => w.seq <= applied)
      if (ready.length > 0) {
        waiters = waiters.filter((w) => w.seq > applied)
        for (const w of ready) w.done()
      }
    }
    const logged = projector.logFailures(failures)
    return applied - snapshotAt >= snapshotEvery && !snapshotting ? Effect.zipRight(logged, Effect.forkIn(snapshot, scope)) : logged
  }

  // Rows cached, not held whole (cache-rows.ts): other nodes' commits are folded on the rows the cache holds, and the
  // rows it does not hold are read only when the views need them (their evolve sees each row before and after).
  // The rows other nodes create are not cached: a node holds what it reads and writes, not every row of the cluster.
  const cached = rows.cached
  const viewsNeedRows = views !== undefined && catalog.views.size > 0
  const folding = cached === undefined ? undefined : makeCachedFold(catalog, cached, log)

  const freshOf = (events: Chunk.Chunk<StoredEvent>) => {
    const fresh: Array<StoredEvent> = []
    for (const event of events) if (event.seq > applied && (fresh.length === 0 || event.seq > fresh[fresh.length - 1].seq)) fresh.push(event)
    return fresh
  }

  // Events up to `applied` are skipped: this node applied them already (its own batches, through `applyOwn`).
  // `folded`: these events' changes, folded already while this node stood where it stands now.
  const applyFresh = (fresh: ReadonlyArray<StoredEvent>, known?: Known, folded?: ReadonlyArray<Change>) => {
    if (fresh.length === 0) return Effect.void
    const last = fresh[fresh.length - 1].seq
    // A held batch the log delivered all the same (read before it was held): the log's copy is applied.
    if (held.length > 0 && held[0].first <= last) held = held.filter((own) => own.first > last)
    followed++
    return advance(folded ?? (folding === undefined ? projector.fold(fresh) : folding.fold(fresh, known)), last, true)
  }
  const applyChunk = (events: Chunk.Chunk<StoredEvent>) =>
    Effect.suspend(() => {
      if (folding === undefined || !viewsNeedRows) return storeFailureOf(() => applyFresh(freshOf(events)))
      // The rows before these commits, read first; then what this node applied meanwhile (its own batches) is
      // skipped, as always, in the synchronous step that applies the rest.
      return Effect.flatMap(folding.before(freshOf(events)), (known) => {
        if (readAhead === undefined) return storeFailureOf(() => applyFresh(freshOf(events), known))
        // The keyed views' entries these commits fold, read ahead (their fold is synchronous), from the changes the
        // fold gives now; those changes are applied as they are unless this node applied anything meanwhile (its
        // own batch), which moves the rows they were folded on: then they are folded again.
        return storeFailureOf(() => {
          const at = applied
          const folded = folding.fold(freshOf(events), known)
          return Effect.zipRight(readAhead(folded), storeFailureOf(() => applyFresh(freshOf(events), known, applied === at ? folded : undefined)))
        })
      })
    })

  const applyOwn = (changes: ReadonlyArray<Change>) =>
    Effect.zipRight(
      // The keyed views' entries this batch folds, read ahead; should the store not answer, the fold reads them itself.
      readAhead === undefined ? Effect.void : Effect.catchAll(readAhead(changes), () => Effect.void),
      applyOwnNow(changes)
    )
  const applyOwnNow = (changes: ReadonlyArray<Change>) =>
    Effect.suspend(() => {
      const first = changes[0]?.event.seq
      if (first === undefined || first <= applied) return Effect.succeed(false)
      for (let i = 1; i < changes.length; i++) if (changes[i].event.seq !== first + i) return Effect.succeed(false)
      const last = first + changes.length - 1
      if (first === applied + 1) {
        try {
          return Effect.as(advance(changes, last, false), true)
        } catch (e) {
          if (!isStoreError(e)) throw e
          // Not applied (nothing moved: see storeFailureOf): the caller waits for `reached`, and the tailer reads
          // this batch back from the log, its entries read ahead, or the wait ends at the store's bound.
          return Effect.as(Effect.logWarning(`tailer: cannot apply this node's batch at seq ${first} now (${e.reason}); reading it back from the log`), false)
        }
      }
      // Other nodes' commits come first: applied once the tailer has read them (`advance`).
      let at = held.length
      while (at > 0 && held[at - 1].first > first) at--
      held.splice(at, 0, { first, last, changes })
      return Effect.succeed(false)
    })

  /**
   * A step that applies commits, with a store read that throws (a keyed view's entry the read-ahead missed, read
   * synchronously while the store is down) turned into the failure it is: the projector reads before it moves any
   * state, so the tailer follows again from what it applied instead of dying with a defect.
   */
  const storeFailureOf = <A, E>(step: () => Effect.Effect<A, E>): Effect.Effect<A, E | StoreError> =>
    Effect.suspend((): Effect.Effect<A, E | StoreError> => {
      try {
        return step()
      } catch (e) {
        if (isStoreError(e)) return Effect.fail(e)
        throw e
      }
    })

  const diverged = yield* Deferred.make<string>()
  // The log skips what this node applied itself and stops before what it holds (`applyOwn`): its own commits are
  // not read back.
  const followOnce = Effect.suspend(() => Stream.runForEachChunk(follow(applied, () => applied, readBefore), applyChunk))
  yield* Effect.forkScoped(
    Effect.forever(
      followOnce.pipe(
        Effect.catchIf(isStoreError, (e) =>
          Effect.logWarning(`tailer: cannot follow the shared log (${e.reason}); following again from seq ${applied}`).pipe(
            Effect.zipLeft(Effect.sync(() => metrics.tailerRestarted()))
          )),
        Effect.zipRight(Effect.sleep(RETRY_AFTER))
      )
    ).pipe(
      // Nothing this node serves can be trusted any more: stop following and say so.
      Effect.catchTag("LogDiverged", (e) =>
        Effect.zipRight(Effect.logError(`tailer: ${e.reason}; this node must restart`), Deferred.succeed(diverged, e.reason)))
    )
  )

  const reached = (seq: number): Effect.Effect<void, StoreError> =>
    Effect.suspend(() => (seq <= applied ? Effect.void : waitFor(seq)))
  // The writer waits here inside its uninterruptible batch, where an Effect timeout cannot interrupt the wait (it
  // would wait for it to end: the bound never applied, and a primary paused while a batch was held held every write
  // of the node). So the bound is a timer of its own that answers the wait, and the wait stays uninterruptible: a
  // shutdown still lets the batch finish and answer its callers. (The timer itself is interruptible: it is forked
  // from that region, and is stopped as soon as the wait is answered.)
  const waitFor = (seq: number) =>
    Effect.flatMap(Effect.forkDaemon(Effect.interruptible(Effect.sleep(readBackLimit))), (timer) =>
      Effect.async<void, ReplicaLagging>((resume) => {
        let answered = false
        const answer = (result: Effect.Effect<void, ReplicaLagging>) => {
          if (answered) return
          answered = true
          waiters = waiters.filter((x) => x !== w)
          resume(result)
        }
        const w = { seq, done: () => answer(Effect.void) }
        // Checked again here: the tailer may have applied it between the call and this registration.
        if (seq <= applied) return answer(Effect.void)
        waiters.push(w)
        // The timer is interrupted once the wait is answered: only a timer that ran out makes the error (an error
        // captures a stack, and nearly every batch of a node beside others waits here).
        timer.addObserver((exit) => {
          if (Exit.isSuccess(exit)) answer(Effect.fail(new ReplicaLagging({ reason: `this node has not read the shared log up to seq ${seq} (it is at ${applied})` })))
        })
      }).pipe(Effect.ensuring(Fiber.interrupt(timer))))

  return { applied: () => applied, applyOwn, reached, diverged: Deferred.await(diverged), lastIds, followed: () => followed } satisfies TailerShape
})
