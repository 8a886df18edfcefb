/**
 * The log read by long work that runs while requests are served (a view folded again in the background, the startup
 * audit): in slices of PACED_SLICE events, giving the event loop a turn (the long-work turnstile) once the reader has
 * worked for PACED_MS since its last turn. What a reader does per event varies (a checksum, or an evolve and an
 * encode per view: milliseconds for a thousand), so the pause is measured, not counted: a request that arrives
 * meanwhile waits about PACED_MS (bench/scenarios/view-refold.ts).
 */
import { Effect, Stream } from "effect"
import type { StoreError } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import { longWork } from "../support/turnstile.ts"
import type { EventLogShape } from "./event-log.ts"

export const PACED_SLICE = 4
export const PACED_MS = 0.25

/**
 * A pacer: each stream it paces shares its clock, so a reader that reads in several legs keeps one rhythm. `now`
 * reads the time in milliseconds.
 */
export const makePacer = (now: () => number = () => performance.now()) => {
  let turnBegan = now()
  return (log: EventLogShape, fromSeq: number): Stream.Stream<StoredEvent, StoreError> =>
    log.readFrom(fromSeq, { slice: PACED_SLICE }).pipe(Stream.mapChunksEffect((chunk) => {
      if (now() - turnBegan < PACED_MS) return Effect.succeed(chunk)
      return Effect.as(Effect.tap(longWork.pass, () => Effect.sync(() => (turnBegan = now()))), chunk)
    }))
}
