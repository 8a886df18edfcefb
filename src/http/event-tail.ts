/**
 * `GET /api/_events?from=<seq>`: the event log as Server-Sent Events, for the console's tail and for anyone
 * building a projection outside the server. Each event is `id: <seq>` and `data: <StoredEvent JSON>`.
 *
 *  - It replays the durable log from `from`, then follows commits live, with no gap and no duplicate between
 *    the two. `from` defaults to 1: a reader that forgot it gets the whole history rather than silently
 *    missing it. A `from` past the head is kept: the reader gets nothing until the log reaches it (on a node
 *    whose tailer lags the shared log, the reader's position may well be ahead of it). `Last-Event-ID: <seq>` (what a reconnecting EventSource sends) resumes after that event and
 *    wins over `from`.
 *  - It is bounded: a reader more than `capacity` live events behind is closed (with a comment saying why) and
 *    resumes from the log with Last-Event-ID. Its backlog counts in the global stream memory budget.
 *  - Readers cannot starve the server: at most `maxPerClient` per source address and `maxTotal` in all (429
 *    past either); catch-up reads the log in batches of `BATCH` events, one socket write each, and every read
 *    and every batch passes the process's turnstile for long work (turnstile.ts: `STEPS_PER_TURN` steps per
 *    event-loop turn), so requests that arrive meanwhile are served between two steps.
 */
import { Chunk, Deferred, Effect, Either, Exit, Option, Scope, Stream } from "effect"
import type { EventLogShape } from "../log/event-log.ts"
import type { StoreError } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import type { ChangeFeedShape } from "../projections/change-feed.ts"
import type { RowsShape } from "../projections/rows.ts"
import { errorJson, type EdgeRequest, type EdgeResponse } from "./edge-types.ts"
import type { CloseReason, PushSink } from "./push-sink.ts"
import { makeHandOver } from "./hand-over.ts"
import type { OpenStreamsShape } from "./open-streams.ts"
import { SSE_HEADERS, sseFrame } from "../sse.ts"
import { longWork } from "../turnstile.ts"

export interface EventTailDeps {
  readonly log: EventLogShape
  readonly feed: ChangeFeedShape
  readonly rows: RowsShape
  /** Live events buffered per reader before it is closed (WO_STREAM_BUFFER). */
  readonly capacity: number
  readonly heartbeatMs: number
  /** Where tails are counted against their caps, and closed at shutdown (so shutdown need not wait for readers). */
  readonly streams: OpenStreamsShape
  /** The caps, for the 429's message: per client address (WO_MAX_EVENT_TAILS_PER_CLIENT) and in all (WO_MAX_EVENT_TAILS). */
  readonly maxPerClient: number
  readonly maxTotal: number
}

/** Events per catch-up write. */
export const BATCH = 128
/** Events read by catching-up readers kept for the readers behind them (a few MB at most). */
export const SHARED_WINDOW = 4096

const SEQ = /^\d{1,15}$/

/** The first sequence to send: after Last-Event-ID when present, else `from`, else 1. Left: the 400 message. */
export const startOf = (request: EdgeRequest): Either.Either<number, string> => {
  const lastEventId = request.headers["last-event-id"]
  if (typeof lastEventId === "string") {
    return SEQ.test(lastEventId.trim()) ? Either.right(Number(lastEventId.trim()) + 1) : Either.left(`Last-Event-ID must be an event's seq, got ${lastEventId}`)
  }
  const from = request.query.get("from")
  if (from === null || from === "") return Either.right(1)
  return SEQ.test(from) ? Either.right(Math.max(1, Number(from))) : Either.left(`from must be a log sequence (an integer >= 1), got ${from}`)
}

const eventText = (event: StoredEvent) => sseFrame({ id: String(event.seq), data: JSON.stringify(event) })

/** A live event's frame, built once for every tail it reaches. */
const liveFrames = new WeakMap<StoredEvent, Buffer>()
const liveFrame = (event: StoredEvent) => {
  let frame = liveFrames.get(event)
  if (frame === undefined) liveFrames.set(event, (frame = Buffer.from(eventText(event))))
  return frame
}

const closedText = (reason: string) => sseFrame({ comment: `closed (${reason}); reconnect with Last-Event-ID to resume from the log` })

