/**
 * The EventLog on classic-level (LevelDB). One chained batch per append, written with `sync: true`: the
 * events, their rows, the counters and the checkpoint land together or not at all. Every value is a
 * checksummed record (record.ts), verified wherever it is loaded; a mismatch is a StoreUnavailable naming the
 * key, never a changed row served.
 */
import { Chunk, Effect, Layer, Option, Stream } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { WoConfig } from "../../support/config.ts"
import { type StoreError, DataCorrupt } from "../../domain/errors.ts"
import type { StoredEvent } from "../../domain/events.ts"
import type { Row } from "../../domain/catalog.ts"
import { ACCEPTED_LOSS_FILE, acceptedGap, appendAcceptedLoss, countSeqs, describeIds, describeRanges, readAcceptedLosses, type SeqRanges } from "./accepted-loss.ts"
import { checkAckedHead } from "./acked-check.ts"
import { readFailed } from "../record.ts"
import { ACKED_FILE, openAckedHead, readAckedRecord, type AckedHeadWriter } from "./acked-head.ts"
import { EventLog, type AppendBatch, type LogHead, type SealedEvent, type StoredKey, type StoredRow, type StoredView } from "../event-log.ts"
import { DATA_LOSS_MARKER, LevelDb, storeError, type Db, type LevelDbShape } from "./level-db.ts"
import * as K from "./log-keys.ts"
import { batchedRange, decodeEvent, decodeRow, READ_BATCH, rowPayload } from "./level-records.ts"
import { surveyLoss } from "./loss-survey.ts"
import { decodeKeyPayload, keyPayload } from "../key-record.ts"
import { RecordCorrupt, seal, unseal, unsealJson } from "../record.ts"
import { checkRowCounts } from "../row-counts.ts"
import * as X from "./index-keys.ts"
import { storeIndexes } from "./store-indexes.ts"
import { keptWriteAheadLogs } from "./wal-hold.ts"
import { backfillHistory, historyRecord, readHistory } from "./history-records.ts"

const corrupt = (e: unknown) =>
  readFailed(e)

const decodeNumber = (key: string, value: string | undefined): number | undefined => {
  if (value === undefined) return undefined
  const n = Number(unseal(key, value))
  if (!Number.isSafeInteger(n) || n < 0) throw new RecordCorrupt(`corrupt record at key ${key}: not a count`)
  return n
}

/** Numbers kept under one key prefix (id counters, row counts), by type. */
const readCounts = async (db: Db, prefix: string) => {
  const counts = new Map<string, number>()
  for await (const [key, value] of db.iterator({ gte: prefix, lt: `${prefix}~` })) {
    counts.set(key.slice(prefix.length), decodeNumber(key, value)!)
  }
  return counts
}

const isEmpty = async (db: Db) => {
  for await (const _ of db.keys({ gte: K.EVENTS_START, lt: K.EVENTS_END, limit: 1 })) return false
  for await (const _ of db.keys({ gte: K.ROWS_START, lt: K.ROWS_END, limit: 1 })) return false
  return true
}

export interface FullHead extends LogHead {
  readonly rowCounts: ReadonlyMap<string, number>
  /**
   * False for a store that has never been written (it gets its format marker with the first batch), or that is
   * still at format 2 (`beforeActors`: the server upgrades it when it opens it, history-records.ts).
   */
  readonly formatted: boolean
  /** The store is at format 2: its events have no `h!` records yet. */
  readonly beforeActors: boolean
}

