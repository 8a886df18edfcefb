/**
 * A push sink: one SSE response's writer on the live path. Notices are turned into frames by their stream and
 * handed over synchronously; the sink writes them straight to the socket while it has room and keeps the rest
 * in a bounded per-stream queue. No Effect Stream stage runs per frame.
 *
 *  - Coalescing: frames handed over during one synchronous delivery (one durable batch) are written together,
 *    once that delivery is over (one microtask for every sink of the process), as one socket write per stream.
 *  - Bound: at most `limit` frames may wait (WO_STREAM_BUFFER + 1: the buffer plus the one "in the writer's
 *    hands"). One more closes the stream ("overflow"): what was queued is still handed to the socket, then the
 *    response ends, and a legacy client resumes from the last id it got.
 *  - Memory: every sink with a backlog is reported to the process-wide `StreamBudget`, which closes the
 *    largest backlogs first when all of them together exceed WO_STREAM_MEMORY.
 *
 * Hand-tuned on purpose (see bench/scenarios/notify.ts): this is the fan-out loop, run once per subscriber
 * per change.
 */
import { Effect } from "effect"
import { sseFrame } from "../../support/sse.ts"

/** Why a stream ended. "memory": closed by the global stream memory budget; "client": the client went away. */
export type CloseReason = "overflow" | "memory" | "shutdown" | "replaced" | "terminated" | "client" | "store" | "done" | "revoked"

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
  /** The sink closed (it leaves the heartbeat; metrics count it). */
  readonly closed: (sink: PushSink, reason: CloseReason) => void
}

export interface PushSink {
  /**
   * Queues one frame (given as parts, written back to back: a prebuilt prefix, the stream's id, a suffix);
   * false when the stream is closed, or has just been closed because the frame did not fit.
   */
  readonly enqueue: (...parts: ReadonlyArray<Buffer>) => boolean
  /** Writes a frame now and waits until the socket took it (replay: backpressure without a queue). */
  readonly send: (frame: Buffer | string) => Effect.Effect<boolean>
  /**
   * `send` for plain callbacks (a replay stepping a page per turn without a fiber step each): writes the frame now,
   * then calls `then(true)` once the socket has room again, or `then(false)` when the stream is or gets closed.
   */
  readonly sendThen: (frame: Buffer | string, then: (open: boolean) => void) => void
  /** Ends the stream; `last` (e.g. a listen's graceful result) is written after what is queued. Idempotent. */
  readonly close: (reason: CloseReason, last?: string) => void
  isClosed(): boolean
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
  beat(since: number): void
}

const HEARTBEAT = Buffer.from(sseFrame({ comment: "heartbeat" }))

/**
 * One class for every sink, its methods shared (an open stream keeps only its fields: bench/stream-memory.ts, heap
 * per open stream). Every field is set in the constructor and none is added later, so that sinks keep one shape.
 * Its methods are not bound: call them on the sink (the heartbeat holds the sink itself, not its `beat`).
 */
class Sink implements PushSink {
  private readonly parts: Array<Buffer> = []
  private frames = 0
  private bytes = 0
  private blocked = false
  private reason: CloseReason | undefined = undefined
  private lastWords: ((reason: CloseReason) => string | undefined) | undefined = undefined
  private lastWrite = Date.now()
  /** Made with its first waiter, at its size (an open stream has one: a pushed-to empty array takes 16 slots). */
  private waiters: Array<(reason: CloseReason) => void> | undefined = undefined
  /** Waiting for the socket to have room again (send); woken by a drain or by the close. */
  private readonly roomWaiters: Array<() => void> = []
  /** A socket that takes the parts as they are (direct-chunks.ts) frames them in one buffer: no join first. */
  private readonly direct: DirectSocket | undefined
  /** The socket's "drain" listener: bound once, so that `close` can remove it. */
  private readonly onDrain: () => void

  constructor(private readonly socket: SocketLike, private readonly limit: number, private readonly hub: SinkHub) {
    this.direct = "writeParts" in socket ? (socket as DirectSocket) : undefined
    this.onDrain = () => this.drained()
  }

  /** Writes what is queued, as one write; false when the socket is full. */
  private writeQueued(): boolean {
    const parts = this.parts
    const ok = this.direct !== undefined
      ? this.direct.writeParts(parts, this.bytes)
      : this.socket.write(parts.length === 1 ? parts[0] : Buffer.concat(parts, this.bytes))
    // The array is reused: both writes above copied or kept the buffers, not the array.
    parts.length = 0
    this.frames = 0
    this.bytes = 0
    return ok
  }

  private drained() {
    this.blocked = false
    this.flush()
    if (!this.blocked) {
      if (this.frames === 0) this.hub.backlogged(this, false)
      for (const w of this.roomWaiters.splice(0)) w()
    }
  }

  private block() {
    this.blocked = true
    this.socket.once("drain", this.onDrain)
    this.hub.backlogged(this, true)
  }

