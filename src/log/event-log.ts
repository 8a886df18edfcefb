/**
 * The EventLog: the durable, ordered log of events and the inline row state written beside them.
 *
 * This is the seam for other stores (PostgreSQL: postgres/): the classic-level implementation is one Layer
 * (`classic-level-log.ts`). The log guarantees that an append is durable before it succeeds.
 *
 * Two kinds of log sit behind it:
 *   - a log with one writer (classic-level): the group-commit fiber decides seqs, ids and versions, and the
 *     append writes the batch exactly as given, all or nothing (it answers `void`);
 *   - a shared log (PostgreSQL: several nodes append to it): the log assigns seqs and create ids at commit, and
 *     refuses, entry by entry, what was decided against a stale row (an `AppendResult`). It also offers
 *     `follow`, which each node's tailer (projections/tailer.ts) uses to apply every node's commits in order.
 */
import { Context, Data, type Effect, type Scope, type Stream } from "effect"
import type { Row } from "../domain/catalog.ts"
import type { StoreError } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import type { Filter } from "../domain/list-request.ts"

export interface AppendEntry {
  readonly event: StoredEvent
  /** The row after the event (null: deleted), stored inline so restart needs no replay. */
  readonly row: Row | null
  /** The row before the event (null: it did not exist; absent: unknown, read from the store when needed). */
  readonly before?: Row | null
  /** The row already serialised, when the caller has it. */
  readonly rowJson?: string | null
}

export interface AppendBatch {
  readonly entries: ReadonlyArray<AppendEntry>
  /** The highest id assigned so far per type, for types whose counter moved in this batch. */
  readonly counters: ReadonlyMap<string, number>
  /** Views whose state this batch changed (or rebuilt): stored in the same atomic write. */
  readonly views?: ReadonlyArray<ViewRecord>
  /** The entries of keyed views this batch changed (and only those): stored, or removed, in the same atomic write. */
  readonly viewEntries?: ReadonlyArray<ViewEntryWrite>
  /**
   * The idempotency keys of this batch's keyed submissions: each is stored in the same atomic write, with the
   * entries it covers as written (its answer), so that a retry with the key gets that answer back.
   */
  readonly keys?: ReadonlyArray<KeyClaim>
  /**
   * A shared log: the rows the batch's entries reference, checked at commit under the writers' lock
   * (commands/reference-check.ts `batchReferences`). A single-writer log decides against exact rows: it has none.
   */
  readonly references?: BatchReferences
}

/**
 * What a batch's entries reference, by entry index: each entry's targets must be live at commit, and no live row
 * may reference a row an entry deletes. An entry that breaks either is left out (`Stale`): the writer decides it
 * again, caught up, and refuses it then (`missing_reference`, `still_referenced`).
 */
export interface BatchReferences {
  /**
   * The seq the writer's rows stood at when it decided the batch: a row that references a deleted one and that the
   * writer did not see was written after it, so the check at commit reads only the events past it.
   */
  readonly decidedAt: number
  /** Per entry: the rows (type, id) it sets a reference to, or a command's ref params name. */
  readonly targets: ReadonlyMap<number, ReadonlyArray<{ readonly type: string; readonly id: string }>>
  /** Per delete entry: the fields, across the app, that may reference the row it deletes. */
  readonly incoming: ReadonlyMap<number, ReadonlyArray<{ readonly type: string; readonly field: string }>>
}

/**
 * A keyed submission in a batch: its key, the fingerprint of its request, and its entries (`first`, `count`). With
 * `count` 0 it is a probe (a keyed submission the writer refused or that changed nothing): a shared log stores no
 * key for it, and answers it in `AppendResult.replays` if it is stored, read in the same call as the append.
 */
export interface KeyClaim {
  readonly key: string
  /** sha256 of the request (operation, target, canonical body): the same key with another request is refused. */
  readonly fingerprint: string
  /** When it was committed (ms since the epoch): keys are pruned once older than the window. */
  readonly at: number
  readonly first: number
  readonly count: number
}

