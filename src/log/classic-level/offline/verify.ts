/**
 * `wo verify`: checks a stopped store end to end, without the app, and names every problem it finds:
 * - the store format marker, which the first write puts there (a store that has had no write has none, and is whole);
 * - every event and row record against its checksum;
 * - sequence continuity from 1 to the head, each event under its own key;
 * - version continuity per entity (1 for the create, then +1; nothing after a delete);
 * - each stored row at its entity's last version, and a row for every live entity;
 * - id counters at or above the highest id used, row counts as recorded, and the checkpoint at the head;
 * - each view record's checksum and shape;
 * - the secondary index records against the rows (index-check.ts);
 * - the head at or past the acknowledged-head record (acked-head.ts): LevelDB does not report a write-ahead log
 *   that lost acknowledged writes;
 * - with the app's reference fields (`wo verify --app`), every live row's references to live rows
 *   (reference-audit.ts).
 * A loss the operator accepted (`--accept-data-loss`, accepted-loss.ts) is reported, not counted as a problem:
 * the gaps it covers and the version jumps across them.
 * It reads in native batches (`nextv`), so a large log verifies at hundreds of thousands of events a second.
 */
import { Effect, Either } from "effect"
import { streamKey } from "../../../domain/events.ts"
import type { StoreError } from "../../../domain/errors.ts"
import { batchedRange, decodeEvent, decodeRow } from "../level-records.ts"
import { readBatches } from "../read-batches.ts"
import type { Db, LevelDbShape } from "../level-db.ts"
import * as K from "../log-keys.ts"
import { unseal, unsealJson } from "../../record.ts"
import { decodeKeyPayload } from "../../key-record.ts"
import { parseViewRecord } from "../../view-record.ts"
import { acceptedGap, describeIds, lossBetween, readAcceptedLosses } from "../accepted-loss.ts"
import { checkAckedHead } from "../acked-check.ts"
import { readAckedRecord } from "../acked-head.ts"
import { checkIndexRecords } from "./index-check.ts"
import { parseViewEntry } from "../../view-entry-record.ts"
import { checkHistoryRecords } from "../history-records.ts"
import { describeProblem as describe, makeProblems, makeStoreRules, type VerifyReport } from "../../store-rules.ts"
import { makeReferenceAudit, type ReferenceFields } from "../../reference-audit.ts"

/** Every key and value of a range, a batch at a time, the next batch read while this one is checked. */
const forEachRecord = (db: Db, gte: string, lt: string, f: (key: string, value: string) => void) =>
  readBatches(db.iterator(batchedRange(gte, lt)), (entries: Array<[string, string]>) => {
    for (let i = 0; i < entries.length; i++) f(entries[i][0], entries[i][1])
    return undefined
  }, { readAhead: true })

/** The ranges only a write (an appended batch) puts records in; the format marker is written with the first. */
const WRITTEN_RANGES: ReadonlyArray<{ readonly gte: string; readonly lt: string }> = [
  { gte: K.EVENTS_START, lt: K.EVENTS_END },
  { gte: K.ROWS_START, lt: K.ROWS_END },
  { gte: K.CHECKPOINT_KEY, lt: `${K.CHECKPOINT_KEY}\0` },
  { gte: K.COUNTER_PREFIX, lt: `${K.COUNTER_PREFIX}~` },
  { gte: K.ROW_COUNT_PREFIX, lt: `${K.ROW_COUNT_PREFIX}~` },
  { gte: K.ACKED_RECORD_KEY, lt: `${K.ACKED_RECORD_KEY}\0` },
  { gte: K.VIEWS_START, lt: K.VIEWS_END },
  { gte: K.KEYS_START, lt: K.KEYS_END },
  { gte: K.VIEW_ENTRIES_START, lt: K.VIEW_ENTRIES_END },
  { gte: K.KEY_TIMES_START, lt: "t~" },
  { gte: K.HISTORY_START, lt: K.HISTORY_END }
]

/** The key of a record only a write puts in the store, or undefined for a store that has had no write. */
const firstWrittenRecord = async (db: Db): Promise<string | undefined> => {
  for (const range of WRITTEN_RANGES) {
    for await (const key of db.keys({ ...range, limit: 1 })) return key
  }
  return undefined
}