/** Reads the head and checks that the tail is whole, so a damaged store is reported instead of served. */
export const readFullHead = (db: Db): Promise<FullHead> =>
  (async () => {
    const format = await db.get(K.FORMAT_KEY)
    if (format === undefined) {
      if (!(await isEmpty(db))) {
        throw new RecordCorrupt(
          "this data dir was written by an earlier writeonce, without checksums; it cannot be served safely (start on a new data dir)"
        )
      }
    }
    const stored = format === undefined ? undefined : unseal(K.FORMAT_KEY, format)
    if (stored !== undefined && stored !== K.FORMAT && stored !== K.FORMAT_BEFORE_ACTORS) {
      throw new RecordCorrupt(`this data dir has store format ${stored}; this writeonce reads format ${K.FORMAT}`)
    }
    const beforeActors = stored === K.FORMAT_BEFORE_ACTORS
    let lastSeq = 0
    for await (const [key, value] of db.iterator({ gte: K.EVENTS_START, lt: K.EVENTS_END, reverse: true, limit: 1 })) {
      lastSeq = decodeEvent(key, value).seq
    }
    const checkpoint = decodeNumber(K.CHECKPOINT_KEY, await db.get(K.CHECKPOINT_KEY)) ?? 0
    if (checkpoint > lastSeq) throw new RecordCorrupt(`corrupt store: checkpoint ${checkpoint} is past the last event ${lastSeq}`)
    return {
      lastSeq,
      checkpoint,
      counters: await readCounts(db, K.COUNTER_PREFIX),
      rowCounts: await readCounts(db, K.ROW_COUNT_PREFIX),
      formatted: format !== undefined && !beforeActors,
      beforeActors
    }
  })()

/** A sliced read fetches this many records at once (or its slice, when larger). */
const SLICED_FETCH = 64

/**
 * A key range read in batches of `READ_BATCH` (a sliced read: of `SLICED_FETCH`), each record decoded (and verified)
 * by `decode`, at most `slice` records per chunk: a batch is fetched in one native call, and decoded a slice per
 * pull, when it is pulled.
 */
const scan = <A>(
  h: LevelDbShape,
  range: { readonly gte: string; readonly lt: string },
  decode: (key: string, value: string) => A,
  slice: number = READ_BATCH
): Stream.Stream<A, StoreError> =>
  Stream.acquireRelease(
    h.read("cannot read the store", async (db) => db.iterator(batchedRange(range.gte, range.lt))),
    (it) => Effect.promise(() => it.close().catch(() => undefined))
  ).pipe(
    Stream.flatMap((it) => {
      const most = Math.max(1, Math.floor(slice))
      // A reader that serves requests meanwhile (a small slice) fetches small batches as well: a whole batch it
      // holds for tens of milliseconds outlives young-generation collections, each copying it (pauses the requests
      // wait out: bench/scenarios/view-refold.ts). A tool reading it all takes the largest batches.
      const fetchSize = most < READ_BATCH ? Math.max(most, SLICED_FETCH) : READ_BATCH
      // The next batch is read (on the thread pool) while this one is decoded and used; close waits for it.
      let ahead: Promise<Array<[string, string]>> | undefined
      const fetch = async () => {
        const entries = await (ahead ?? it.nextv(fetchSize))
        ahead = entries.length === 0 ? undefined : it.nextv(fetchSize)
        ahead?.catch(() => undefined) // a failure surfaces on the next pull, never as an unhandled rejection
        return entries
      }
      // The fetched batch and how far it is decoded.
      let entries: Array<[string, string]> = []
      let at = 0
      const decodeSlice = Effect.suspend(() => {
        const end = Math.min(at + most, entries.length)
        const out = new Array<A>(end - at)
        try {
          for (let i = at; i < end; i++) out[i - at] = decode(entries[i][0], entries[i][1])
        } catch (e) {
          return Effect.fail(Option.some(corrupt(e)))
        }
        at = end
        return Effect.succeed(Chunk.unsafeFromArray(out))
      })
      const fetched = Effect.tryPromise({ try: fetch, catch: (e) => Option.some(corrupt(e)) }).pipe(
        Effect.flatMap((batch) => {
          if (batch.length === 0) return Effect.fail(Option.none())
          entries = batch
          at = 0
          return decodeSlice
        })
      )
      return Stream.repeatEffectChunkOption(Effect.suspend(() => (at < entries.length ? decodeSlice : fetched)))
    })
  )

