/**
 * The log as startup recovery reads it on a shared log (the Shared commit mode; runtime.ts). Other nodes keep
 * committing while this node starts, so the rows and the views must be recovered up to one and the same seq, from
 * which the tailer then follows. A log that reads its head and its stored rows at one moment of the store
 * (`rowsAtHead`, PostgreSQL) pins that head: the rows come exact at it, and recovery folds no event. Otherwise the
 * head is read once, the stored rows are not used (they may already include later commits), and the rows are folded
 * from the log up to that head. A log whose rows are cached, not loaded (`rowStore`), pins the head they start from. The views come from their stored values, each exact at its own seq (`at`), with the
 * events after it up to the head folded on top.
 * Reads are not bounded here: each reader stops at the pinned head itself (a view folded again in the background
 * reads on past it).
 */
import { Effect, Layer, Stream } from "effect"
import { EventLog, type StoredRow } from "./event-log.ts"

export const PinnedLog = Layer.effect(
  EventLog,
  Effect.gen(function* () {
    const log = yield* EventLog
    // Rows cached, not loaded (projections/rows/cache-rows.ts): they start from the same head as the views.
    if (log.rowStore !== undefined) {
      const { head } = yield* log.rowStore.start
      return EventLog.of({ ...log, head: Effect.succeed({ ...head, checkpoint: head.lastSeq }), storedRows: Stream.empty })
    }
    if (log.rowsAtHead !== undefined) {
      const pinned = yield* log.rowsAtHead
      // Read once, by the rows' recovery; then let go, so that the rows in memory are the projection's alone.
      let unread: ReadonlyArray<StoredRow> | undefined = pinned.rows
      return EventLog.of({
        ...log,
        head: Effect.succeed(pinned.head),
        storedRows: Stream.suspend(() => {
          const rows = unread
          unread = undefined
          return rows === undefined ? Stream.dieMessage("the pinned rows are read once, by recovery") : Stream.fromIterable(rows)
        })
      })
    }
    const head = yield* log.head
    return EventLog.of({
      ...log,
      head: Effect.succeed({ lastSeq: head.lastSeq, checkpoint: 0, counters: head.counters }),
      storedRows: Stream.empty
    })
  })
)
