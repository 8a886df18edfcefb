/**
 * `GET /api/_events?from=<seq>`: the event log as Server-Sent Events, for the console's tail and for anyone
 * building a projection outside the server. Each event is `id: <seq>` and `data: <StoredEvent JSON>`.
 *
 *  - It replays the durable log from `from`, then follows commits live, with no gap and no duplicate between
 *    the two. `from` defaults to 1: a reader that forgot it gets the whole history rather than silently
 *    missing it. `Last-Event-ID: <seq>` (what a reconnecting EventSource sends) resumes after that event and
 *    wins over `from`.
 *  - It is bounded: a reader more than `capacity` live events behind is closed (with a comment saying why) and
 *    resumes from the log with Last-Event-ID. Memory never grows with a slow reader, and the writer never waits.
 */
import { Effect, Either, Option, Queue, Stream } from "effect"
import type { EventLogShape } from "../log/event-log.ts"
import type { StoreUnavailable } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import { errorJson, type EdgeRequest, type EdgeResponse } from "../http/edge-types.ts"
import { SSE_HEADERS, sseFrame } from "../http/sse.ts"
import type { ChangeFeedShape } from "../projections/change-feed.ts"
import type { RowsShape } from "../projections/rows.ts"

export interface EventTailDeps {
  readonly log: EventLogShape
  readonly feed: ChangeFeedShape
  readonly rows: RowsShape
  /** Live events buffered per reader before it is closed (WO_STREAM_BUFFER). */
  readonly capacity: number
  readonly heartbeatMs: number
  /** Completes when the server shuts down: every tail then ends, so shutdown need not wait for readers. */
  readonly stopped: Effect.Effect<void>
}

type EndReason = "overflow" | "store unavailable"
type Item = StoredEvent | { readonly _tag: "End"; readonly reason: EndReason }

/** Live events for one reader; on overflow it closes instead of growing (see notice-buffer.ts, same idea). */
const makeEventBuffer = (capacity: number) =>
  // One slot more than the capacity, kept for the End marker, so closing never fails.
  Effect.map(Queue.bounded<Item>(capacity + 1), (queue) => {
    let closed = false
    return {
      offer: (events: Iterable<StoredEvent>) => {
        for (const event of events) {
          if (closed) return
          if (Option.getOrElse(queue.unsafeSize(), () => 0) >= capacity) {
            closed = true
            queue.unsafeOffer({ _tag: "End", reason: "overflow" })
          } else {
            queue.unsafeOffer(event)
          }
        }
      },
      items: Stream.fromQueue(queue).pipe(Stream.takeUntil((item) => "_tag" in item))
    }
  })

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

const eventFrame = (event: StoredEvent) => sseFrame({ id: String(event.seq), data: JSON.stringify(event) })
const closedFrame = (reason: EndReason) => `: closed (${reason}); reconnect with Last-Event-ID to resume from the log\n\n`

export const makeEventTail = ({ log, feed, rows, capacity, heartbeatMs, stopped }: EventTailDeps) => {
  /** Events `from..to` from the durable log. Everything up to the checkpoint is in it: rows apply after the fsync. */
  const replay = (from: number, to: number): Stream.Stream<string, StoreUnavailable> =>
    from > to ? Stream.empty : log.readFrom(from).pipe(Stream.takeWhile((e) => e.seq <= to), Stream.map(eventFrame))

  /**
   * Listen first, into the bounded buffer; then read the head; replay up to it from the log; then drain the
   * buffer, skipping what the replay already sent. Commits are applied and published in one synchronous step,
   * so every event after `head` is in the buffer and every event up to it is in the log.
   */
  const following = (from: number) =>
    Stream.unwrapScoped(
      Effect.gen(function* () {
        const buffer = yield* makeEventBuffer(capacity)
        yield* feed.listen((changes) => buffer.offer(changes.map((c) => c.event)))
        const head = rows.checkpoint()
        const first = Math.max(from, head + 1)
        const live = buffer.items.pipe(
          Stream.filterMap((item) =>
            "_tag" in item ? Option.some(closedFrame(item.reason)) : item.seq >= first ? Option.some(eventFrame(item)) : Option.none())
        )
        return Stream.concat(replay(from, head), live)
      })
    )

  /**
   * Far behind the head, replay a stretch from the log before listening, and again until close: the live buffer
   * then only has to hold what commits during the last, short replay, so a long history never overflows it.
   */
  const frames = (from: number): Stream.Stream<string, StoreUnavailable> =>
    Stream.suspend(() => {
      const head = rows.checkpoint()
      return head - from + 1 > capacity ? Stream.concat(replay(from, head), frames(head + 1)) : following(from)
    })

  return (request: EdgeRequest): EdgeResponse =>
    Either.match(startOf(request), {
      onLeft: (message) => errorJson(400, "ValidationFailed", message, { issues: [{ path: ["from"], message }] }),
      onRight: (from) => ({
        _tag: "Stream",
        status: 200,
        headers: SSE_HEADERS,
        // A store failure ends the stream rather than skipping events: the reader resumes where it stopped.
        events: frames(from).pipe(
          Stream.catchAll(() => Stream.make(closedFrame("store unavailable"))),
          Stream.interruptWhen(stopped)
        ),
        heartbeatMs
      })
    })
}
