/**
 * The log as startup recovery reads it on a shared log (the Shared commit mode; runtime.ts). Other
 * nodes keep committing while this node starts, so the rows and the views must be recovered up to one and the
 * same seq, from which the tailer then follows: the head is read once, the stored rows are not used (they may
 * already include later commits), and both projections are folded from the log up to that head.
 */
import { Effect, Layer, Stream } from "effect"
import { EventLog } from "./event-log.ts"

export const PinnedLog = Layer.effect(
  EventLog,
  Effect.gen(function* () {
    const log = yield* EventLog
    const head = yield* log.head
    const last = head.lastSeq
    const { storedViews: _stored, storeViews: _store, ...rest } = log
    return EventLog.of({
      ...rest,
      head: Effect.succeed({ lastSeq: last, checkpoint: 0, counters: head.counters }),
      readFrom: (fromSeq) => Stream.takeWhile(log.readFrom(fromSeq), (e) => e.seq <= last),
      storedRows: Stream.empty
    })
  })
)
