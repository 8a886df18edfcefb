/**
 * A stream's bounded notice buffer: the registry delivers into it without blocking; the SSE writer drains it.
 * On overflow it closes instead of growing (a slow reader never costs the process unbounded memory), and the
 * stream ends with the reason, so a legacy client resumes with Last-Event-ID and a listener re-listens.
 */
import { Effect, Option, Queue, Stream } from "effect"
import type { Notice, Sink } from "../projections/registry.ts"

export type EndReason = "overflow" | "shutdown" | "replaced" | "terminated"

export type BufferItem = Notice | { readonly _tag: "End"; readonly reason: EndReason }

export interface NoticeBuffer extends Sink {
  readonly close: (reason: EndReason) => void
  readonly isClosed: () => boolean
  /** Notices in order, ending with one `End` item. */
  readonly items: Stream.Stream<BufferItem>
}

export const makeNoticeBuffer = (capacity: number): Effect.Effect<NoticeBuffer> =>
  // One slot more than the capacity, kept for the End marker, so closing never fails.
  Effect.map(Queue.bounded<BufferItem>(capacity + 1), (queue) => {
    let closed = false
    const close = (reason: EndReason) => {
      if (closed) return
      closed = true
      queue.unsafeOffer({ _tag: "End", reason })
    }
    return {
      deliver: (notice) => {
        if (closed) return
        if (Option.getOrElse(queue.unsafeSize(), () => 0) >= capacity) close("overflow")
        else queue.unsafeOffer(notice)
      },
      close,
      isClosed: () => closed,
      items: Stream.fromQueue(queue).pipe(Stream.takeUntil((item) => item._tag === "End"))
    }
  })
