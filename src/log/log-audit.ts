/**
 * The startup audit of the whole log. Startup itself reads only the stored rows and the log past the checkpoint
 * (restart must stay fast on a large log), so a damaged event before the checkpoint would otherwise show only when
 * it is read (replay, resumption, `/api/_events`). Once the server is up, this reads the log once in the
 * background, verifying every checksum and the sequence, and logs an error naming the first problem.
 *
 * The server serves meanwhile: the audit reads the log paced (paced-read.ts), giving the event loop a turn every tenth
 * millisecond of its work, so a request waits about that long behind it.
 */
import { Chunk, Effect, Layer, Stream } from "effect"
import type { StoreError } from "../domain/errors.ts"
import { makePacer } from "./paced-read.ts"
import { EventLog, type EventLogShape } from "./event-log.ts"

/** Counts the events of the log (which verifies them), read paced. */
export const auditPaced = (log: EventLogShape, pacer = makePacer()): Effect.Effect<number, StoreError> =>
  Effect.suspend(() => {
    let counted = 0
    return Effect.map(
      Stream.runForEachChunk(pacer.read(log, 1), (chunk) => pacer.slices(Chunk.toReadonlyArray(chunk), (slice) => Effect.sync(() => void (counted += slice.length)))),
      () => counted
    )
  })

export const LogAuditLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const log = yield* EventLog
    const audit = Effect.gen(function* () {
      const started = Date.now()
      const events = yield* auditPaced(log)
      yield* Effect.logDebug(`log audit: ${events} events verified in ${Date.now() - started} ms`)
    }).pipe(
      Effect.catchAll((e) =>
        /corrupt/.test(e.reason)
          ? Effect.logError(`log audit: the log is damaged: ${e.reason}. Stop the server and run \`wo verify <data-dir>\``)
          : Effect.logWarning(`log audit: stopped before the end of the log: ${e.reason}`))
    )
    yield* Effect.forkScoped(audit)
  })
)