/**
 * The check that a read of the log from `fromSeq` meets each seq exactly one past the one before (or past a gap the
 * operator accepted as lost: accepted-loss.ts): called with each key in order, it throws at the first missing one.
 */
const inSequence = (fromSeq: number, accepted: (from: number, to: number) => boolean) => {
  let expected = Math.max(1, fromSeq)
  return (key: string): void => {
    const seq = K.seqOfEventKey(key)
    if (seq > expected && accepted(expected, seq - 1)) expected = seq
    if (seq !== expected) throw new RecordCorrupt(`corrupt log: event ${expected} is missing (the next key is ${key})`)
    expected++
  }
}

/** Events from `fromSeq` on, verified: checksums, and the sequence (`inSequence`). */
export const readEvents = (
  h: LevelDbShape,
  fromSeq: number,
  accepted: (from: number, to: number) => boolean = () => false,
  slice?: number
): Stream.Stream<StoredEvent, StoreError> =>
  // Suspended so that each run of the stream checks the sequence from its own start.
  Stream.suspend(() => {
    const check = inSequence(fromSeq, accepted)
    return scan(h, { gte: K.eventKey(Math.max(1, fromSeq)), lt: K.EVENTS_END }, (key, value) => {
      const event = decodeEvent(key, value)
      check(key)
      return event
    }, slice)
  })

/**
 * Events from `fromSeq` on as stored, their sequence verified on the keys; the records are neither unsealed nor
 * parsed (event-log.ts `readSealedFrom`).
 */
const readSealedEvents = (
  h: LevelDbShape,
  fromSeq: number,
  accepted: (from: number, to: number) => boolean,
  slice?: number
): Stream.Stream<SealedEvent, StoreError> =>
  Stream.suspend(() => {
    const check = inSequence(fromSeq, accepted)
    return scan(h, { gte: K.eventKey(Math.max(1, fromSeq)), lt: K.EVENTS_END }, (key, value): SealedEvent => {
      check(key)
      return [key, value]
    }, slice)
  })

/** The stored rows, verified: checksums, keys, and the count per type the store recorded. */
export const readStoredRows = (h: LevelDbShape): Stream.Stream<StoredRow, StoreError> =>
  Stream.unwrap(
    Effect.map(h.read("cannot read the row counts", (db) => readCounts(db, K.ROW_COUNT_PREFIX)), (recorded) => {
      const seen = new Map<string, number>()
      const checkCounts = checkRowCounts(recorded, seen)
      return scan(h, { gte: K.ROWS_START, lt: K.ROWS_END }, (key, value) => {
        const row = decodeRow(key, value)
        seen.set(row.type, (seen.get(row.type) ?? 0) + 1)
        return row
      }).pipe(Stream.concat(Stream.drain(Stream.fromEffect(checkCounts))))
    })
  )

/** The stored view records, verified (checksum and JSON); what they mean is the views projection's business. */
export const readStoredViews = (h: LevelDbShape): Effect.Effect<ReadonlyArray<StoredView>, StoreError> =>
  Effect.map(Stream.runCollect(scan(h, { gte: K.VIEWS_START, lt: K.VIEWS_END }, (key, value) =>
    ({ name: K.nameOfViewKey(key), record: unsealJson<unknown>(key, value) }))), (chunk) => Chunk.toReadonlyArray(chunk))

/** How the log is opened: by a check tool (read-only, the default), or by the server that writes it. */
export interface LogMode {
  readonly writer?: {
    /** Serve what is left after a loss, recorded in WO-ACCEPTED-LOSS (`--accept-data-loss`). */
    readonly acceptDataLoss: boolean
    /** Keep the acknowledged-head record (acked-head.ts); off only to measure its cost (`WO_ACKED_RECORD=off`). */
    readonly ackedRecord: boolean
  }
}

const maxCounters = (...maps: ReadonlyArray<ReadonlyMap<string, number>>) => {
  const out = new Map<string, number>()
  for (const m of maps) for (const [type, n] of m) out.set(type, Math.max(out.get(type) ?? 0, n))
  return out
}

