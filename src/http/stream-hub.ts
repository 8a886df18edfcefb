/**
 * The edge's stream machinery, one per server: push sinks for live streams, flushed together after each
 * synchronous delivery (one microtask, however many streams a change reached), the memory budget over their
 * backlogs, and the shared heartbeat. It keeps no list of the open streams: that is OpenStreams' alone
 * (open-streams.ts, one per runtime; `wo dev` runs several behind one edge). A sink reports its own backlog to
 * the budget and stops its own heartbeat when it closes.
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
  readonly heartbeat: Heartbeat
  readonly budget: StreamBudget
  /** Reports frames written and dropped and streams closed to `observer` from now on (metrics). */
  readonly observe: (observer: StreamObserver) => void
}

/** Default WO_STREAM_MEMORY: 64 MiB of unread stream bytes in all. */
export const DEFAULT_STREAM_MEMORY = 64 * 1024 * 1024

export const makeStreamHub = (memoryLimit: number = DEFAULT_STREAM_MEMORY): StreamHub => {
  const budget = makeStreamBudget(memoryLimit)
  const heartbeat = makeHeartbeat()
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
      if (heartbeatMs !== undefined) sink.whenClosed(heartbeat.add(heartbeatMs, sink.beat))
      return sink
    },
    heartbeat,
    budget,
    observe: (o) => void (observer = o)
  }
}