/** A stored idempotency key: the request's fingerprint and the entries it wrote, as written (the answer to give again). */
export interface StoredKey {
  readonly key: string
  readonly fingerprint: string
  readonly at: number
  readonly entries: ReadonlyArray<{ readonly event: StoredEvent; readonly rowJson: string | null }>
}

/** A view's stored state: its name and the JSON text the views projection wrote (see view-record.ts). */
export interface ViewRecord {
  readonly name: string
  readonly json: string
  /** The seq the value is folded to, for a record written on its own (`storeViews`; the JSON holds it too). */
  readonly at?: number
}

/**
 * One entry of a keyed view, as a batch writes it: under the view's definition digest (the generation that serves),
 * its stored text (`viewEntryJson`, view-entry-record.ts), or undefined to remove it.
 */
export interface ViewEntryWrite {
  readonly name: string
  readonly definition: string
  readonly key: string
  readonly json: string | undefined
}

/** A keyed view's entry as a snapshot stores it: its stored text (`viewEntryJson`), or undefined once removed. */
export interface SnapshotEntry {
  readonly name: string
  readonly definition: string
  readonly key: string
  readonly text: string | undefined
}

/**
 * Keyed views' entries stored as snapshots (PostgreSQL: postgres/view-entries.ts). Each version of an entry is exact
 * at the snapshot seq it was stored at; a read answers, per key, the latest version at or before `upTo` (the
 * reader's own last snapshot): the text, `null` for a removed entry, absent for a key never stored.
 */
export interface ViewEntryStore {
  /** Each view's snapshot seq (its `views` record's `at`), by name. */
  readonly watermarks: Effect.Effect<ReadonlyMap<string, number>, StoreError>
  readonly read: (name: string, definition: string, keys: ReadonlyArray<string>, upTo: number) => Effect.Effect<ReadonlyMap<string, string | null>, StoreError>
  /** `read` of one key, synchronously (a fold's last resort: sync-reads.ts); throws a StoreError. */
  readonly readNow: (name: string, definition: string, key: string, upTo: number) => string | null | undefined
  /** Up to `limit` keys after `after` (all when absent), in key order, each with its latest version's text as `read` answers it. */
  readonly range: (name: string, definition: string, after: string | undefined, limit: number, upTo: number) => Effect.Effect<ReadonlyArray<{ readonly key: string; readonly text: string | null }>, StoreError>
  /**
   * Stores `entries` and the views' `records` exact at `at`, in one statement; versions superseded by one at or
   * before `pruneBelow` are removed.
   */
  readonly store: (entries: ReadonlyArray<SnapshotEntry>, records: ReadonlyArray<ViewRecord>, at: number, pruneBelow: number) => Effect.Effect<void, StoreError>
}

/** A view record as loaded: checksum verified, JSON parsed; or, where a log reports it per view, why it is corrupt. */
export interface StoredView {
  readonly name: string
  readonly record: unknown
  /** The record failed its checksum or does not parse: the view is folded again, not served. */
  readonly corrupt?: string
}

export interface LogHead {
  /** Sequence of the last durable event (0 for an empty log). */
  readonly lastSeq: number
  /** Sequence up to which the stored rows include every event. */
  readonly checkpoint: number
  readonly counters: ReadonlyMap<string, number>
}

export interface StoredRow {
  readonly type: string
  readonly row: Row
  /** The schema version of the type the row was written with (absent: 1). */
  readonly schema?: number
}

/** A stored row as a node that caches rows reads it: with the seq of its last event (`at`); `row` null once deleted. */
export interface RowAt {
  readonly type: string
  readonly id: string
  readonly row: Row | null
  readonly schema: number
  /** The seq of the row's last event: the row holds every event of its entity up to it, and none follows it yet. */
  readonly at: number
}

/** A list's page as the store reads it: filtered (domain/list-request.ts), ordered by id or by one field, after a cursor. */
export interface RowListQuery {
  readonly where: ReadonlyArray<Filter>
  readonly order: { readonly field: string; readonly descending: boolean }
  readonly after?: { readonly id: number; readonly value: unknown }
  readonly limit: number
}

