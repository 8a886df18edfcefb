/**
 * The projector: the one place a durable commit becomes visible on this node. It folds events into row changes,
 * applies changes to the rows and the views, publishes them on the change feed (subscriptions, live queries, the
 * console's event tail), and logs the views whose evolve failed.
 *
 * The writer calls it for its own batches on a single-writer log (and for a failed batch that landed after all);
 * the tailer calls it for every commit of a shared log. Nothing else applies or publishes.
 */
import { Effect, Option } from "effect"
import { Catalog } from "../domain/app-catalog.ts"
import type { Row } from "../domain/catalog.ts"
import { evolve } from "../domain/decide/decider.ts"
import { streamKey, type Change, type StoredEvent } from "../domain/events.ts"
import { rowUri } from "../domain/uri.ts"
import { ChangeFeed } from "../subscriptions/change-feed.ts"
import { Rows } from "./rows/rows.ts"
import { Views, type PreparedViews } from "./views/views.ts"
import { KeyedViews } from "./views/keyed-views.ts"

export interface ProjectorShape {
  /**
   * The changes `events` make to this node's rows, in order, each folded over the one before it (a batch may hold
   * several events of one entity). Events of a type the app does not declare (retired) are skipped, as recovery does.
   */
  readonly fold: (events: Iterable<StoredEvent>) => Array<Change>
  /**
   * Folds the views over a batch before it is written, for a log that stores their records in the same atomic
   * write. Undefined when no views are composed (a writer tested alone).
   */
  readonly prepare: (changes: ReadonlyArray<Change>) => PreparedViews | undefined
  /**
   * Makes durable changes visible: the rows, the views (`prepared`, or folded now), then the change feed; then
   * logs the views that failed. Callers are answered only after this (read-your-writes).
   */
  readonly apply: (changes: ReadonlyArray<Change>, prepared?: PreparedViews) => Effect.Effect<void>
  /**
   * `apply` in one synchronous step, for a caller that must apply and record how far it applied with nothing in
   * between (the tailer); answers what to log (`logFailures`). `followed`: other nodes' commits (rows.ts `apply`).
   */
  readonly applyNow: (changes: ReadonlyArray<Change>, prepared?: PreparedViews, followed?: boolean) => PreparedViews["failures"]
  readonly logFailures: (failures: PreparedViews["failures"]) => Effect.Effect<void>
}

/** A view's evolve is user code: its failure fails the view alone (views.ts), logged once the batch is durable. */
const logViewFailures = (failures: PreparedViews["failures"]) =>
  Effect.forEach(failures, ({ message, stack }) =>
    Effect.logError(`${message}; the view is served as failed until the next start, writes go on${stack === message ? "" : `\n${stack}`}`), { discard: true })

/** One batch's whole views and keyed views, prepared: written, committed and discarded together. */
const bothPrepared = (whole: PreparedViews | undefined, keyed: PreparedViews): PreparedViews =>
  whole === undefined ? keyed : {
    records: whole.records.length === 0 ? keyed.records : [...whole.records, ...keyed.records],
    ...(keyed.entries === undefined ? {} : { entries: keyed.entries }),
    failures: whole.failures.length === 0 ? keyed.failures : [...whole.failures, ...keyed.failures],
    commit: () => {
      const a = whole.commit()
      const b = keyed.commit()
      return a.length === 0 ? b : b.length === 0 ? a : [...a, ...b]
    },
    discard: () => {
      whole.discard()
      keyed.discard()
    }
  }

export const makeProjector = Effect.gen(function* () {
  const rows = yield* Rows
  const feed = yield* ChangeFeed
  const catalog = yield* Catalog
  // Optional so that a write path composed without views (tests of the writer alone) still runs.
  const wholeViews = Option.getOrUndefined(yield* Effect.serviceOption(Views))
  const keyedViews = Option.getOrUndefined(yield* Effect.serviceOption(KeyedViews))
  const keyed = keyedViews === undefined || keyedViews.names.length === 0 ? undefined : keyedViews
  const views = keyed === undefined
    ? wholeViews
    : { prepare: (changes: ReadonlyArray<Change>) => bothPrepared(wholeViews?.prepare(changes), keyed.prepare(changes)) }
  // Changes applied without being prepared here (the tailer's, a failed write that landed after all): keyed views
  // whose entries landed with them must not fold them twice.
  const unprepared = keyed === undefined
    ? (changes: ReadonlyArray<Change>) => wholeViews?.prepare(changes)
    : (changes: ReadonlyArray<Change>) => {
        // Keyed first: on a shared log it may read an entry from the store and throw, before anything is prepared.
        const keyedPrepared = keyed.landed(changes)
        return bothPrepared(wholeViews?.prepare(changes), keyedPrepared)
      }

  const fold = (events: Iterable<StoredEvent>): Array<Change> => {
    const changes: Array<Change> = []
    const latest = new Map<string, Row | null>()
    for (const event of events) {
      if (!catalog.types.has(event.type)) continue
      const key = streamKey(event.type, event.id)
      const before = latest.has(key) ? latest.get(key) ?? undefined : rows.get(event.type, event.id)
      const row = evolve(before, event) ?? null
      latest.set(key, row)
      changes.push({ event, uri: rowUri(event.type, event.id), row, before: before ?? null })
    }
    return changes
  }

  const prepare = (changes: ReadonlyArray<Change>) => views?.prepare(changes)

  const noFailures: PreparedViews["failures"] = []
  const applyNow = (changes: ReadonlyArray<Change>, prepared?: PreparedViews, followed = false) => {
    if (changes.length === 0) return noFailures
    // Prepared before the rows move: a store read that fails while preparing (a keyed view's entry on a shared log)
    // then leaves this node's state as it was, and the changes can be applied again.
    const folded = prepared ?? unprepared(changes)
    rows.apply(changes, followed)
    feed.publish(changes, folded?.commit() ?? [])
    return folded?.failures ?? noFailures
  }
  const logFailures = (failures: PreparedViews["failures"]) => (failures.length === 0 ? Effect.void : logViewFailures(failures))
  const apply = (changes: ReadonlyArray<Change>, prepared?: PreparedViews): Effect.Effect<void> =>
    Effect.suspend(() => logFailures(applyNow(changes, prepared)))

  return { fold, prepare, apply, applyNow, logFailures } satisfies ProjectorShape
})
