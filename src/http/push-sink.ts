/**
 * A push sink: one SSE response's writer on the live path. Notices are turned into frames by their stream and
 * handed over synchronously; the sink writes them straight to the socket while it has room and keeps the rest
 * in a bounded per-stream queue. No Effect Stream stage runs per frame.
 *
 *  - Coalescing: frames handed over during one synchronous delivery (one durable batch) are written together,
 *    once that delivery is over (one microtask for every sink of the process), as one socket write per stream.
 *  - Bound: at most `limit` frames may wait (WO_STREAM_BUFFER + 1: the buffer plus the one "in the writer's
 *    hands", the same bound the Effect-queue implementation had). One more closes the stream ("overflow"):
 *    what was queued is still handed to the socket, then the response ends, and a legacy client resumes
 *    from the last id it got.
 *  - Memory: every sink with a backlog is reported to the process-wide `StreamBudget`, which closes the
 *    largest backlogs first when all of them together exceed WO_STREAM_MEMORY.
 *
 * Hand-tuned on purpose (see bench/scenarios/notify.ts): this is the fan-out loop, run once per subscriber
 * per change.
 */
import { Effect } from "effect"
import { sseFrame } from "../sse.ts"

/** Why a stream ended. "memory": closed by the global stream memory budget; "client": the client went away. */
export type CloseReason = "overflow" | "memory" | "shutdown" | "replaced" | "terminated" | "client" | "store" | "done"

/** What the sink needs of a response: node's `ServerResponse` fits. */
export interface SocketLike {
  write(chunk: Buffer | string): boolean
  once(event: "drain" | "close", listener: () => void): unknown
  off(event: "drain" | "close", listener: () => void): unknown
  end(): unknown
  destroy(): unknown
  readonly writableLength: number
  readonly destroyed: boolean
}

/** A SocketLike that can write a flush's parts as one chunk, without joining them first (direct-chunks.ts). */
export interface DirectSocket extends SocketLike {
  readonly writeParts: (parts: ReadonlyArray<Buffer>, bytes: number) => boolean
}

/** The process-wide side of the sinks: coalesced flushing and the memory budget (see stream-budget.ts). */
export interface SinkHub {
  readonly dirty: (sink: PushSink) => void
  /** The sink's socket filled (true: its backlog counts against the budget from now) or drained (false). */
  readonly backlogged: (sink: PushSink, on: boolean) => void
  /** A blocked sink queued `bytes` more: the budget is checked once enough has piled up, not per frame. */
  readonly grew: (bytes: number) => void
  /** Counting (metrics): frames written to the socket, frames dropped, the stream's close. Once per flush, not per frame. */
  readonly wrote?: (frames: number) => void
  readonly lost?: (frames: number) => void
  readonly closed?: (reason: CloseReason) => void
}

export interface PushSink {
  /**
   * Queues one frame (given as parts, written back to back: a prebuilt prefix, the stream's id, a suffix);
   * false when the stream is closed, or has just been closed because the frame did not fit.
   */
  readonly enqueue: (...parts: ReadonlyArray<Buffer>) => boolean
  /** Writes a frame now and waits until the socket took it (replay: backpressure without a queue). */
  readonly send: (frame: Buffer | string) => Effect.Effect<boolean>
  /** Ends the stream; `last` (e.g. a listen's graceful result) is written after what is queued. Idempotent. */
  readonly close: (reason: CloseReason, last?: string) => void
  readonly isClosed: () => boolean
  /** Sets the frame written last when the stream ends for `reason` (not when the client left or memory ran out). */
  readonly farewell: (lastWords: (reason: CloseReason) => string | undefined) => void
  /** Completes with the reason once the stream is closed. */
  readonly closed: Effect.Effect<CloseReason>
  /** Calls `f` once the stream is closed (at once if it is). */
  readonly whenClosed: (f: (reason: CloseReason) => void) => void
  /** Bytes waiting: in the queue, and in the socket's own buffer while it is full. */
  readonly backlog: () => number
  /** Writes every queued frame the socket has room for (the hub calls it after each delivery). */
  readonly flush: () => void
  /** Writes a comment if nothing was written since `since` and nothing is waiting (the shared heartbeat). */
  readonly beat: (since: number) => void
}

const HEARTBEAT = Buffer.from(sseFrame({ comment: "heartbeat" }))