const REFUSAL_ADVICE = "Restore the data dir from a backup (`wo restore <backup> <new-data-dir>`, a backup taken by `wo backup`), or start with --accept-data-loss to serve what is left " +
  "(the ids of lost rows are never handed out again)."

/** Refuses a store that lost acknowledged writes: the evidence is kept and the marker makes every later open refuse. */
const refuseLoss = (dir: string, reason: string) => {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-")
  const kept: Array<string> = []
  const keep = (name: string) => {
    if (!fs.existsSync(path.join(dir, name))) return
    const copy = path.join(dir, `wo-evidence-${stamp}-${name}`)
    fs.copyFileSync(path.join(dir, name), copy)
    kept.push(copy)
  }
  keep(ACKED_FILE)
  keep("LOG")
  const wal = keptWriteAheadLogs(dir, `wo-evidence-${stamp}-wal`)
  if (wal !== undefined) kept.push(`${wal} (the write-ahead logs as they were before this open)`)
  const report = `${reason}\n(evidence kept: ${kept.length > 0 ? kept.join(", ") : "none"})`
  fs.writeFileSync(path.join(dir, DATA_LOSS_MARKER), `${report}\n`)
  return new DataCorrupt({ reason: `acknowledged writes are lost in ${dir}:\n${report}\n${REFUSAL_ADVICE}` })
}