/**
 * Present on a log whose rows a node reads on demand instead of loading them all (PostgreSQL: row-reads.ts): the
 * node is then a bounded cache of the store's rows (projections/rows/cache-rows.ts). Reads served to callers and
 * the writer's prefetch (commands/batch-prefetch.ts) are Effects that await the store. The synchronous reads block
 * the calling thread for one round trip, as a classic-level `getSync` does, and throw a StoreError: they serve
 * only what a decision reads that its prefetch did not (counted: `syncReads`).
 */
export interface RowStore {
  /** The head, each type's live row count and highest id, read at one moment of the store (once: memoised). */
  readonly start: Effect.Effect<{ readonly head: LogHead; readonly rowCounts: ReadonlyMap<string, number> }, StoreError>
  /** The row now, or undefined when it never existed. */
  readonly rowSync: (type: string, id: string) => RowAt | undefined
  /** Up to `limit` live rows with ids after `afterId`, in id order, and whether more follow. */
  readonly pageSync: (type: string, afterId: number, limit: number) => { readonly rows: ReadonlyArray<RowAt>; readonly more: boolean }
  /** Up to `limit` live rows with ids after `afterId`, in id order, and whether more follow (`pageSync`, awaited). */
  readonly page: (type: string, afterId: number, limit: number) => Effect.Effect<{ readonly rows: ReadonlyArray<RowAt>; readonly more: boolean }, StoreError>
  /** The ids of the live rows whose `field` equals `value`, ascending. */
  readonly idsWhereSync: (type: string, field: string, value: unknown) => ReadonlyArray<number>
  /** A list's page, `limit + 1` rows at most (the last one tells that more follow). */
  readonly list: (type: string, query: RowListQuery) => Effect.Effect<ReadonlyArray<RowAt>, StoreError>
  /** The live rows whose `field` equals `value` (the rows a delete's reference check reads), in id order. */
  readonly rowsWhere: (type: string, field: string, value: unknown) => Effect.Effect<ReadonlyArray<RowAt>, StoreError>
  /** These rows now, in one read (the missing ones left out). */
  readonly rowsNow: (keys: ReadonlyArray<{ readonly type: string; readonly id: string }>) => Effect.Effect<ReadonlyArray<RowAt>, StoreError>
  /** Sync reads made (misses of the cache that reached the store), for tests and metrics. */
  readonly syncReads: () => number
}

export interface EventLogStats {
  /** Durable (sync) writes made: with group commit, far fewer than commands. */
  readonly syncWrites: number
  readonly eventsWritten: number
}

/**
 * An entry the shared log refused: its entity moved on in the log (another node wrote it) after the writer
 * decided it. Nothing of it was written; the writer re-decides it against the fresh row.
 */
export const Stale: { readonly _tag: "Stale" } = Object.freeze({ _tag: "Stale" })
export type Stale = typeof Stale

/**
 * An entry the shared log did not write because its submission's idempotency key was already stored (another node,
 * or an earlier attempt, committed it): the submission is answered with the stored answer (`AppendResult.replays`).
 */
export const Duplicate: { readonly _tag: "Duplicate" } = Object.freeze({ _tag: "Duplicate" })
export type Duplicate = typeof Duplicate

/** What a shared log did with one entry of a batch: wrote it, or left it out (Stale, Duplicate). */
export type AppendOutcome = AppendEntry | Stale | Duplicate

/** The entry was written (not left out as Stale or Duplicate). */
export const isWritten = (outcome: AppendOutcome): outcome is AppendEntry => !("_tag" in outcome)

/** What a shared log wrote. */
export interface AppendResult {
  /**
   * Per entry of the batch, in order: the entry as written (the seq, and for a create the id, assigned by the
   * log; the row rewritten to match) or `Stale`. Written entries have consecutive seqs in this order. The entries
   * of one app command (consecutive, one `event.correlation`) are all written or all `Stale`: a command is atomic.
   */
  readonly outcomes: ReadonlyArray<AppendOutcome>
  /** The log's head after the commit: every entry refused as stale was decided against a row older than it. */
  readonly lastSeq: number
  /** The stored keys, by key, of the submissions whose entries are `Duplicate`. */
  readonly replays?: ReadonlyMap<string, StoredKey>
}

