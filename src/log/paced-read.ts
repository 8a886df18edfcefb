/**
 * The log read by long work that runs while requests are served (a view folded again in the background, the startup
 * audit): in slices of PACED_SLICE events, giving the event loop a turn (the long-work turnstile) once the reader has
 * worked for PACED_MS since its last turn. What a reader does per event varies (a checksum, or an evolve and an
 * encode per view: milliseconds for a thousand), so the pause is measured, not counted: a request that arrives
 * meanwhile waits about PACED_MS (bench/scenarios/view-refold.ts).
 *
 * Once it has worked REST_AFTER_MS since it last rested, the reader rests on a timer (a millisecond at least)
 * instead of the next turn: it leaves its core idle about half the time, so that on a machine whose cores the
 * server shares with its clients or other processes, the operating system does not queue them (nor the server's
 * own garbage collector) behind it. On two shared cores this is what keeps reads near their idle latency.
 */
import { Effect, Stream } from "effect"
import type { StoreError } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import { longWork } from "../support/turnstile.ts"
import type { EventLogShape } from "./event-log.ts"

export const PACED_SLICE = 4
export const PACED_MS = 0.25
export const REST_AFTER_MS = 1

/** The shortest timer: the event loop's timers phase, a millisecond on. */
const timerRest: Effect.Effect<void> = Effect.async<void>((resume) => {
  const timer = setTimeout(() => resume(Effect.void), 1)
  return Effect.sync(() => clearTimeout(timer))
})

/**
 * A pacer: each stream it paces shares its clock, so a reader that reads in several legs keeps one rhythm. `now`
 * reads the time in milliseconds; `rest` is how the reader rests (a timer).
 */
export const makePacer = (now: () => number = () => performance.now(), rest: Effect.Effect<void> = timerRest) => {
  let turnBegan = now()
  let sinceRest = 0
  const restThenPass = Effect.zipRight(rest, longWork.pass)
  return (log: EventLogShape, fromSeq: number): Stream.Stream<StoredEvent, StoreError> =>
    log.readFrom(fromSeq, { slice: PACED_SLICE }).pipe(Stream.mapChunksEffect((chunk) => {
      const worked = now() - turnBegan
      if (worked < PACED_MS) return Effect.succeed(chunk)
      sinceRest += worked
      const resting = sinceRest >= REST_AFTER_MS
      if (resting) sinceRest = 0
      return Effect.as(Effect.tap(resting ? restThenPass : longWork.pass, () => Effect.sync(() => (turnBegan = now()))), chunk)
    }))
}