/** The EventLog over the shared LevelDb handle. */
export const makeClassicLevelLog = (h: LevelDbShape, mode: LogMode = {}) =>
  Effect.gen(function* () {
    let syncWrites = 0
    let eventsWritten = 0
    // Row counts per type as stored (each batch writes the ones it moves), and whether the format is written.
    let rowCounts = new Map<string, number>()
    let formatted = false
    // Ids the acknowledged-head record saw handed out: never handed out again, whatever the store lost.
    let floor: ReadonlyMap<string, number> = new Map()
    let record: AckedHeadWriter | undefined
    let recordKeyWritten = true
    const accepted = acceptedGap(readAcceptedLosses(h.dir))

    // Reopens first if a write failed since (so the head is read from a fresh write-ahead log), then reloads
    // the row counts and format flag the next append builds on.
    const head = Effect.flatMap(h.ensureWritable, () =>
      Effect.map(h.read("cannot read the log head", readFullHead), (full) => {
        rowCounts = new Map(full.rowCounts)
        formatted = full.formatted
        // What the head holds is durable (a failed write reopened the store first): acknowledged from here on.
        // Not awaited: the next batch writes it again (and fails, unacknowledged, if it still cannot).
        record?.acknowledged(full.lastSeq, new Map()).catch(() => undefined)
        return { lastSeq: full.lastSeq, checkpoint: full.checkpoint, counters: maxCounters(full.counters, floor) } satisfies LogHead
      }))

    const opened = yield* h.read("cannot read the log head", async (db) => ({
      full: await readFullHead(db),
      hadRecord: (await db.get(K.ACKED_RECORD_KEY)) !== undefined
    }))
    const verdict = checkAckedHead({ lastSeq: opened.full.lastSeq, hadRecord: opened.hadRecord }, readAckedRecord(h.dir))
    const writer = mode.writer
    if (writer === undefined) {
      // A check tool: it reports, and writes nothing.
      if (verdict._tag === "Lost" || verdict._tag === "Unknown") return yield* new DataCorrupt({ reason: `${verdict.reason}. Run \`wo verify\`` })
    } else {
      if ((verdict._tag === "Lost" || verdict._tag === "Unknown") && !writer.acceptDataLoss) return yield* Effect.sync(() => refuseLoss(h.dir, verdict.reason)).pipe(Effect.flatMap(Effect.fail))
      floor = verdict._tag === "Whole" || verdict._tag === "Lost" ? verdict.counters : new Map()
      const counters = maxCounters(opened.full.counters, floor)
      let recreate = verdict._tag !== "Whole"
      if (writer.acceptDataLoss) {
        const repaired = yield* acceptLoss(h, opened.full, counters, verdict._tag === "Lost" ? verdict.lostSeqs : [], verdict._tag === "Unknown" ? verdict.reason : undefined, accepted)
        recreate ||= repaired
      }
      recordKeyWritten = opened.hadRecord
      if (writer.ackedRecord) {
        const at: number = opened.full.lastSeq
        const writing: AckedHeadWriter = yield* Effect.try({
          try: () => openAckedHead(h.dir, at, counters, recreate),
          catch: storeError(`cannot write the acknowledged-head record ${ACKED_FILE}`)
        })
        record = writing
        // Graceful shutdown: the last acknowledged seq is recorded before the store closes.
        yield* Effect.addFinalizer(() => Effect.promise(() => writing.flush().catch(() => undefined).then(() => writing.close())))
      }
    }

    if (writer !== undefined && opened.full.beforeActors) {
      // A format-2 store: every event gets its history record, then the store is format 3 (before any write).
      const indexed = yield* h.write("cannot upgrade the store to format 3", backfillHistory)
      yield* Effect.logInfo(`store: upgraded to format ${K.FORMAT} (the history of ${indexed} events indexed)`)
    }
    yield* head
    // The secondary indexes: each batch writes the records of the rows it changes (store-indexes.ts).
    const indexes = yield* storeIndexes(h)
    /** The row before an entry, when its writer did not say: as stored (the batch's earlier entries first). */
    const storedBefore = (db: Db, written: Map<string, Row | null>, key: string): Row | null => {
      if (written.has(key)) return written.get(key)!
      const raw = db.getSync(key)
      return raw === undefined ? null : decodeRow(key, raw).row
    }

    const write = (batch: AppendBatch, counts: Map<string, number>) =>
      h.write("write failed", (db) => {
        const chained = db.batch()
        let last = 0
        let written: Map<string, Row | null> | undefined
        for (const { event, row, rowJson, before } of batch.entries) {
          const eventKey = K.eventKey(event.seq)
          chained.put(eventKey, seal(eventKey, JSON.stringify(event)))
          const [historyKey, historyValue] = historyRecord(event)
          chained.put(historyKey, historyValue)
          const rowKey = K.rowKey(event.type, event.id)
          if (row === null) chained.del(rowKey)
          else chained.put(rowKey, seal(rowKey, rowPayload(event.schema ?? 1, rowJson ?? JSON.stringify(row))))
          if (indexes.has(event.type)) {
            written ??= new Map()
            const was = before !== undefined ? before : storedBefore(db, written, rowKey)
            written.set(rowKey, row)
            indexes.write(chained, event.type, was, row)
          }
          if (event.kind === "created") counts.set(event.type, (counts.get(event.type) ?? rowCounts.get(event.type) ?? 0) + 1)
          else if (event.kind === "deleted") counts.set(event.type, (counts.get(event.type) ?? rowCounts.get(event.type) ?? 0) - 1)
          last = event.seq
        }
        for (const [type, n] of batch.counters) chained.put(K.counterKey(type), seal(K.counterKey(type), String(n)))
        for (const { name, json } of batch.views ?? []) chained.put(K.viewKey(name), seal(K.viewKey(name), json))
        for (const { name, definition, key, json } of batch.viewEntries ?? []) {
          const entryKey = K.viewEntryKey(name, definition, key)
          if (json === undefined) chained.del(entryKey)
          else chained.put(entryKey, seal(entryKey, json))
        }
        for (const [type, n] of counts) chained.put(K.rowCountKey(type), seal(K.rowCountKey(type), String(n)))
        for (const { key, fingerprint, at, first, count } of batch.keys ?? []) {
          const keyKey = K.idempotencyKey(key)
          chained.put(keyKey, seal(keyKey, keyPayload(fingerprint, at, batch.entries.slice(first, first + count))))
          const timeKey = K.keyTimeKey(at, key)
          chained.put(timeKey, seal(timeKey, key))
        }
        chained.put(K.CHECKPOINT_KEY, seal(K.CHECKPOINT_KEY, String(last)))
        if (!formatted) chained.put(K.FORMAT_KEY, seal(K.FORMAT_KEY, K.FORMAT))
        if (!recordKeyWritten && record !== undefined) chained.put(K.ACKED_RECORD_KEY, seal(K.ACKED_RECORD_KEY, "1"))
        return chained.write({ sync: true })
      })

    // A generator function made once, not one per append (group-commit.ts's `decideWriteAnswer` says why).
    const append = Effect.fnUntraced(function* (batch: AppendBatch) {
      const counts = new Map<string, number>()
      yield* write(batch, counts)
      if (record !== undefined) {
        // Durable in LevelDB: recorded before any caller of it is answered (a pwrite, no fsync: acked-head.ts).
        const end = batch.entries[batch.entries.length - 1]?.event.seq ?? 0
        const writing = record
        // No ack unless the record is written too (the batch landed: the writer re-reads the head and applies it).
        yield* Effect.tryPromise({
          try: () => writing.acknowledged(end, batch.counters),
          catch: storeError("write failed: cannot write the acknowledged-head record")
        })
      }
      for (const [type, n] of counts) rowCounts.set(type, n)
      formatted = true
      if (record !== undefined) recordKeyWritten = true
      syncWrites++
      eventsWritten += batch.entries.length
    })

    return EventLog.of({
      append,
      ...(record === undefined ? {} : { settle: record.settle }),
      head,
      readFrom: (fromSeq, options) => readEvents(h, fromSeq, accepted, options?.slice),
      readSealedFrom: (fromSeq, options) => readSealedEvents(h, fromSeq, accepted, options?.slice),
      ...(h.lendReads === undefined ? {} : {
        lendToThread: (end: () => Promise<void>) =>
          Effect.map(h.lendReads!(end), (dir) => ({ dir, gaps: readAcceptedLosses(dir).flatMap((loss) => loss.lostSeqs) }))
      }),
      storedRows: readStoredRows(h),
      storedViews: readStoredViews(h),
      storedViewEntries: (name, definition) =>
        scan(h, { gte: K.viewEntriesPrefix(name, definition), lt: K.viewEntriesEnd(name, definition) }, (key, value) =>
          ({ key: K.entryKeyOfViewEntryKey(key, K.viewEntriesPrefix(name, definition)), text: unseal(key, value) })),
      storeViews: (views) =>
        h.write("cannot store the views folded at startup", (db) => {
          const chained = db.batch()
          for (const { name, json } of views) chained.put(K.viewKey(name), seal(K.viewKey(name), json))
          return chained.write({ sync: true })
        }),
      history: (type, id, afterVersion, limit) => h.read("cannot read the entity's events", (db) => readHistory(db, type, id, afterVersion, limit)),
      storedKey: (key) =>
        h.read("cannot read the idempotency key", async (db) => {
          const where = K.idempotencyKey(key)
          const value = await db.get(where)
          return value === undefined ? undefined : decodeKeyPayload(key, unseal(where, value), where)
        }),
      storedKeys: (keys) =>
        h.read("cannot read the idempotency keys", async (db) => {
          const where = keys.map(K.idempotencyKey)
          const values = await db.getMany(where)
          const found = new Map<string, StoredKey>()
          values.forEach((value, i) => {
            if (value !== undefined) found.set(keys[i], decodeKeyPayload(keys[i], unseal(where[i], value), where[i]))
          })
          return found
        }),
      pruneKeys: (before, limit) =>
        h.write("cannot prune idempotency keys", async (db) => {
          const chained = db.batch()
          let n = 0
          for await (const timeKey of db.keys({ gte: K.KEY_TIMES_START, lt: K.keyTimeKey(before, ""), limit })) {
            chained.del(timeKey)
            chained.del(K.idempotencyKey(K.keyOfTimeKey(timeKey)))
            n++
          }
          // Not synced: a key that comes back after a crash is pruned again on the next round.
          if (n > 0) await chained.write()
          else await chained.close()
          return n
        }),
      stats: Effect.sync(() => ({ syncWrites, eventsWritten }))
    })
  })