/**
 * A shared log no longer holds an event this node has applied: after a failover, the new primary lacks a commit
 * the old one made but never replicated (so never acknowledged). This node's state is then ahead of the log: it
 * must start again from the store.
 */
export class LogDiverged extends Data.TaggedError("LogDiverged")<{ readonly reason: string }> {}

/**
 * An event as the embedded store keeps it: its key and its sealed record, neither checked nor parsed yet
 * (record.ts `unseal` checks it; classic-level/level-records.ts `decodeEvent` checks and parses it).
 */
export type SealedEvent = readonly [key: string, record: string]

/** What a reader in another thread needs to read the embedded store's events (classic-level/thread-reads.ts). */
export interface ThreadLoan {
  /** The data dir, to open with classic-level's multithreading. */
  readonly dir: string
  /** The seqs the operator accepted as lost (accepted-loss.ts): gaps the sequence may have. */
  readonly gaps: ReadonlyArray<readonly [number, number]>
}

/** How a reader wants the log read. */
export interface ReadOptions {
  /** Events decoded per chunk at most (the default is the log's read batch, best for a tool reading it all). */
  readonly slice?: number
}

/** The unused end of a node's last block of ids of `type`: the ids past `keep` up to `blockLast` (id-blocks.ts). */
export interface UnusedIds {
  readonly type: string
  readonly keep: number
  readonly blockLast: number
}

