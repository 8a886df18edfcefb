/**
 * Turns of the event loop for long work: readers replaying history (`/api/_events` catch-up, MCP resumption),
 * the log audit, index backfills. Such work passes a turnstile before each step, and at most `perTurn` steps go
 * through per event-loop turn, first come first served. However much of it runs at once, the CPU it takes
 * between two turns is bounded, so requests that arrive meanwhile are served within a turn or two. A plain yield
 * would not do: `Effect.yieldNow` resumes on a microtask (requests waiting on I/O would still queue behind all
 * of it), and a `setImmediate` per worker lets every worker run its step in the same turn.
 *
 * A leaf module (it imports only Effect), so that the log, the projections and the HTTP routes share it.
 */
import { Effect } from "effect"

export interface Turnstile {
  /** Completes when it is this caller's turn. */
  readonly pass: Effect.Effect<void>
  /** Runs `step` on this caller's turn (for plain callbacks, such as the edge reading a large body). */
  readonly enter: (step: () => void) => void
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
    enter: (step) => {
      queue.push(step)
      schedule()
    },
    pass: Effect.async<void>((resume) => {
      const go = () => resume(Effect.void)
      queue.push(go)
      schedule()
      return Effect.sync(() => {
        const i = queue.indexOf(go)
        if (i >= 0) queue.splice(i, 1)
      })
    })
  }
}

/** Steps of long work per event-loop turn, all of it together. */
export const STEPS_PER_TURN = 1

/**
 * The process's one turnstile for long work: the event loop is one per process, so is the bound on what long
 * work takes of each of its turns.
 */
export const longWork: Turnstile = makeTurnstile(STEPS_PER_TURN)