export const makePushSink = (socket: SocketLike, limit: number, hub: SinkHub): PushSink => {
  const parts: Array<Buffer> = []
  let frames = 0
  let bytes = 0
  let blocked = false
  let reason: CloseReason | undefined
  let lastWords: ((reason: CloseReason) => string | undefined) | undefined
  let lastWrite = Date.now()
  const waiters: Array<(reason: CloseReason) => void> = []

  // A socket that takes the parts as they are (direct-chunks.ts) frames them in one buffer: no join first.
  const direct = "writeParts" in socket ? (socket as DirectSocket) : undefined

  /** Writes what is queued, as one write; false when the socket is full. */
  const writeQueued = (): boolean => {
    const ok = direct !== undefined
      ? direct.writeParts(parts, bytes)
      : socket.write(parts.length === 1 ? parts[0] : Buffer.concat(parts, bytes))
    // The array is reused: both writes above copied or kept the buffers, not the array.
    parts.length = 0
    frames = 0
    bytes = 0
    return ok
  }

  /** Waiting for the socket to have room again (send); woken by a drain or by the close. */
  const roomWaiters: Array<() => void> = []

  const onDrain = () => {
    blocked = false
    flush()
    if (!blocked) {
      if (frames === 0) hub.backlogged(sink, false)
      for (const w of roomWaiters.splice(0)) w()
    }
  }

  const block = () => {
    blocked = true
    socket.once("drain", onDrain)
    hub.backlogged(sink, true)
  }

  /** Completes once the socket has room (or the stream closed). Made when needed: an open stream keeps no Effect. */
  const writable = (): Effect.Effect<void> => Effect.async<void>((resume) => {
    if (!blocked || reason !== undefined) return resume(Effect.void)
    const w = () => resume(Effect.void)
    roomWaiters.push(w)
    return Effect.sync(() => {
      const i = roomWaiters.indexOf(w)
      if (i >= 0) roomWaiters.splice(i, 1)
    })
  })

  const flush = () => {
    if (blocked || frames === 0 || reason !== undefined) return
    lastWrite = Date.now()
    // Hand-tuned: counted once per flush (one delivery to this stream), never per frame.
    hub.wrote?.(frames)
    if (!writeQueued()) block()
  }

  const close = (why: CloseReason, last?: string) => {
    if (reason !== undefined) return
    reason = why
    socket.off("drain", onDrain)
    hub.backlogged(sink, false)
    hub.closed?.(why)
    if (why === "memory" || why === "client") {
      // Free what the stream holds at once: the client resumes, or re-listens, from what it got.
      if (frames > 0) hub.lost?.(frames)
      parts.length = 0
      frames = 0
      bytes = 0
      socket.destroy()
    } else if (!socket.destroyed) {
      // Bounded by `limit` frames: hand them over, then end (a stalled client's socket then times out).
      if (frames > 0) {
        hub.wrote?.(frames)
        writeQueued()
      }
      const final = last ?? lastWords?.(why)
      if (final !== undefined) socket.write(final)
      socket.end()
    }
    for (const w of roomWaiters.splice(0)) w()
    for (const w of waiters.splice(0)) w(why)
  }

  const enqueue = (...frame: ReadonlyArray<Buffer>): boolean => {
    if (reason !== undefined) return false
    if (frames >= limit) {
      close("overflow")
      hub.lost?.(1)
      return false
    }
    let n = 0
    for (const p of frame) {
      parts.push(p)
      n += p.length
    }
    bytes += n
    if (frames++ === 0 && !blocked) hub.dirty(sink)
    // Blocked: nothing to schedule (the drain writes it), only the memory budget to keep count for.
    if (blocked) hub.grew(n)
    return true
  }

  const sink: PushSink = {
    enqueue,
    send: (frame) => {
      const attempt: Effect.Effect<boolean> = Effect.suspend(() => {
        if (reason !== undefined || socket.destroyed) return Effect.succeed(false)
        flush()
        if (blocked) return Effect.zipRight(writable(), attempt)
        lastWrite = Date.now()
        if (!socket.write(frame)) block()
        return Effect.succeed(true)
      })
      return Effect.flatMap(attempt, (ok) => (ok ? Effect.as(writable(), true) : Effect.succeed(false)))
    },
    close,
    isClosed: () => reason !== undefined,
    farewell: (f) => void (lastWords = f),
    closed: Effect.async<CloseReason>((resume) => {
      if (reason !== undefined) return resume(Effect.succeed(reason))
      const w = (r: CloseReason) => resume(Effect.succeed(r))
      waiters.push(w)
      return Effect.sync(() => {
        const i = waiters.indexOf(w)
        if (i >= 0) waiters.splice(i, 1)
      })
    }),
    whenClosed: (f) => {
      if (reason !== undefined) f(reason)
      else waiters.push(f)
    },
    backlog: () => (reason !== undefined ? 0 : bytes + (blocked ? socket.writableLength : 0)),
    flush,
    beat: (since) => {
      if (reason !== undefined || blocked || frames > 0 || lastWrite > since) return
      lastWrite = Date.now()
      if (!socket.write(HEARTBEAT)) block()
    }
  }
  return sink
}
