/**
 * The EventLog on classic-level (LevelDB). One chained batch per append, written with `sync: true`: the
 * events, their rows, the counters and the checkpoint land together or not at all. Every value is a
 * checksummed record (record.ts), verified wherever it is loaded; a mismatch is a StoreUnavailable naming the
 * key, never a changed row served.
 */
import { Chunk, Effect, Layer, Option, Stream } from "effect"
import type { Row } from "../domain/catalog.ts"
import { StoreUnavailable } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import { EventLog, type AppendBatch, type LogHead, type StoredRow, type StoredView } from "./event-log.ts"
import { LevelDb, type Db, type LevelDbShape } from "./level-db.ts"
import * as K from "./log-keys.ts"
import { RecordCorrupt, seal, unseal, unsealJson } from "./record.ts"
import { checkRowCounts } from "./row-counts.ts"

/** Records per native iterator call: one `nextv` instead of one pull per record. */
export const READ_BATCH = 1000

const corrupt = (e: unknown) =>
  new StoreUnavailable({ reason: e instanceof RecordCorrupt ? e.message : `cannot read the store: ${e instanceof Error ? e.message : String(e)}` })

/** The stored row record: the row as served, with the schema version of its type it was written with. */
interface RowRecord {
  readonly schema?: number
  readonly row: Row
}

/** A row's stored payload (sealed under its key); tools that write a data dir directly use it too. */
export const rowPayload = (schema: number, rowJson: string) => `{"schema":${schema},"row":${rowJson}}`

export const decodeEvent = (key: string, value: string): StoredEvent => {
  const event = unsealJson<StoredEvent>(key, value)
  if (event === null || typeof event !== "object" || event.seq !== K.seqOfEventKey(key)) {
    throw new RecordCorrupt(`corrupt log: key ${key} holds event seq ${event?.seq}`)
  }
  return event
}

export const decodeRow = (key: string, value: string): StoredRow => {
  const record = unsealJson<RowRecord>(key, value)
  const type = K.typeOfRowKey(key)
  if (record?.row === undefined || K.rowKey(type, String(record.row.id)) !== key) {
    throw new RecordCorrupt(`corrupt row: key ${key} does not hold the row it names`)
  }
  return { type, row: record.row, schema: record.schema }
}

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
  /** False for a store that has never been written (it gets its format marker with the first batch). */
  readonly formatted: boolean
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
    } else if (unseal(K.FORMAT_KEY, format) !== K.FORMAT) {
      throw new RecordCorrupt(`this data dir has store format ${unseal(K.FORMAT_KEY, format)}; this writeonce reads format ${K.FORMAT}`)
    }
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
      formatted: format !== undefined
    }
  })()

/** A key range read in batches of `READ_BATCH`, each record decoded (and verified) by `decode`. */
const scan = <A>(
  h: LevelDbShape,
  range: { readonly gte: string; readonly lt: string },
  decode: (key: string, value: string) => A
): Stream.Stream<A, StoreUnavailable> =>
  Stream.acquireRelease(
    h.read("cannot read the store", async (db) => db.iterator(range)),
    (it) => Effect.promise(() => it.close().catch(() => undefined))
  ).pipe(
    Stream.flatMap((it) =>
      Stream.repeatEffectChunkOption(
        Effect.tryPromise({ try: () => it.nextv(READ_BATCH), catch: (e) => Option.some(corrupt(e)) }).pipe(
          Effect.flatMap((entries) => {
            if (entries.length === 0) return Effect.fail(Option.none())
            try {
              return Effect.succeed(Chunk.unsafeFromArray(entries.map(([key, value]) => decode(key, value))))
            } catch (e) {
              return Effect.fail(Option.some(corrupt(e)))
            }
          })
        )
      ))
  )

/** Events from `fromSeq` on, verified: checksums, and each seq exactly one past the one before. */
export const readEvents = (h: LevelDbShape, fromSeq: number): Stream.Stream<StoredEvent, StoreUnavailable> =>
  // Suspended so that each run of the stream checks the sequence from its own start.
  Stream.suspend(() => {
    let expected = Math.max(1, fromSeq)
    return scan(h, { gte: K.eventKey(expected), lt: K.EVENTS_END }, (key, value) => {
      const event = decodeEvent(key, value)
      if (event.seq !== expected) throw new RecordCorrupt(`corrupt log: event ${expected} is missing (the next key is ${key})`)
      expected++
      return event
    })
  })

