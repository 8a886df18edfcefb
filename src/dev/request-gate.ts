/**
 * `wo dev`'s gate in front of the app: requests pass while it is open; `hold` closes it and waits until the ones
 * in flight have finished (their writes acknowledged), so a catalog swap never happens under a request.
 * Held requests wait, they are not refused; `release` lets them on, to whatever app is current by then.
 */
import { Effect } from "effect"

export interface RequestGate {
  readonly pass: <A, E, R>(request: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly hold: Effect.Effect<void>
  readonly release: Effect.Effect<void>
}

const DRAIN_POLL = "2 millis"

export const makeRequestGate = Effect.gen(function* () {
  const latch = yield* Effect.makeLatch(true)
  let open = true
  let inFlight = 0
  // Checked and counted in one synchronous step: a swap can never start between the two.
  const enter = Effect.sync(() => (open ? (inFlight++, true) : false))
  const leave = Effect.sync(() => void inFlight--)
  const pass = <A, E, R>(request: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(enter, (entered) =>
        entered
          ? Effect.ensuring(restore(request), leave)
          : restore(Effect.zipRight(latch.await, Effect.suspend(() => pass(request))))))
  const hold = Effect.gen(function* () {
    open = false
    yield* latch.close
    while (inFlight > 0) yield* Effect.sleep(DRAIN_POLL)
  })
  const release = Effect.zipRight(Effect.sync(() => void (open = true)), latch.open)
  return { pass, hold, release } satisfies RequestGate
})