  /** Completes once the socket has room (or the stream closed). Made when needed: an open stream keeps no Effect. */
  private writable(): Effect.Effect<void> {
    return Effect.async<void>((resume) => {
      if (!this.blocked || this.reason !== undefined) return resume(Effect.void)
      const w = () => resume(Effect.void)
      this.roomWaiters.push(w)
      return Effect.sync(() => {
        const i = this.roomWaiters.indexOf(w)
        if (i >= 0) this.roomWaiters.splice(i, 1)
      })
    })
  }

  flush() {
    if (this.blocked || this.frames === 0 || this.reason !== undefined) return
    this.lastWrite = Date.now()
    // Hand-tuned: counted once per flush (one delivery to this stream), never per frame.
    this.hub.wrote?.(this.frames)
    if (!this.writeQueued()) this.block()
  }

  close(why: CloseReason, last?: string) {
    if (this.reason !== undefined) return
    this.reason = why
    const { socket, hub } = this
    socket.off("drain", this.onDrain)
    hub.backlogged(this, false)
    hub.closed(this, why)
    if (why === "memory" || why === "client") {
      // Free what the stream holds at once: the client resumes, or re-listens, from what it got.
      if (this.frames > 0) hub.lost?.(this.frames)
      this.parts.length = 0
      this.frames = 0
      this.bytes = 0
      socket.destroy()
    } else if (!socket.destroyed) {
      // Bounded by `limit` frames: hand them over, then end (a stalled client's socket then times out).
      if (this.frames > 0) {
        hub.wrote?.(this.frames)
        this.writeQueued()
      }
      const final = last ?? this.lastWords?.(why)
      if (final !== undefined) socket.write(final)
      socket.end()
    }
    for (const w of this.roomWaiters.splice(0)) w()
    const waiters = this.waiters
    this.waiters = undefined
    if (waiters !== undefined) for (const w of waiters) w(why)
  }

  enqueue(...frame: ReadonlyArray<Buffer>): boolean {
    if (this.reason !== undefined) return false
    if (this.frames >= this.limit) {
      this.close("overflow")
      this.hub.lost?.(1)
      return false
    }
    let n = 0
    for (const p of frame) {
      this.parts.push(p)
      n += p.length
    }
    this.bytes += n
    if (this.frames++ === 0 && !this.blocked) this.hub.dirty(this)
    // Blocked: nothing to schedule (the drain writes it), only the memory budget to keep count for.
    if (this.blocked) this.hub.grew(n)
    return true
  }

  send(frame: Buffer | string): Effect.Effect<boolean> {
    const attempt: Effect.Effect<boolean> = Effect.suspend(() => {
      if (this.reason !== undefined || this.socket.destroyed) return Effect.succeed(false)
      this.flush()
      if (this.blocked) return Effect.zipRight(this.writable(), attempt)
      this.lastWrite = Date.now()
      if (!this.socket.write(frame)) this.block()
      return Effect.succeed(true)
    })
    return Effect.flatMap(attempt, (ok) => (ok ? Effect.as(this.writable(), true) : Effect.succeed(false)))
  }

  sendThen(frame: Buffer | string, then: (open: boolean) => void): void {
    if (this.reason !== undefined || this.socket.destroyed) return then(false)
    this.flush()
    if (this.blocked) {
      this.roomWaiters.push(() => this.sendThen(frame, then))
      return
    }
    this.lastWrite = Date.now()
    if (this.socket.write(frame)) return then(true)
    this.block()
    // Woken by the drain, or by the close (then false).
    this.roomWaiters.push(() => then(this.reason === undefined))
  }

  isClosed(): boolean {
    return this.reason !== undefined
  }

  farewell(lastWords: (reason: CloseReason) => string | undefined) {
    this.lastWords = lastWords
  }

  /** Made on each use, not kept per stream. */
  get closed(): Effect.Effect<CloseReason> {
    return Effect.async<CloseReason>((resume) => {
      if (this.reason !== undefined) return resume(Effect.succeed(this.reason))
      const w = (r: CloseReason) => resume(Effect.succeed(r))
      this.waitFor(w)
      return Effect.sync(() => {
        const i = this.waiters?.indexOf(w) ?? -1
        if (i >= 0) this.waiters!.splice(i, 1)
      })
    })
  }

  whenClosed(f: (reason: CloseReason) => void) {
    if (this.reason !== undefined) f(this.reason)
    else this.waitFor(f)
  }

  private waitFor(f: (reason: CloseReason) => void) {
    if (this.waiters === undefined) this.waiters = [f]
    else this.waiters.push(f)
  }

  backlog(): number {
    return this.reason !== undefined ? 0 : this.bytes + (this.blocked ? this.socket.writableLength : 0)
  }

  beat(since: number): void {
    if (this.reason !== undefined || this.blocked || this.frames > 0 || this.lastWrite > since) return
    this.lastWrite = Date.now()
    if (!this.socket.write(HEARTBEAT)) this.block()
  }
}

export const makePushSink = (socket: SocketLike, limit: number, hub: SinkHub): PushSink => new Sink(socket, limit, hub)