export const makeEventTail = ({ log, feed, rows, capacity, heartbeatMs, streams, maxPerClient, maxTotal }: EventTailDeps) => {
  /**
   * Events readers catching up have read from the log, by seq, shared by all of them: readers replaying the
   * same stretch (many readers `from=0`, in step through the turnstile) decode each event once and frame it
   * once (`liveFrame`) instead of once each. Bounded by `SHARED_WINDOW`, oldest read first out, and emptied
   * when no reader is catching up. Events in the log never change, so a seq names one event for good.
   */
  const shared = new Map<number, StoredEvent>()
  /** Log reads under way, by the seq they read from: a reader missing that seq waits for it instead. */
  const reads = new Map<number, Deferred.Deferred<void>>()
  let replaying = 0
  /**
   * The bytes of batches written, by their first seq: readers in step send the same batches (a batch is a run of
   * seqs with no gap, so its first and last seq name it), and share one buffer for each instead of a copy each.
   * As many as the shared events would fill, oldest first out, emptied with them.
   */
  const batches = new Map<number, { readonly last: number; readonly bytes: Buffer }>()
  const batchBytes = (batch: ReadonlyArray<StoredEvent>): Buffer => {
    const first = batch[0].seq
    const last = batch[batch.length - 1].seq
    const known = batches.get(first)
    if (known?.last === last) return known.bytes
    const bytes = Buffer.concat(batch.map(liveFrame))
    batches.delete(first)
    batches.set(first, { last, bytes })
    for (const seq of batches.keys()) {
      if (batches.size <= SHARED_WINDOW / BATCH) break
      batches.delete(seq)
    }
    return bytes
  }
  const remember = (events: ReadonlyArray<StoredEvent>) => {
    for (const event of events) shared.set(event.seq, event)
    for (const seq of shared.keys()) {
      if (shared.size <= SHARED_WINDOW) break
      shared.delete(seq)
    }
  }
  /** Up to BATCH events from `from` on (and up to `to`) that some reader already read, in order, with no gap. */
  const sharedRun = (from: number, to: number): Array<StoredEvent> => {
    const run: Array<StoredEvent> = []
    for (let seq = from; seq <= to && run.length < BATCH; seq++) {
      const event = shared.get(seq)
      if (event === undefined) break
      run.push(event)
    }
    return run
  }

  /**
   * Events `from..to`, a batch per write; false when the stream closed meanwhile. Each step (one log read, or
   * one batch framed and written) passes the turnstile (`longWork`). A batch comes from the shared events when they hold
   * `from`, else from the chunk this reader last read; only when neither does it read the log, from there.
   * What it read stays its own until sent, so readers far apart cannot evict each other's events into a loop.
   */
  const replay = (sink: PushSink, from: number, to: number): Effect.Effect<boolean, StoreError> =>
    from > to ? Effect.succeed(true) : Effect.gen(function* () {
      let next = from
      let own: ReadonlyArray<StoredEvent> = []
      let at = 0
      /** Whether this reader waited for another's read at `next`: once, then it reads for itself. */
      let waited = false
      /** The log stream this reader reads, while it is positioned at `next`; reopened when the cache moved it on. */
      let reading: { readonly pull: Effect.Effect<Chunk.Chunk<StoredEvent>, Option.Option<StoreError>>; readonly scope: Scope.CloseableScope; position: number } | undefined
      const stopReading = Effect.suspend(() => (reading === undefined ? Effect.void : Scope.close(reading.scope, Exit.void)))
      const read = Effect.gen(function* () {
        if (reading?.position !== next) {
          yield* stopReading
          // Decoded a slice of BATCH per read: no step decodes more than one write sends (a log batch is 1,000).
          const scope = yield* Scope.make()
          const pull = yield* Scope.extend(Stream.toPull(log.readFrom(next, { slice: BATCH })), scope)
          reading = { pull, scope, position: next }
        }
        const chunk = yield* Effect.either(reading.pull)
        if (Either.isLeft(chunk)) return Option.isNone(chunk.left) ? [] : yield* Effect.fail(chunk.left.value)
        const events = Chunk.toReadonlyArray(chunk.right)
        if (events.length > 0) reading.position = events[events.length - 1].seq + 1
        return events.filter((e) => e.seq <= to)
      })
      return yield* Effect.gen(function* () {
        while (next <= to) {
          yield* longWork.pass
          // Readers in step send the batch another has framed: its bytes, without gathering its events again.
          const framed = batches.get(next)
          if (framed !== undefined && framed.last <= to) {
            waited = false
            if (!(yield* sink.send(framed.bytes))) return false
            next = framed.last + 1
            continue
          }
          while (at < own.length && own[at].seq < next) at++
          let batch = sharedRun(next, to)
          if (batch.length === 0) batch = own.slice(at, at + BATCH).filter((e) => e.seq <= to)
          if (batch.length === 0) {
            // Another reader reading from here already: wait for what it reads rather than read it again.
            const underWay = reads.get(next)
            if (underWay !== undefined && !waited) {
              waited = true
              yield* Deferred.await(underWay)
              continue
            }
            const done = yield* Deferred.make<void>()
            const key = next
            reads.set(key, done)
            own = yield* read.pipe(Effect.ensuring(Effect.sync(() => reads.delete(key)).pipe(Effect.zipRight(Deferred.succeed(done, undefined)))))
            at = 0
            if (own.length === 0) return true
            remember(own)
            continue
          }
          waited = false
          if (!(yield* sink.send(batchBytes(batch)))) return false
          next = batch[batch.length - 1].seq + 1
        }
        return true
      }).pipe(Effect.ensuring(stopReading))
    }).pipe(counted)

  /** Counts `work` among the replays running, and forgets the shared events and batches when the last one ends. */
  const counted = <A, E>(work: Effect.Effect<A, E>) =>
    Effect.acquireUseRelease(Effect.sync(() => void replaying++), () => work, () => Effect.sync(() => {
      if (--replaying === 0) {
        shared.clear()
        batches.clear()
      }
    }))

  /**
   * Far behind the head, replay a stretch from the log before listening, and again until close: the live buffer
   * then only has to hold what commits during the last, short replay. Then listen first (holding live events),
   * read the head, replay up to it, and hand over the held events after it. Commits are applied and published
   * in one synchronous step, so every event after `head` is held and every event up to it is in the log.
   */
  const follow = (sink: PushSink, start: number) =>
    Effect.gen(function* () {
      let from = start
      for (let head = rows.checkpoint(); head - from + 1 > capacity; head = rows.checkpoint()) {
        if (!(yield* replay(sink, from, head))) return
        from = head + 1
      }
      const handOver = makeHandOver<StoredEvent>({
        capacity,
        send: (event) => sink.enqueue(liveFrame(event)),
        overflow: () => sink.close("overflow"),
        isClosed: sink.isClosed
      })
      // A reader that starts past the head waits for the log to get there: nothing before `start` is ever sent.
      yield* feed.listen((changes) => {
        for (const { event } of changes) if (event.seq >= start) handOver.offer(event)
      })
      const head = rows.checkpoint()
      if (!(yield* replay(sink, from, head))) return
      handOver.release((event) => event.seq > head)
    })

  return (request: EdgeRequest): EdgeResponse =>
    Either.match(startOf(request), {
      onLeft: (message) => errorJson(400, "ValidationFailed", message, { issues: [{ path: ["from"], message }] }),
      onRight: (from) => {
        const client = request.remoteAddress
        if (streams.full("events", client)) {
          return errorJson(429, "TooManyReaders", `too many open event-log readers (WO_MAX_EVENT_TAILS_PER_CLIENT=${maxPerClient}, WO_MAX_EVENT_TAILS=${maxTotal})`, {}, { "retry-after": "1" })
        }
        // Counted from now, so that concurrent requests cannot all pass the check before any stream starts.
        const reserved = streams.reserve("events", client)
        return {
          _tag: "Push",
          status: 200,
          headers: SSE_HEADERS,
          heartbeatMs,
          start: (sink) =>
            Effect.gen(function* () {
              yield* streams.track({ kind: "events", client, owner: String(from), since: rows.checkpoint(), subscriptions: () => [], listChanges: false }, sink, reserved)
              sink.farewell((reason: CloseReason) => reason === "overflow" ? closedText("overflow") : reason === "store" ? closedText("store unavailable") : undefined)
              // A store failure ends the stream rather than skipping events: the reader resumes where it stopped.
              yield* follow(sink, from).pipe(Effect.catchAll(() => Effect.sync(() => sink.close("store"))))
            })
        }
      }
    })
}
