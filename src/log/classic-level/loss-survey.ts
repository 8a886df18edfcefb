/**
 * What a store lost, surveyed when the operator accepts a loss (`--accept-data-loss`): the seqs missing inside the
 * log (LevelDB skips a damaged stretch of its write-ahead log and keeps what follows), the rows per type actually
 * stored (the recorded counts then disagree), and the ids whose create is gone (no event and no row left).
 * One pass over the events and one over the row keys, in native batches.
 */
import { decodeEvent } from "./level-records.ts"
import { forEachRecord } from "./read-batches.ts"
import type { Db } from "./level-db.ts"
import * as K from "./log-keys.ts"
import type { SeqRanges } from "./accepted-loss.ts"

export interface LossSurvey {
  /** Seqs missing between 1 and the head. */
  readonly gaps: SeqRanges
  /** Rows stored per type, counted. */
  readonly rowCounts: ReadonlyMap<string, number>
  /** Per type, ids up to its counter with neither an event nor a row: their create was lost (or never acknowledged). */
  readonly lostIds: ReadonlyMap<string, ReadonlyArray<string>>
}

export const surveyLoss = async (db: Db, counters: ReadonlyMap<string, number>): Promise<LossSurvey> => {
  const gaps: Array<[number, number]> = []
  const seen = new Map<string, Set<string>>()
  const note = (type: string, id: string) => {
    let ids = seen.get(type)
    if (ids === undefined) seen.set(type, (ids = new Set()))
    ids.add(id)
  }
  let expected = 1
  await forEachRecord(db.iterator({ gte: K.EVENTS_START, lt: K.EVENTS_END }), ([key, value]: [string, string]) => {
    const seq = K.seqOfEventKey(key)
    if (seq > expected) gaps.push([expected, seq - 1])
    expected = seq + 1
    try {
      const event = decodeEvent(key, value)
      note(event.type, event.id)
    } catch {
      // A damaged event is wo verify's to name; its id is not counted as lost.
    }
  })
  const rowCounts = new Map<string, number>()
  await forEachRecord(db.keys({ gte: K.ROWS_START, lt: K.ROWS_END }), (key: string) => {
    const type = K.typeOfRowKey(key)
    rowCounts.set(type, (rowCounts.get(type) ?? 0) + 1)
    note(type, String(Number(key.slice(key.lastIndexOf("!") + 1))))
  })
  const lostIds = new Map<string, ReadonlyArray<string>>()
  for (const [type, counter] of counters) {
    const ids = seen.get(type) ?? new Set<string>()
    const lost: Array<string> = []
    for (let n = 1; n <= counter; n++) if (!ids.has(String(n))) lost.push(String(n))
    if (lost.length > 0) lostIds.set(type, lost)
  }
  return { gaps, rowCounts, lostIds }
}