export interface EventLogShape {
  /**
   * Writes the batch atomically with one durable commit; succeeds only once it is durable. A single-writer log
   * writes every entry as given and answers `void`; a shared log answers an `AppendResult`.
   */
  readonly append: (batch: AppendBatch) => Effect.Effect<AppendResult | void, StoreError>
  /**
   * Present on a shared log: the events after `afterSeq`, in order, forever (woken by the store's notifications,
   * polling when they are lost). It fails when the store cannot be read; the follower resumes from what it applied.
   * `applied`, the follower's position, lets the log skip what the follower applied itself (its node's own commits);
   * `readBefore`, when it answers a seq, stops the reads before it (an own commit the follower will apply itself).
   */
  readonly follow?: (afterSeq: number, applied?: () => number, readBefore?: () => number | undefined) => Stream.Stream<StoredEvent, StoreError | LogDiverged>
  readonly head: Effect.Effect<LogHead, StoreError>
  /**
   * Events with `seq >= fromSeq`, in order, up to the head at the time of reading. `options.slice`, from a reader
   * that serves requests meanwhile: at most that many events per chunk (classic-level decodes each slice on demand).
   */
  readonly readFrom: (fromSeq: number, options?: ReadOptions) => Stream.Stream<StoredEvent, StoreError>
  /**
   * Present on the embedded store: the events from `fromSeq` as stored (`SealedEvent`), their sequence checked, for a
   * reader that checks records without parsing them (the log audit). Decorators pass it through untouched.
   */
  readonly readSealedFrom?: (fromSeq: number, options?: ReadOptions) => Stream.Stream<SealedEvent, StoreError>
  /**
   * Present on the embedded store: lends it to a reader in another thread of this process, which then reads the
   * events itself (classic-level/thread-reads.ts; a view refold: projections/views/fold-thread.ts), for as long as
   * the scope lasts. `end` must end that reader: the store awaits it before it reopens after a failed write.
   * Decorators pass it through untouched: the reader upcasts what it reads.
   */
  readonly lendToThread?: (end: () => Promise<void>) => Effect.Effect<ThreadLoan, never, Scope.Scope>
  /** The inline row state as stored, by type then id. */
  readonly storedRows: Stream.Stream<StoredRow, StoreError>
  /**
   * Present on a shared log (PostgreSQL): reserves the next `count` ids of `type` for this node, which then gives
   * them to its creates without asking (commands/id-blocks.ts); answers the block's last id (its first is
   * `last - count + 1`). No other node and no other reservation is ever handed one of them.
   */
  readonly reserveIds?: (type: string, count: number) => Effect.Effect<number, StoreError>
  /**
   * Present with `reserveIds`: for each type, gives back the ids past `keep` of this node's last block, whose last id
   * is `blockLast`, if no reservation came after it (the type's highest id handed out is still `blockLast`); answers
   * the types it gave back. A node's clean stop calls it for the ids it never gave (commands/id-blocks.ts).
   */
  readonly releaseIds?: (unused: ReadonlyArray<UnusedIds>) => Effect.Effect<ReadonlyArray<string>, StoreError>
  /**
   * Present on a shared log (PostgreSQL): the head and every stored row, read at one moment of the store, so that a
   * node starting while others commit loads rows exact at that head instead of folding the log (pinned-log.ts).
   */
  readonly rowsAtHead?: Effect.Effect<{ readonly head: LogHead; readonly rows: ReadonlyArray<StoredRow> }, StoreError>
  /** Present on a log whose rows a node caches instead of loading them (PostgreSQL): see `RowStore`. */
  readonly rowStore?: RowStore
  /** Present on a log that stores keyed views' entries as snapshots (PostgreSQL): see `ViewEntryStore`. */
  readonly viewEntries?: ViewEntryStore
  /** The stored view records, verified; absent for a log that stores none (views are then rebuilt). */
  readonly storedViews?: Effect.Effect<ReadonlyArray<StoredView>, StoreError>
  /**
   * A keyed view's stored entries under one definition, in key order: each key and its stored text (checksum
   * verified; `viewEntryJson`). Present on a log that stores them (classic-level), for the offline checks.
   */
  readonly storedViewEntries?: (name: string, definition: string) => Stream.Stream<{ readonly key: string; readonly text: string }, StoreError>
  /**
   * Stores view records on their own, with one durable write: a view folded again in the background, or a
   * PostgreSQL node's snapshot of its views (each record names the seq it is folded to: `at`), so that the next start
   * loads them instead of folding again. Present on a log that stores view records.
   */
  readonly storeViews?: (views: ReadonlyArray<ViewRecord>) => Effect.Effect<void, StoreError>
  /**
   * Present on a log that can answer it (PostgreSQL): the events of these entities with `seq <= toSeq`, in order.
   * A node folding its views' tail from a stored value at `toSeq` rebuilds from them the rows the tail starts from.
   */
  readonly eventsOf?: (entities: ReadonlyArray<{ readonly type: string; readonly id: string }>, toSeq: number) => Effect.Effect<ReadonlyArray<StoredEvent>, StoreError>
  /**
   * One entity's history a page at a time: its events with `version > afterVersion`, in version order (which is seq
   * order), at most `limit`, read through a per-entity index (no scan of the log). Present on both stores.
   */
  readonly history?: (type: string, id: string, afterVersion: number, limit: number) => Effect.Effect<ReadonlyArray<StoredEvent>, StoreError>
  readonly stats: Effect.Effect<EventLogStats>
  /**
   * Present on a log that records its acknowledged head beside the store (classic-level: acked-head.ts): the writer
   * calls it when it has nothing queued, to record the last acknowledged seq off the hot path.
   */
  readonly settle?: () => void
  /** Present on a log with failover (PostgreSQL): how many times its primary changed since it was opened (metrics). */
  readonly failovers?: () => number
  /** The stored idempotency key, if any (read from the store, so it holds across restarts and nodes). */
  readonly storedKey?: (key: string) => Effect.Effect<StoredKey | undefined, StoreError>
  /** The stored idempotency keys among `keys`, in one read: the writer asks once per batch. */
  readonly storedKeys?: (keys: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, StoredKey>, StoreError>
  /** Deletes up to `limit` idempotency keys committed before `before` (ms); answers how many. Off the writer's path. */
  readonly pruneKeys?: (before: number, limit: number) => Effect.Effect<number, StoreError>
}

export class EventLog extends Context.Tag("writeonce/EventLog")<EventLog, EventLogShape>() {}
