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
 *  - `actor=<name>` keeps the events whose actor is that principal (domain/actor.ts), replayed and live alike; such a
 *    reader reads the log for itself (filtered-catch-up.ts), and Last-Event-ID resumes it as any other.
 *  - Readers cannot starve the server: at most `maxPerClient` per source address and `maxTotal` in all (429
 *    past either); the catch-up (catch-up.ts) writes pages of the log shared between readers, one write per step
 *    of the process's turnstile for long work (turnstile.ts), so requests that arrive meanwhile are served
 *    between two writes.
 */
import { Effect, Either } from "effect"
import type { EventLogShape } from "../../log/event-log.ts"
import type { StoredEvent } from "../../domain/events.ts"
import type { ChangeFeedShape } from "../../subscriptions/change-feed.ts"
import type { RowsShape } from "../../projections/rows/rows.ts"
import { errorJson, type EdgeRequest, type EdgeResponse } from "../edge/edge-types.ts"
import type { CloseReason, PushSink } from "../streams/push-sink.ts"
import { makeHandOver } from "../streams/hand-over.ts"
import type { OpenStreamsShape } from "../streams/open-streams.ts"
import { SSE_HEADERS, sseFrame } from "../../support/sse.ts"
import { eventText, makeCatchUp, type ReadableTypes } from "../streams/catch-up.ts"
import { replayFiltered } from "../streams/filtered-catch-up.ts"
import { Op } from "../../access/grants.ts"
import { may, type Principal } from "../../access/principal.ts"
import { streamRefused } from "../../access/rate-limits.ts"
import { limited } from "../edge/access-refusals.ts"

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

/** A live event's frame, built once for every tail it reaches. */
const liveFrames = new WeakMap<StoredEvent, Buffer>()
const liveFrame = (event: StoredEvent) => {
  let frame = liveFrames.get(event)
  if (frame === undefined) liveFrames.set(event, (frame = Buffer.from(eventText(event))))
  return frame
}

/**
 * The types whose events `principal` may see: undefined when it may see them all (no filter on the way). Decided
 * once per type for the stream (a principal's grants never change: a reload that changes them makes a new one and
 * ends this stream), so an event on the way costs a Map lookup.
 */
const readableTypes = (principal: Principal | undefined): ReadableTypes => {
  if (principal === undefined || may(principal, Op.admin) || principal.grants?.readAll === true) return undefined
  const decided = new Map<string, boolean>()
  return (type) => {
    let readable = decided.get(type)
    if (readable === undefined) decided.set(type, (readable = may(principal, Op.read(type))))
    return readable
  }
}

const closedText = (reason: string) => sseFrame({ comment: `closed (${reason}); reconnect with Last-Event-ID to resume from the log` })

export const makeEventTail = ({ log, feed, rows, capacity, heartbeatMs, streams, maxPerClient, maxTotal }: EventTailDeps) => {
  const { replay: replayAll } = makeCatchUp({ log, checkpoint: () => rows.checkpoint() })

  /**
   * Far behind the head, replay a stretch from the log before listening, and again until close: the live buffer
   * then only has to hold what commits during the last, short replay. Then listen first (holding live events),
   * read the head, replay up to it, and hand over the held events after it. Commits are applied and published
   * in one synchronous step, so every event after `head` is held and every event up to it is in the log.
   */
  const follow = (sink: PushSink, start: number, readable: ReadableTypes, byActor: ((event: StoredEvent) => boolean) | undefined) =>
    Effect.gen(function* () {
      // A reader filtered by actor reads the log for itself (filtered-catch-up.ts); the others share the catch-up pages.
      const replay = byActor === undefined
        ? (sink: PushSink, from: number, to: number) => replayAll(sink, from, to, readable)
        : (sink: PushSink, from: number, to: number) =>
          replayFiltered(log, sink, from, to, (event) => (readable === undefined || readable(event.type)) && byActor(event))
      let from = start
      for (let head = rows.checkpoint(); head - from + 1 > capacity; head = rows.checkpoint()) {
        if (!(yield* replay(sink, from, head))) return
        from = head + 1
      }
      const handOver = makeHandOver<StoredEvent>({
        capacity,
        send: (event) => sink.enqueue(liveFrame(event)),
        overflow: () => sink.close("overflow"),
        isClosed: () => sink.isClosed()
      })
      // A reader that starts past the head waits for the log to get there: nothing before `start` is ever sent.
      yield* feed.listen((changes) => {
        for (const { event } of changes) {
          if (event.seq >= start && (readable === undefined || readable(event.type)) && (byActor === undefined || byActor(event))) handOver.offer(event)
        }
      })
      const head = rows.checkpoint()
      if (!(yield* replay(sink, from, head))) return
      handOver.release((event) => event.seq > head)
    })

  return (request: EdgeRequest): EdgeResponse =>
    Either.match(startOf(request), {
      onLeft: (message) => errorJson(400, "ValidationFailed", message, { issues: [{ path: ["from"], message }] }),
      onRight: (from) => {
        const actor = request.query.get("actor")
        if (actor === "") return errorJson(400, "ValidationFailed", "actor must name a principal", { issues: [{ path: ["actor"], message: "actor must name a principal" }] })
        const byActor = actor === null ? undefined : (event: StoredEvent) => event.actor?.principal === actor
        const client = request.remoteAddress
        const principal = request.principal
        const reached = principal === undefined ? undefined : streamRefused(principal.limits, streams.streamsOf(principal))
        if (reached !== undefined) return limited(reached)
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
              yield* streams.track({ kind: "events", client, owner: String(from), since: rows.checkpoint(), subscriptions: () => [], listChanges: false, principal }, sink, reserved)
              sink.farewell((reason: CloseReason) =>
                reason === "overflow"
                  ? closedText("overflow")
                  : reason === "store"
                  ? closedText("store unavailable")
                  : reason === "revoked" ? sseFrame({ comment: "closed (access revoked)" }) : undefined)
              // A store failure ends the stream rather than skipping events: the reader resumes where it stopped.
              yield* follow(sink, from, readableTypes(principal), byActor).pipe(Effect.catchAll(() => Effect.sync(() => sink.close("store"))))
            })
        }
      }
    })
}