/** The stored rows, verified: checksums, keys, and the count per type the store recorded. */
export const readStoredRows = (h: LevelDbShape): Stream.Stream<StoredRow, StoreUnavailable> =>
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
export const readStoredViews = (h: LevelDbShape): Effect.Effect<ReadonlyArray<StoredView>, StoreUnavailable> =>
  Effect.map(Stream.runCollect(scan(h, { gte: K.VIEWS_START, lt: K.VIEWS_END }, (key, value) =>
    ({ name: K.nameOfViewKey(key), record: unsealJson<unknown>(key, value) }))), (chunk) => Chunk.toReadonlyArray(chunk))

/** The EventLog over the shared LevelDb handle. */
export const makeClassicLevelLog = (h: LevelDbShape) =>
  Effect.gen(function* () {
    let syncWrites = 0
    let eventsWritten = 0
    // Row counts per type as stored (each batch writes the ones it moves), and whether the format is written.
    let rowCounts = new Map<string, number>()
    let formatted = false

    // Reopens first if a write failed since (so the head is read from a fresh write-ahead log), then reloads
    // the row counts and format flag the next append builds on.
    const head = Effect.flatMap(h.ensureWritable, () =>
      Effect.map(h.read("cannot read the log head", readFullHead), (full) => {
        rowCounts = new Map(full.rowCounts)
        formatted = full.formatted
        return { lastSeq: full.lastSeq, checkpoint: full.checkpoint, counters: full.counters } satisfies LogHead
      }))

    yield* head

    const write = (batch: AppendBatch, counts: Map<string, number>) =>
      h.write("write failed", (db) => {
        const chained = db.batch()
        let last = 0
        for (const { event, row, rowJson } of batch.entries) {
          const eventKey = K.eventKey(event.seq)
          chained.put(eventKey, seal(eventKey, JSON.stringify(event)))
          const rowKey = K.rowKey(event.type, event.id)
          if (row === null) chained.del(rowKey)
          else chained.put(rowKey, seal(rowKey, rowPayload(event.schema ?? 1, rowJson ?? JSON.stringify(row))))
          if (event.kind === "created") counts.set(event.type, (counts.get(event.type) ?? rowCounts.get(event.type) ?? 0) + 1)
          else if (event.kind === "deleted") counts.set(event.type, (counts.get(event.type) ?? rowCounts.get(event.type) ?? 0) - 1)
          last = event.seq
        }
        for (const [type, n] of batch.counters) chained.put(K.counterKey(type), seal(K.counterKey(type), String(n)))
        for (const { name, json } of batch.views ?? []) chained.put(K.viewKey(name), seal(K.viewKey(name), json))
        for (const [type, n] of counts) chained.put(K.rowCountKey(type), seal(K.rowCountKey(type), String(n)))
        chained.put(K.CHECKPOINT_KEY, seal(K.CHECKPOINT_KEY, String(last)))
        if (!formatted) chained.put(K.FORMAT_KEY, seal(K.FORMAT_KEY, K.FORMAT))
        return chained.write({ sync: true })
      })

    return EventLog.of({
      append: (batch) =>
        Effect.gen(function* () {
          const counts = new Map<string, number>()
          yield* write(batch, counts)
          for (const [type, n] of counts) rowCounts.set(type, n)
          formatted = true
          syncWrites++
          eventsWritten += batch.entries.length
        }),
      head,
      readFrom: (fromSeq) => readEvents(h, fromSeq),
      storedRows: readStoredRows(h),
      storedViews: readStoredViews(h),
      stats: Effect.sync(() => ({ syncWrites, eventsWritten }))
    })
  })

/** The classic-level EventLog over the shared LevelDb. */
export const ClassicLevelLog = Layer.effect(EventLog, Effect.flatMap(LevelDb, makeClassicLevelLog))
