/**
 * How a node keeps its picture of the shared log between appends: made from the log read at start, moved by what
 * it writes (append.ts) and by what the log delivers (the tailer), and planned on (append-plan.ts).
 */
import type { StoredEvent } from "../../domain/events.ts"

/** A type's highest id handed out (to a create or in a block) and live row count (as far as this node knows). */
export type Counts = { lastId: number; rowCount: number }

/**
 * This node's picture of the log: the head and the counters after its last append (or as read at start, or as
 * the function last answered). Only a guess, checked by the function under the lock: a wrong one costs a round trip.
 */
export interface LogPicture {
  head: number
  readonly counts: Map<string, Counts>
  /**
   * Per type, the seq its counters are exact at (absent: `base`, the head read at start): an event of the type the
   * log delivers later counts only past it. After a batch written behind other nodes' commits (shifted), the head
   * is past them before they are delivered, and the counters of the batch's own types include them already.
   */
  readonly countedAt: Map<string, number>
  readonly base: number
  /** What the appends on this picture cost: logged at Debug (postgres-log.ts), read by bench/profile-pg.ts. */
  readonly cost: AppendCost
}

/**
 * Per node: batches appended, how many were written by the first call, calls of the function, transactions opened,
 * how many were written after other nodes' commits (shifted), and the entries the log refused as stale and the
 * creates it gave another id than the one decided (each is decided or answered again: what contention costs).
 */
export interface AppendCost {
  batches: number
  firstCall: number
  shifted: number
  calls: number
  transactions: number
  events: number
  stale: number
  renumbered: number
}

export const makeLogPicture = (head: number, types: ReadonlyArray<{ readonly type: string; readonly lastId: number; readonly rowCount: number }>): LogPicture => ({
  head,
  counts: new Map(types.map((t) => [t.type, { lastId: t.lastId, rowCount: t.rowCount }])),
  countedAt: new Map(),
  base: head,
  cost: { batches: 0, firstCall: 0, shifted: 0, calls: 0, transactions: 0, events: 0, stale: 0, renumbered: 0 }
})

/**
 * Moves the picture over events the log delivered (other nodes' commits, in seq order; now and then one of this
 * node's own, read back), so that this node's next append is planned on the log as it is: the head, and each
 * type's counters past the seq they are exact at.
 */
export const seePicture = (picture: LogPicture, events: ReadonlyArray<StoredEvent>) => {
  for (const event of events) {
    if (event.seq > picture.head) picture.head = event.seq
    if (event.kind !== "created" && event.kind !== "deleted") continue
    if (event.seq <= (picture.countedAt.get(event.type) ?? picture.base)) continue
    picture.countedAt.set(event.type, event.seq)
    const c = picture.counts.get(event.type) ?? { lastId: 0, rowCount: 0 }
    picture.counts.set(event.type, event.kind === "created"
      ? { lastId: Math.max(c.lastId, Number(event.id)), rowCount: c.rowCount + 1 }
      : { lastId: c.lastId, rowCount: c.rowCount - 1 })
  }
}

/**
 * The picture after the log was seen (the function's answer) or written (a batch) at `head`: the head, and the
 * counters of `types`, exact there (the function checked them under the lock). A type's counters already moved
 * past `head` by delivered events are left as they are (a wrong counter costs one call, never a wrong write).
 */
export const pictureAt = (picture: LogPicture, head: number, types: Iterable<readonly [string, Counts]>) => {
  if (head > picture.head) picture.head = head
  for (const [type, c] of types) {
    if ((picture.countedAt.get(type) ?? picture.base) > head) continue
    // The highest id handed out never goes down: a block this node reserved meanwhile stays in the picture.
    picture.counts.set(type, { lastId: Math.max(c.lastId, picture.counts.get(type)?.lastId ?? 0), rowCount: c.rowCount })
    picture.countedAt.set(type, head)
  }
}

/** The picture after this node reserved the ids of `type` up to `last`: its creates with them are planned as handed out. */
export const reservedIn = (picture: LogPicture, type: string, last: number) => {
  const c = picture.counts.get(type)
  if (c === undefined) picture.counts.set(type, { lastId: last, rowCount: 0 })
  else if (c.lastId < last) c.lastId = last
}
