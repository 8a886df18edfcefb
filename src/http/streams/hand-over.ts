/**
 * The hand-over from a replay (read from the durable log) to live delivery, with no gap and no duplicate between
 * the two. The stream listens first and holds what arrives live while the replay runs; the replay reads up to a
 * head taken after listening; then the held items past that head go out, in order, and later ones go straight
 * through. Commits are applied and published in one synchronous step, so every item after the head is held and
 * every item up to it is in the log.
 *
 * Used by a legacy session's GET stream resumed after Last-Event-ID (mcp/session-stream.ts) and by the event
 * log's tail (`/api/_events`, event-tail.ts).
 */

export interface HandOverOptions<A> {
  /** Items held at most while the replay runs; one more closes the stream (`overflow`), so the client resumes. */
  readonly capacity: number
  /** Live delivery: after the hand-over, and for the held items it lets through. */
  readonly send: (item: A) => void
  readonly overflow: () => void
  /** True once the stream is closed: nothing more is held for it. */
  readonly isClosed: () => boolean
  /** False: there is no replay, everything goes straight through from the start. */
  readonly holding?: boolean
}

export interface HandOver<A> {
  /** A live item: held while the replay runs, sent after. */
  readonly offer: (item: A) => void
  /** The replay is done: the held items that `keep` accepts (those past its head) go out in order, then live. */
  readonly release: (keep: (item: A) => boolean) => void
}

export const makeHandOver = <A>({ capacity, send, overflow, isClosed, holding = true }: HandOverOptions<A>): HandOver<A> => {
  let held: Array<A> | undefined = holding ? [] : undefined
  return {
    offer: (item) => {
      if (held === undefined) send(item)
      else if (held.length > capacity) overflow()
      else if (!isClosed()) held.push(item)
    },
    release: (keep) => {
      const waiting = held ?? []
      held = undefined
      for (const item of waiting) if (keep(item)) send(item)
    }
  }
}
