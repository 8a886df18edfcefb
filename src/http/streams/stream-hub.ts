/**
 * The edge's stream machinery, one per server: push sinks for live streams, flushed together after each
 * synchronous delivery (from one microtask on, in slices of SLICE_MS: see `run`), the memory budget over their
 * backlogs, and the shared heartbeat. It keeps no list of the open streams: that is OpenStreams' alone
 * (open-streams.ts, one per runtime; `wo dev` runs several behind one edge). A sink reports its own backlog to
 * the budget and leaves the heartbeat when it closes.
 */
import { directChunks } from "./direct-chunks.ts"
import { makeHeartbeat, type Heartbeat } from "./heartbeat.ts"
import { makePushSink, type CloseReason, type PushSink, type SinkHub, type SocketLike } from "./push-sink.ts"
import { makeStreamBudget, type StreamBudget } from "./stream-budget.ts"

/** What the hub reports to metrics (src/metrics/metrics.ts implements it). */
export interface StreamObserver {
  readonly notified: (frames: number) => void
  readonly dropped: (frames: number) => void
  readonly streamClosed: (reason: CloseReason) => void
  /** A delivery's frames were handed to the sockets. */
  readonly flushed: () => void
}

export interface StreamHub {
  /** A sink over `socket`, at most `limit` frames waiting; beats every `heartbeatMs` when given. */
  readonly open: (socket: SocketLike, limit: number, heartbeatMs?: number) => PushSink
  readonly heartbeat: Heartbeat
  readonly budget: StreamBudget
  /** Reports frames written and dropped and streams closed to `observer` from now on (metrics). */
  readonly observe: (observer: StreamObserver) => void
}

/**
 * How long one slice of the fan-out may hold the event loop before it yields (see `run`). Measured with 1,000
 * streams (bench/notify-ab.ts, readers-ab.ts; a loaded machine): 1 ms gave the writer the same CPU per commit as
 * 4 ms, but commit-to-notification p99 at 1.2x the unsliced code's, where 4 ms (or no slicing) gave 0.5-0.7x.
 */
export const SLICE_MS = 4

/** Default WO_STREAM_MEMORY: 64 MiB of unread stream bytes in all. */
export const DEFAULT_STREAM_MEMORY = 64 * 1024 * 1024

/**
 * A round of the fan-out (every stream dirty when it starts, written once) that found more deliveries waiting when
 * it ended is followed by a pause of PACE times its own cost before the next one: under sustained load the fan-out
 * takes at most a third of the event loop, and the next round writes what was committed meanwhile, many frames per
 * write. A socket write costs ~10-25 µs whatever it carries (bench/fan-out-writes-ab.ts: 1 frame a write, 24 µs a
 * frame; 40 frames, 0.3-0.8), so fewer, fuller writes are what cuts the fan-out. Measured with 1,000 listen streams
 * that never read (bench/readers-ab.ts, 2,000 set_price a phase, a 2-core machine at load 5-9): back to back, rounds
 * carried ~16 frames a write and a set_price cost 1.3-1.8 ms of server CPU; a pause of 1x, 0.7-1.1 ms; 2x, 0.80x
 * of 1x's CPU and 1.6x its set_price/s with the streams open; 3x, no better than 2x (0.80x) for a longer wait. A
 * round that found nothing waiting (one commit at a time) is not followed by a pause: its latency is unchanged
 * (bench/notify-ab.ts). Under sustained load a notice may wait up to a pause more (about two rounds).
 */
export const PACE = 2

/** `sliceMs`: how long one slice of the fan-out may run (tests pass 0: 16 writes a slice); `pace`: see PACE. */
export const makeStreamHub = (memoryLimit: number = DEFAULT_STREAM_MEMORY, sliceMs: number = SLICE_MS, pace: number = PACE): StreamHub => {
  const budget = makeStreamBudget(memoryLimit)
  const heartbeat = makeHeartbeat()
  // The sinks with frames to write, in the order they got their first one: a FIFO (an array and its head).
  let dirty: Array<PushSink> = []
  let head = 0
  /** Where the round under way ends in `dirty` (sinks dirtied during it wait for the next), and its cost so far (ms). */
  let roundEnd = 0
  let roundMs = 0
  let check = false
  /** Bytes blocked sinks queued since the budget was last enforced, and how many make it worth enforcing again. */
  let growth = 0
  const step = Math.max(1, Math.floor(memoryLimit / 64))
  /** A flush is queued: a microtask (the first slice after a delivery), an immediate (a round under way) or a timer (a pause). */
  let scheduled = false
  let observer: StreamObserver | undefined

  /**
   * Writes the dirty sinks in order for about `sliceMs` (SLICE_MS), then yields to the event loop (setImmediate) and goes
   * on where it stopped. Hand-tuned (bench/readers-ab.ts): with 1,000 streams a round of writes costs
   * milliseconds, and done at once it sat on every commit's answer path. Sliced, the writer's answers go out
   * between slices, and a sink still waiting for its turn takes the next deliveries' frames into the same write:
   * the more the writer commits, the more frames each socket write carries, so the fan-out costs per round, not
   * per commit. A round ends within about streams x one write; frames stay in order, bounded per sink as before.
   * Under sustained load the next round waits (see PACE).
   */
  const run = () => {
    scheduled = false
    // A new round: the sinks dirty now.
    if (head >= roundEnd) {
      roundEnd = dirty.length
      roundMs = 0
    }
    const start = performance.now()
    const until = start + sliceMs
    let i = head
    const end = roundEnd
    while (i < end) {
      dirty[i++].flush()
      // The clock every 16 writes (at least 16 a slice): cheap next to them (a socket write is microseconds).
      if (((i - head) & 15) === 0 && i < end && performance.now() >= until) break
    }
    head = i
    if (i >= dirty.length) {
      dirty = []
      head = 0
      roundEnd = 0
      observer?.flushed()
    } else if (i < end) {
      roundMs += performance.now() - start
      scheduled = true
      setImmediate(run)
    } else {
      // The round is over and deliveries came during it: drop what was written, then pause before the next round.
      roundMs += performance.now() - start
      dirty = dirty.slice(head)
      head = 0
      roundEnd = 0
      scheduled = true
      const pause = roundMs * pace
      if (pause >= 1) setTimeout(run, pause)
      else setImmediate(run)
    }
    if (check) {
      check = false
      growth = 0
      budget.enforce()
    }
  }
  const schedule = () => {
    if (!scheduled) {
      scheduled = true
      queueMicrotask(run)
    }
  }
  const hub: SinkHub = {
    wrote: (frames) => observer?.notified(frames),
    lost: (frames) => observer?.dropped(frames),
    closed: (sink, reason) => {
      heartbeat.remove(sink)
      observer?.streamClosed(reason)
    },
    dirty: (sink: PushSink) => {
      dirty.push(sink)
      schedule()
    },
    backlogged: (sink: PushSink, on: boolean) => {
      budget.mark(sink, on)
      if (on) {
        check = true
        schedule()
      }
    },
    grew: (bytes) => {
      // The budget is enforced once the blocked sinks together queued 1/64 of it since the last check: a blocked
      // stream then costs a sum per frame, not a pass over every backlog per delivery; the total overshoots
      // the budget by that much at most.
      growth += bytes
      if (growth >= step) {
        check = true
        schedule()
      }
    }
  }
  return {
    open: (socket, limit, heartbeatMs) => {
      const sink = makePushSink(directChunks(socket), limit, hub)
      if (heartbeatMs !== undefined) heartbeat.add(heartbeatMs, sink)
      return sink
    },
    heartbeat,
    budget,
    observe: (o) => void (observer = o)
  }
}
