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

/** How the turnstile tells the time and waits: the process's clock and timers by default (a test moves its own). */
export interface TurnstileClock {
  readonly now: () => number
  /** Runs `turn` on the next turn of the event loop (its check phase). */
  readonly nextTurn: (turn: () => void) => void
  /** Runs `turn` once `ms` have passed (the timers phase). */
  readonly after: (ms: number, turn: () => void) => void
}

const processClock: TurnstileClock = {
  now: () => performance.now(),
  nextTurn: (turn) => void setImmediate(turn),
  after: (ms, turn) => void setTimeout(turn, ms)
}

/** How long work rests: after `workMs` of turns with no pause, the next turn waits `restMs` on a timer. */
export interface Rest {
  readonly workMs: number
  readonly restMs: number
}

export const makeTurnstile = (perTurn: number, rest?: Rest, clock: TurnstileClock = processClock): Turnstile => {
  const queue: Array<() => void> = []
  let scheduled = false
  // When long work last paused (a rest, or no long work for at least `restMs`), and when it last had a turn.
  let restedAt = clock.now()
  let lastTurn = Number.NEGATIVE_INFINITY
  const turn = () => {
    scheduled = false
    const now = clock.now()
    if (rest !== undefined && now - lastTurn >= rest.restMs) restedAt = now
    lastTurn = now
    for (let i = 0; i < perTurn && queue.length > 0; i++) queue.shift()!()
    if (queue.length > 0) schedule()
  }
  const schedule = () => {
    if (scheduled) return
    scheduled = true
    if (rest === undefined) return clock.nextTurn(turn)
    const now = clock.now()
    if (now - lastTurn >= rest.restMs) restedAt = now // long work paused for as long as a rest
    if (now - restedAt >= rest.workMs) clock.after(rest.restMs, turn)
    else clock.nextTurn(turn)
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
 * Long work rests a millisecond after each millisecond it kept the turnstile busy: it leaves a core idle about half
 * the time, so that on a machine whose cores the server shares (with its clients, other processes, its own garbage
 * collector's threads) the operating system does not queue them behind it. On two shared cores this is what keeps
 * requests served during a view's refold near their idle latency (bench/scenarios/view-refold.ts).
 */
export const LONG_WORK_REST: Rest = { workMs: 1, restMs: 1 }

/**
 * The process's one turnstile for long work: the event loop is one per process, so is the bound on what long
 * work takes of each of its turns.
 */
export const longWork: Turnstile = makeTurnstile(STEPS_PER_TURN, LONG_WORK_REST)
