/**
 * Fair catch-up: readers replaying history (the event log tail) pass a turnstile before each step, and at most
 * `perTurn` steps go through per event-loop turn, first come first served. However many readers catch up at
 * once, the CPU they take between two turns is bounded, so requests that arrive meanwhile are served within a
 * turn or two. A plain yield would not do: every reader would run its step in the same turn.
 */
import { Effect } from "effect"

export interface Turnstile {
  /** Completes when it is this caller's turn. */
  readonly pass: Effect.Effect<void>
  readonly waiting: () => number
}

export const makeTurnstile = (perTurn: number): Turnstile => {
  const queue: Array<() => void> = []
  let scheduled = false
  const turn = () => {
    scheduled = false
    for (let i = 0; i < perTurn && queue.length > 0; i++) queue.shift()!()
    if (queue.length > 0) schedule()
  }
  const schedule = () => {
    if (scheduled) return
    scheduled = true
    setImmediate(turn)
  }
  return {
    pass: Effect.async<void>((resume) => {
      const go = () => resume(Effect.void)
      queue.push(go)
      schedule()
      return Effect.sync(() => {
        const i = queue.indexOf(go)
        if (i >= 0) queue.splice(i, 1)
      })
    }),
    waiting: () => queue.length
  }
}
