/**
 * The EventLog: the durable, ordered log of events and the inline row state written beside them.
 *
 * This is the seam for other stores (PostgreSQL: postgres/): the classic-level implementation is one Layer
 * (`classic-level-log.ts`). Ordering and versions are decided by the single writer (the group-commit fiber);
 * the log guarantees that an append is atomic and durable before it succeeds.
 */
import { Context, type Effect, type Stream } from "effect"
import type { Row } from "../domain/catalog.ts"
import type { StoreUnavailable } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"

export interface AppendEntry {
  readonly event: StoredEvent
  /** The row after the event (null: deleted), stored inline so restart needs no replay. */
  readonly row: Row | null
  /** The row already serialised, when the caller has it. */
  readonly rowJson?: string | null
}

export interface AppendBatch {
  readonly entries: ReadonlyArray<AppendEntry>
  /** The highest id assigned so far per type, for types whose counter moved in this batch. */
  readonly counters: ReadonlyMap<string, number>
  /** Views whose state this batch changed (or rebuilt): stored in the same atomic write. */
  readonly views?: ReadonlyArray<ViewRecord>
}

/** A view's stored state: its name and the JSON text the views projection wrote (see view-record.ts). */
export interface ViewRecord {
  readonly name: string
  readonly json: string
}

/** A view record as loaded: checksum verified, JSON parsed. */
export interface StoredView {
  readonly name: string
  readonly record: unknown
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

export interface EventLogStats {
  /** Durable (sync) writes made: with group commit, far fewer than commands. */
  readonly syncWrites: number
  readonly eventsWritten: number
}

export interface EventLogShape {
  /** Writes the whole batch atomically with one fsync; succeeds only once it is durable. */
  readonly append: (batch: AppendBatch) => Effect.Effect<void, StoreUnavailable>
  readonly head: Effect.Effect<LogHead, StoreUnavailable>
  /** Events with `seq >= fromSeq`, in order, up to the head at the time of reading. */
  readonly readFrom: (fromSeq: number) => Stream.Stream<StoredEvent, StoreUnavailable>
  /** The inline row state as stored, by type then id. */
  readonly storedRows: Stream.Stream<StoredRow, StoreUnavailable>
  /** The stored view records, verified; absent for a log that stores none (views are then rebuilt). */
  readonly storedViews?: Effect.Effect<ReadonlyArray<StoredView>, StoreUnavailable>
  readonly stats: Effect.Effect<EventLogStats>
}

export class EventLog extends Context.Tag("writeonce/EventLog")<EventLog, EventLogShape>() {}
