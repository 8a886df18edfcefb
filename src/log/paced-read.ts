/**
 * The log read by long work that runs while requests are served (a view folded again in the background, the startup
 * audit): fetched PACED_FETCH events at a time, and worked in slices of PACED_SLICE, giving the event loop a turn
 * (the long-work turnstile) once the reader has worked for PACED_MS since its last turn. What a reader does per
 * event varies (a checksum, or an evolve and an encode per view: milliseconds for a thousand), so the pause is
 * measured, not counted: a request that arrives meanwhile waits about PACED_MS (bench/scenarios/view-refold.ts).
 *
 * Hand-tuned (the same bench): the slices are cut from a fetched chunk in a plain loop, not by the stream. Each
 * element of an Effect stream costs kilobytes of its machinery, so a stream of 4-event slices allocated more per
 * event than the fold's own work, and the young-generation collections that came with it paused the reads.
 */
import { Effect, Stream } from "effect"
import type { StoreError } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import { longWork } from "../support/turnstile.ts"
import type { EventLogShape } from "./event-log.ts"

export const PACED_SLICE = 4
/** The native fetch's size (classic-level-log.ts): a smaller one held the fetched batch across collections. */
export const PACED_FETCH = 64
/**
 * A view read's p99 during a refold (the bench above): ~2.1 ms with turns every quarter millisecond, ~1.5 every
 * tenth (the refold 15% longer), no lower every twentieth.
 */
export const PACED_MS = 0.1

/**
 * A pacer: the reads and slices it paces share its clock, so a reader that reads in several legs keeps one rhythm.
 * `now` reads the time in milliseconds.
 */
export const makePacer = (now: () => number = () => performance.now()) => {
  let turnBegan = now()
  const turn = Effect.tap(longWork.pass, () => Effect.sync(() => (turnBegan = now())))
  /** A turn of the loop once PACED_MS has passed since the last one. */
  const turnIfDue = Effect.suspend(() => (now() - turnBegan < PACED_MS ? Effect.void : turn))
  return {
    /** The log from `fromSeq`, in chunks of PACED_FETCH events. */
    read: (log: EventLogShape, fromSeq: number): Stream.Stream<StoredEvent, StoreError> => log.readFrom(fromSeq, { slice: PACED_FETCH }),
    /**
     * Works `events` a slice of PACED_SLICE at a time; before each slice, and after the last (the next fetch is
     * decoded when it is pulled, work of its own), a turn of the loop once PACED_MS has passed.
     */
    slices: <E>(events: ReadonlyArray<StoredEvent>, work: (slice: ReadonlyArray<StoredEvent>) => Effect.Effect<void, E>): Effect.Effect<void, E> => {
      let at = 0
      const next: Effect.Effect<void, E> = Effect.suspend(() => {
        if (at >= events.length) return turnIfDue
        const slice = events.slice(at, (at += PACED_SLICE))
        const worked = Effect.flatMap(work(slice), () => next)
        return now() - turnBegan < PACED_MS ? worked : Effect.zipRight(turn, worked)
      })
      return next
    },
    /**
     * Runs `work`, then a turn of the loop once PACED_MS has passed: for work that is small already, such as the
     * audit's check of one fetch of sealed records (a tenth of a millisecond), which slicing would only slow.
     */
    step: <E>(work: Effect.Effect<void, E>): Effect.Effect<void, E> => Effect.zipRight(work, turnIfDue)
  }
}
