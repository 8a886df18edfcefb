/**
 * The tailer: on a shared log (several nodes, PostgreSQL), each node follows the log and applies every commit,
 * its own and the other nodes', in seq order: to its rows, to its views, and to the change feed (so this node's
 * subscribers hear of every commit, whichever node made it). The group-commit writer answers a caller once
 * `reached` says this node's rows include its write: read-your-writes.
 *
 * If the store cannot be read (the primary died, a promotion is under way), the tailer logs it and follows again
 * from what it applied, so nothing is skipped or applied twice. On a single-writer log there is nothing to
 * follow: the writer applies its own commits, and `following` is false.
 */
import { Context, Deferred, Duration, Effect, Layer, Option, Stream } from "effect"
import type { Chunk } from "effect"
import { Catalog } from "../domain/app-catalog.ts"
import { evolve } from "../domain/decider.ts"
import { StoreUnavailable } from "../domain/errors.ts"
import { streamKey, type Change, type StoredEvent } from "../domain/events.ts"
import { rowUri } from "../domain/uri.ts"
import type { Row } from "../domain/catalog.ts"
import { EventLog } from "../log/event-log.ts"
import { ChangeFeed } from "./change-feed.ts"
import { Rows } from "./rows.ts"
import { Views } from "./views.ts"
import { Metrics, metricsOff } from "../metrics/metrics.ts"

export interface TailerShape {
  /** Whether this node follows a shared log (false: the writer applies its own commits). */
  readonly following: boolean
  /** The last seq this node's rows include. */
  readonly applied: () => number
  /** Waits until this node's rows include `seq`; fails when that takes longer than READ_BACK_LIMIT. */
  readonly reached: (seq: number) => Effect.Effect<void, StoreUnavailable>
  /**
   * Completes if this node applied a commit the shared log no longer has (a failover lost an unacknowledged
   * commit): its state is ahead of the log, and the process must start again from the store (`wo run` exits).
   */
  readonly diverged: Effect.Effect<string>
}

export class Tailer extends Context.Tag("writeonce/Tailer")<Tailer, TailerShape>() {}

/** How long a writer waits for its own commit to come back through the tailer before it says so. */
const READ_BACK_LIMIT = Duration.seconds(30)
/** The pause before following again after the store could not be read. */
const RETRY_AFTER = Duration.millis(200)

export const makeTailer = Effect.gen(function* () {
  const log = yield* EventLog
  const rows = yield* Rows
  if (log.follow === undefined) {
    return Tailer.of({ following: false, applied: () => rows.checkpoint(), reached: () => Effect.void, diverged: Effect.never })
  }
  const follow = log.follow
  const feed = yield* ChangeFeed
  const catalog = yield* Catalog
  const views = Option.getOrUndefined(yield* Effect.serviceOption(Views))
  const metrics = Option.getOrElse(yield* Effect.serviceOption(Metrics), () => metricsOff)
  // The rows and views were recovered up to the same seq (projections/pinned-log.ts): follow from there.
  let applied = rows.checkpoint()
  // Writers waiting for a seq, resolved in seq order as it is applied.
  let waiters: Array<{ readonly seq: number; readonly done: () => void }> = []

  const applyChunk = (events: Chunk.Chunk<StoredEvent>) =>
    Effect.suspend(() => {
      const changes: Array<Change> = []
      // A chunk may hold several events of one entity: each is folded over the one before.
      const latest = new Map<string, Row | null>()
      let last = applied
      for (const event of events) {
        if (event.seq <= last) continue
        last = event.seq
        // A type this app does not declare (retired) is skipped, as recovery skips it.
        if (!catalog.types.has(event.type)) continue
        const key = streamKey(event.type, event.id)
        const before = latest.has(key) ? latest.get(key) ?? undefined : rows.get(event.type, event.id)
        const row = evolve(before, event) ?? null
        latest.set(key, row)
        changes.push({ event, uri: rowUri(event.type, event.id), row, before: before ?? null })
      }
      if (last === applied) return Effect.void
      rows.apply(changes)
      const prepared = changes.length > 0 ? views?.prepare(changes) : undefined
      if (changes.length > 0) feed.publish(changes, prepared?.commit() ?? [])
      applied = last
      const failures = prepared?.failures ?? []
      if (waiters.length > 0) {
        const ready = waiters.filter((w) => w.seq <= applied)
        if (ready.length > 0) {
          waiters = waiters.filter((w) => w.seq > applied)
          for (const w of ready) w.done()
        }
      }
      return failures.length === 0
        ? Effect.void
        : Effect.forEach(failures, ({ message, stack }) => Effect.logError(`${message}; the view is served as failed until the next start\n${stack}`), { discard: true })
    })

  const diverged = yield* Deferred.make<string>()
  const followOnce = Effect.suspend(() => Stream.runForEachChunk(follow(applied), applyChunk))
  yield* Effect.forkScoped(
    Effect.forever(
      followOnce.pipe(
        Effect.catchTag("StoreUnavailable", (e) =>
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

  const reached = (seq: number): Effect.Effect<void, StoreUnavailable> =>
    Effect.suspend(() => (seq <= applied ? Effect.void : waitFor(seq)))
  const waitFor = (seq: number) =>
    Effect.async<void>((resume) => {
      // Checked again here: the tailer may have applied it between the call and this registration.
      if (seq <= applied) return resume(Effect.void)
      const w = { seq, done: () => resume(Effect.void) }
      waiters.push(w)
      return Effect.sync(() => {
        waiters = waiters.filter((x) => x !== w)
      })
    }).pipe(
      Effect.timeoutFail({
        duration: READ_BACK_LIMIT,
        onTimeout: () => new StoreUnavailable({ reason: `this node has not read the shared log up to seq ${seq} (it is at ${applied})` })
      })
    )

  return Tailer.of({ following: true, applied: () => applied, reached, diverged: Deferred.await(diverged) })
})

export const TailerLive = Layer.scoped(Tailer, makeTailer)
