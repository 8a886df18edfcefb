/**
 * The log as startup recovery reads it on a shared log (the Shared commit mode; runtime.ts). Other
 * nodes keep committing while this node starts, so the rows and the views must be recovered up to one and the
 * same seq, from which the tailer then follows: the head is read once, the stored rows are not used (they may
 * already include later commits), and both projections are recovered up to that head: the rows folded from the log,
 * the views from their stored values, each exact at its own seq (`at`), with the events after it folded on top.
 * Reads are not bounded here: each reader stops at the pinned head itself (a view folded again in the background
 * reads on past it).
 */
import { Effect, Layer, Stream } from "effect"
import { EventLog } from "./event-log.ts"

export const PinnedLog = Layer.effect(
  EventLog,
  Effect.gen(function* () {
    const log = yield* EventLog
    const head = yield* log.head
    const last = head.lastSeq
    return EventLog.of({
      ...log,
      head: Effect.succeed({ lastSeq: last, checkpoint: 0, counters: head.counters }),
      storedRows: Stream.empty
    })
  })
)
