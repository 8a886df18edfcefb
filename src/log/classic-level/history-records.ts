/**
 * The per-entity history of the classic-level store: beside each event `e!<seq>`, a record `h!<type>!<id>!<version>`
 * holding its seq (log-keys.ts), written in the event's batch. A row's history is then one key range walked in
 * version order, and its events read by seq: a page costs what it holds, never a scan of the log.
 *
 * A store of format 2 (before events recorded their actor) has no `h!` records: the server that opens it writes
 * them for every event (`backfillHistory`), then the format marker 3. A crash in between leaves format 2, and the
 * next open writes them again (the same keys, the same values).
 */
import type { StoredEvent } from "../../domain/events.ts"
import type { Db } from "./level-db.ts"
import * as K from "./log-keys.ts"
import { batchedRange, decodeEvent, READ_BATCH } from "./level-records.ts"
import { RecordCorrupt, seal, unseal } from "../record.ts"

/** The sealed `h!` record of `event`. */
export const historyRecord = (event: StoredEvent): readonly [string, string] => {
  const key = K.historyKey(event.type, event.id, event.version)
  return [key, seal(key, String(event.seq))]
}

/** The seq an `h!` record holds; RecordCorrupt when its checksum or its number is bad. */
export const decodeHistorySeq = (key: string, value: string): number => {
  const seq = Number(unseal(key, value))
  if (!Number.isSafeInteger(seq) || seq < 1) throw new RecordCorrupt(`corrupt record at key ${key}: not an event's seq`)
  return seq
}

/** Events per batch of the backfill's writes (unsynced but the last: a crash leaves format 2, and it runs again). */
export const BACKFILL_BATCH = 10 * READ_BATCH

/**
 * Writes the `h!` record of every event of a format-2 store, then the format marker 3 (synced). Answers how many
 * events it indexed. Every event is verified on the way (a damaged one refuses the open, naming its key).
 */
export const backfillHistory = async (db: Db): Promise<number> => {
  const it = db.iterator(batchedRange(K.EVENTS_START, K.EVENTS_END))
  let count = 0
  try {
    let batch = db.batch()
    let pending = 0
    for (let entries = await it.nextv(READ_BATCH); entries.length > 0; entries = await it.nextv(READ_BATCH)) {
      for (const [key, value] of entries) {
        const [hKey, hValue] = historyRecord(decodeEvent(key, value))
        batch.put(hKey, hValue)
        pending++
      }
      count += entries.length
      if (pending >= BACKFILL_BATCH) {
        await batch.write()
        batch = db.batch()
        pending = 0
      }
    }
    batch.put(K.FORMAT_KEY, seal(K.FORMAT_KEY, K.FORMAT))
    await batch.write({ sync: true })
  } finally {
    await it.close()
  }
  return count
}

/**
 * The entity's events with `version > afterVersion`, in version order, at most `limit`: its `h!` range, then its
 * events by seq, each checked to be the one its record names.
 */
export const readHistory = async (db: Db, type: string, id: string, afterVersion: number, limit: number): Promise<ReadonlyArray<StoredEvent>> => {
  const prefix = K.historyPrefix(type, id)
  const found: Array<[string, number]> = []
  for await (const [key, value] of db.iterator({ gt: K.historyKey(type, id, afterVersion), lt: `${prefix}~`, limit })) {
    found.push([key, decodeHistorySeq(key, value)])
  }
  if (found.length === 0) return []
  const keys = found.map(([, seq]) => K.eventKey(seq))
  const values = await db.getMany(keys)
  return found.map(([hKey], i) => {
    const value = values[i]
    if (value === undefined) throw new RecordCorrupt(`corrupt store: ${hKey} names the event ${keys[i]}, which is not stored`)
    const event = decodeEvent(keys[i], value)
    if (K.historyKey(event.type, event.id, event.version) !== hKey) throw new RecordCorrupt(`corrupt store: ${hKey} names the event ${keys[i]}, which is another entity's`)
    return event
  })
}

/**
 * `wo verify`'s check of the `h!` records: each names an event of its entity and version, and (`complete`: a
 * format-3 store) there are as many as events, so every event has its own. `problem` is called per fault found.
 */
export const checkHistoryRecords = async (db: Db, events: number, complete: boolean, problem: (message: string) => void): Promise<void> => {
  const it = db.iterator(batchedRange(K.HISTORY_START, K.HISTORY_END))
  let records = 0
  try {
    for (let entries = await it.nextv(READ_BATCH); entries.length > 0; entries = await it.nextv(READ_BATCH)) {
      records += entries.length
      const named: Array<[string, number]> = []
      for (const [key, value] of entries) {
        try {
          named.push([key, decodeHistorySeq(key, value)])
        } catch (e) {
          problem(e instanceof Error ? e.message : String(e))
        }
      }
      const values = await db.getMany(named.map(([, seq]) => K.eventKey(seq)))
      named.forEach(([key, seq], i) => {
        const value = values[i]
        if (value === undefined) return problem(`history record ${key} names event ${seq}, which is not stored`)
        try {
          const event = decodeEvent(K.eventKey(seq), value)
          if (K.historyKey(event.type, event.id, event.version) !== key) problem(`history record ${key} names event ${seq}, which is ${event.type} ${event.id} version ${event.version}`)
        } catch {
          // The event's own damage is reported by the walk of the events.
        }
      })
    }
  } finally {
    await it.close()
  }
  if (complete && records !== events) problem(`${records} history records for ${events} events: every event has exactly one`)
}