/**
 * `--accept-data-loss`: surveys what the store lost (seqs past its head that were acknowledged, gaps inside the
 * log, rows per type against the recorded counts), and if anything is gone records it (WO-ACCEPTED-LOSS and a log
 * line), recounts the rows, and raises the id counters past every id handed out. Answers whether it repaired.
 */
const acceptLoss = (
  h: LevelDbShape,
  full: FullHead,
  counters: ReadonlyMap<string, number>,
  tailLost: SeqRanges,
  unknown: string | undefined,
  accepted: (from: number, to: number) => boolean
) =>
  Effect.gen(function* () {
    const survey = yield* h.read("cannot survey the store", (db) => surveyLoss(db, counters))
    const gaps = survey.gaps.filter(([a, b]) => !accepted(a, b))
    const types = new Set([...survey.rowCounts.keys(), ...full.rowCounts.keys()])
    const recounted = [...types].filter((t) => (survey.rowCounts.get(t) ?? 0) !== (full.rowCounts.get(t) ?? 0))
    const countersBehind = [...counters].some(([t, n]) => (full.counters.get(t) ?? 0) < n)
    if (gaps.length === 0 && tailLost.length === 0 && recounted.length === 0 && unknown === undefined && !countersBehind) return false
    const lostSeqs = [...gaps, ...tailLost]
    const lostIds = Object.fromEntries(survey.lostIds)
    const reason = [
      lostSeqs.length > 0 ? `${countSeqs(lostSeqs)} events lost (seqs ${describeRanges(lostSeqs)})` : undefined,
      ...recounted.map((t) => `${survey.rowCounts.get(t) ?? 0} rows of ${t} stored, ${full.rowCounts.get(t) ?? 0} recorded: recounted`),
      unknown,
      countersBehind ? "id counters raised to the acknowledged-head record's" : undefined
    ].filter((x) => x !== undefined).join("; ")
    yield* h.write("cannot record the accepted loss", async (db) => {
      // The secondary indexes may name lost rows or miss kept ones: they are dropped, and built again (index-keys.ts).
      await db.clear({ gte: X.INDEXES_START, lt: X.INDEXES_END })
      await db.clear({ gte: X.INDEX_META_PREFIX, lt: `${X.INDEX_META_PREFIX}~` })
      const chained = db.batch()
      for (const t of types) chained.put(K.rowCountKey(t), seal(K.rowCountKey(t), String(survey.rowCounts.get(t) ?? 0)))
      for (const [t, n] of counters) chained.put(K.counterKey(t), seal(K.counterKey(t), String(n)))
      return chained.write({ sync: true })
    })
    yield* Effect.sync(() => appendAcceptedLoss(h.dir, { at: new Date().toISOString(), lostSeqs, lostIds, reason }))
    const ids = [...survey.lostIds].map(([t, list]) => `${t} ${describeIds(list)}`).join("; ")
    yield* Effect.logWarning(
      `--accept-data-loss: serving what is left of ${h.dir}: ${reason}` +
        (ids.length > 0 ? `; lost ids (never handed out again): ${ids}` : "") +
        ` (recorded in ${path.join(h.dir, ACCEPTED_LOSS_FILE)})`
    )
    return true
  })

/** The classic-level EventLog the server writes, over the shared LevelDb (settings from WoConfig when present). */
export const ClassicLevelLog = Layer.scoped(
  EventLog,
  Effect.gen(function* () {
    const settings = Option.getOrUndefined(yield* Effect.serviceOption(WoConfig))
    return yield* makeClassicLevelLog(yield* LevelDb, {
      writer: { acceptDataLoss: settings?.acceptDataLoss ?? false, ackedRecord: settings?.ackedRecord ?? true }
    })
  })
)
