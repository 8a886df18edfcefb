/**
 * The edge's stream machinery, one per server: push sinks for live streams, flushed together after each
 * synchronous delivery (one microtask, however many streams a change reached), the memory budget over their
 * backlogs, and the shared heartbeat.
 */
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
  /** Forgets a closed sink (its heartbeat, its backlog). */
  readonly release: (sink: PushSink) => void
  readonly heartbeat: Heartbeat
  readonly budget: StreamBudget
  /** Sinks open now. */
  readonly count: () => number
  /** Reports frames written and dropped and streams closed to `observer` from now on (metrics). */
  readonly observe: (observer: StreamObserver) => void
}

/** Default WO_STREAM_MEMORY: 64 MiB of unread stream bytes in all. */
export const DEFAULT_STREAM_MEMORY = 64 * 1024 * 1024

export const makeStreamHub = (memoryLimit: number = DEFAULT_STREAM_MEMORY): StreamHub => {
  const budget = makeStreamBudget(memoryLimit)
  const heartbeat = makeHeartbeat()
  const stops = new Map<PushSink, () => void>()
  let dirty: Array<PushSink> = []
  let check = false
  let scheduled = false
  let observer: StreamObserver | undefined

  const run = () => {
    scheduled = false
    const sinks = dirty
    dirty = []
    for (const s of sinks) s.flush()
    observer?.flushed()
    if (check) {
      check = false
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
    closed: (reason) => observer?.streamClosed(reason),
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
    }
  }
  return {
    open: (socket, limit, heartbeatMs) => {
      const sink = makePushSink(socket, limit, hub)
      if (heartbeatMs !== undefined) stops.set(sink, heartbeat.add(heartbeatMs, sink.beat))
      else stops.set(sink, () => {})
      return sink
    },
    release: (sink) => {
      stops.get(sink)?.()
      stops.delete(sink)
      budget.mark(sink, false)
    },
    heartbeat,
    budget,
    count: () => stops.size,
    observe: (o) => void (observer = o)
  }
}