export const verifyStore = (h: LevelDbShape, references?: ReferenceFields): Effect.Effect<VerifyReport, StoreError> =>
  h.read("cannot verify the store", async (db) => {
    const started = Date.now()
    const found = makeProblems()
    const problem = found.add

    const format = await db.get(K.FORMAT_KEY)
    // Format 2 (before actors): read as it is; the server that next opens it upgrades it.
    let historyComplete = false
    if (format === undefined) {
      // The marker comes with the first write: a store that has had none holds no record a write puts there.
      const written = await firstWrittenRecord(db)
      if (written !== undefined) problem(`no store format marker (${K.FORMAT_KEY}), but a write's record (${written}): written by an earlier writeonce, or damaged`)
    } else {
      try {
        const stored = unseal(K.FORMAT_KEY, format)
        if (stored !== K.FORMAT && stored !== K.FORMAT_BEFORE_ACTORS) problem(`store format ${stored}, expected ${K.FORMAT}`)
        historyComplete = stored === K.FORMAT
      } catch (e) {
        problem(describe(e))
      }
    }

    const losses = readAcceptedLosses(h.dir)
    const rules = makeStoreRules(problem, { gapAccepted: acceptedGap(losses), lostBetween: lossBetween(losses) })
    const accepted = losses.map((l) => {
      const ids = Object.entries(l.lostIds).filter(([, list]) => list.length > 0).map(([t, list]) => `${t} ${describeIds(list)}`)
      return `accepted data loss (${l.at}): ${l.reason}${ids.length > 0 ? `; lost ids: ${ids.join("; ")}` : ""}`
    })

    // Events: checksums, seq continuity, per-entity version continuity, highest id per type.
    let events = 0
    await forEachRecord(db, K.EVENTS_START, K.EVENTS_END, (key, value) => {
      events++
      const seq = K.seqOfEventKey(key)
      if (!Number.isSafeInteger(seq)) return problem(`key ${JSON.stringify(key)} in the event range is not an event key`)
      rules.seq(seq, key)
      let event
      try {
        event = decodeEvent(key, value)
      } catch (e) {
        return problem(describe(e))
      }
      rules.event(seq, event)
    })

    // History records: each names its entity's event at its version, one per event.
    await checkHistoryRecords(db, events, historyComplete, problem)

    // Rows: checksums, each at its entity's last version, counted per type; their references, with the app's fields.
    const audit = references === undefined ? undefined : makeReferenceAudit(references, rules.versionOf, problem)
    let rows = 0
    const rowsPerType = new Map<string, number>()
    const rowed = new Set<string>()
    await forEachRecord(db, K.ROWS_START, K.ROWS_END, (key, value) => {
      rows++
      let stored
      try {
        stored = decodeRow(key, value)
      } catch (e) {
        return problem(describe(e))
      }
      const entity = streamKey(stored.type, stored.row.id)
      rowed.add(entity)
      rowsPerType.set(stored.type, (rowsPerType.get(stored.type) ?? 0) + 1)
      rules.row(entity, stored.row.version)
      audit?.row(stored.type, stored.row)
    })

    // Metadata: checkpoint, counters, row counts.
    const read = async (key: string) => {
      const value = await db.get(key)
      if (value === undefined) return undefined
      try {
        return Number(unseal(key, value))
      } catch (e) {
        problem(describe(e))
        return Number.NaN
      }
    }
    const checkpoint = (await read(K.CHECKPOINT_KEY)) ?? 0
    const lastSeq = rules.lastSeq
    if (checkpoint !== lastSeq) problem(`the checkpoint is ${checkpoint}, the last event ${lastSeq}`)
    if (checkpoint === lastSeq) rules.missingRows(rowed)
    for (const [type, id] of rules.maxId) rules.idCounter(type, await read(K.counterKey(type)), id)
    const recorded = new Map<string, number>()
    for await (const [key, value] of db.iterator({ gte: K.ROW_COUNT_PREFIX, lt: `${K.ROW_COUNT_PREFIX}~` })) {
      try {
        recorded.set(key.slice(K.ROW_COUNT_PREFIX.length), Number(unseal(key, value)))
      } catch (e) {
        problem(describe(e))
      }
    }
    rules.rowCounts(recorded, rowsPerType)
    // Views: each record's checksum and shape, and a last change no later than the checkpoint. Their values are
    // a fold of the app's code: `wo replay --app` compares them with the log.
    await forEachRecord(db, K.VIEWS_START, K.VIEWS_END, (key, value) => {
      let record
      try {
        record = parseViewRecord(unsealJson<unknown>(key, value))
      } catch (e) {
        return problem(describe(e))
      }
      if (Either.isLeft(record)) return problem(`corrupt record at key ${key}: not a view record (${record.left})`)
      if (record.right.seq > checkpoint) problem(`view ${K.nameOfViewKey(key)} last changed at ${record.right.seq}, after the checkpoint ${checkpoint}`)
    })
    // Keyed views' entries: each record's checksum and shape, and a last change no later than the checkpoint. Their
    // values are a fold of the app's code: `wo verify --app` and `wo replay --app` compare them with the log.
    await forEachRecord(db, K.VIEW_ENTRIES_START, K.VIEW_ENTRIES_END, (key, value) => {
      let entry
      try {
        entry = parseViewEntry(unseal(key, value))
      } catch (e) {
        return problem(describe(e))
      }
      if (entry === undefined) return problem(`corrupt record at key ${key}: not a keyed view's entry`)
      if (entry.seq > checkpoint) problem(`view entry ${key.slice(2)} last changed at ${entry.seq}, after the checkpoint ${checkpoint}`)
    })
    // Idempotency keys: each record's checksum and shape, and its entries within the log.
    await forEachRecord(db, K.KEYS_START, K.KEYS_END, (key, value) => {
      try {
        rules.keyAnswer(key.slice(2), decodeKeyPayload(key.slice(2), unseal(key, value), key).entries)
      } catch (e) {
        problem(describe(e))
      }
    })
    await checkIndexRecords(db, problem)
    // The acknowledged head: every seq the writer acknowledged is still in the store.
    const verdict = checkAckedHead({ lastSeq, hadRecord: (await db.get(K.ACKED_RECORD_KEY)) !== undefined }, readAckedRecord(h.dir))
    if (verdict._tag === "Lost" || verdict._tag === "Unknown") problem(verdict.reason)
    return found.report(events, rows, started, accepted)
  })
