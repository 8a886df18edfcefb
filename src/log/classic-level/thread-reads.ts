/**
 * The embedded store's events read from another thread of the process (a view refold's worker:
 * projections/views/fold-thread-worker.ts), on a handle of its own onto the same LevelDB instance (classic-level's
 * multithreading; the server lends it: level-db.ts `lendReads`). Events are read by key, synchronously: the
 * reading is the thread's own work, at its own priority, where an iterator's reads would run on the process's
 * thread pool beside the server's. Each is checked as `readFrom` checks it: its checksum, its seq, and the sequence
 * (a missing seq is an error unless the operator accepted it as lost).
 */
import { ClassicLevel } from "classic-level"
import type { StoredEvent } from "../../domain/events.ts"
import type { ThreadLoan } from "../event-log.ts"
import { RecordCorrupt } from "../record.ts"
import { decodeEvent } from "./level-records.ts"
import * as K from "./log-keys.ts"

/** Opens the lent store in this thread. */
export const openThreadReads = async (loan: ThreadLoan) => {
  const db = new ClassicLevel<string, string>(loan.dir, { keyEncoding: "utf8", valueEncoding: "utf8" })
  await db.open({ createIfMissing: false, multithreading: true })
  const gaps = [...loan.gaps].sort((a, b) => a[0] - b[0])
  /** The last seq of the accepted gap that `seq` falls in, or undefined. */
  const gapEnd = (seq: number) => gaps.find(([first, last]) => first <= seq && seq <= last)?.[1]
  return {
    /** The events from `from` to `to`, in order, handed to `take` `slice` at a time. */
    read: (from: number, to: number, slice: number, take: (events: ReadonlyArray<StoredEvent>) => void) => {
      let events: Array<StoredEvent> = []
      for (let seq = from; seq <= to; seq++) {
        const key = K.eventKey(seq)
        const record = db.getSync(key)
        if (record === undefined) {
          const end = gapEnd(seq)
          if (end === undefined) throw new RecordCorrupt(`corrupt log: event ${seq} is missing`)
          seq = end
          continue
        }
        events.push(decodeEvent(key, record))
        if (events.length === slice) {
          take(events)
          events = []
        }
      }
      if (events.length > 0) take(events)
    },
    close: () => db.close()
  }
}
