/**
 * The startup audit of the whole log. Startup itself reads only the stored rows and the log past the checkpoint
 * (restart must stay fast on a large log), so a damaged event before the checkpoint would otherwise show only when
 * it is read (replay, resumption, `/api/_events`). Once the server is up, this reads the log once in the
 * background, verifying every checksum and the sequence (`auditPaced`), and logs an error naming the first problem.
 *
 * The server serves meanwhile: the audit reads the log paced (paced-read.ts), giving the event loop a turn every tenth
 * millisecond of its work, so a request waits about that long behind it.
 */
import { Chunk, Effect, Layer, Stream } from "effect"
import type { StoreError } from "../domain/errors.ts"
import { makePacer, PACED_FETCH } from "./paced-read.ts"
import { EventLog, type EventLogShape } from "./event-log.ts"
import { readFailed, unseal } from "./record.ts"

/**
 * Counts the events of the log from `fromSeq`, read paced, each verified. The embedded store's records are checked
 * as they are stored (`readSealedFrom`: the sequence on their keys, and each checksum, which covers key and payload),
 * not parsed: parsing verifies nothing more of a record whose checksum holds. A fetch of them is checked in one step
 * (about a tenth of a millisecond: slicing it cost more than the checks).
 */
export const auditPaced = (log: EventLogShape, pacer = makePacer(), fromSeq = 1): Effect.Effect<number, StoreError> =>
  Effect.suspend(() => {
    let counted = 0
    const sealed = log.readSealedFrom
    const read = sealed === undefined
      ? Stream.runForEachChunk(pacer.read(log, fromSeq), (chunk) => pacer.slices(Chunk.toReadonlyArray(chunk), (slice) => Effect.sync(() => void (counted += slice.length))))
      : Stream.runForEachChunk(sealed(fromSeq, { slice: PACED_FETCH }), (chunk) =>
        pacer.step(Effect.try({
          try: () => {
            for (const [key, record] of chunk) unseal(key, record)
            counted += chunk.length
          },
          catch: readFailed
        })))
    return Effect.map(read, () => counted)
  })

/**
 * The audit, in the background. `checked` answers, once it knows, up to which seq another reader of the whole log
 * from seq 1 has checked it already, and as well (0: none): views folded again from the log at startup read every
 * event, checked as the audit checks them. The audit then reads only the events after it, rather than the whole
 * log a second time beside that fold. A fold that meets a damaged record says so itself, and never answers.
 */
export const logAuditLayer = <R>(checked: Effect.Effect<number, never, R>) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const log = yield* EventLog
      const audit = Effect.gen(function* () {
        const before = yield* checked
        const started = Date.now()
        const events = yield* auditPaced(log, makePacer(), before + 1)
        yield* Effect.logDebug(`log audit: ${events} events verified in ${Date.now() - started} ms` + (before === 0 ? "" : ` (those up to seq ${before} were checked by the views' fold)`))
      }).pipe(
        Effect.catchAll((e) =>
          /corrupt/.test(e.reason)
            ? Effect.logError(`log audit: the log is damaged: ${e.reason}. Stop the server and run \`wo verify <data-dir>\``)
            : Effect.logWarning(`log audit: stopped before the end of the log: ${e.reason}`))
      )
      yield* Effect.forkScoped(audit)
    })
  )
