/**
 * The EventLog on classic-level (LevelDB). One chained batch per append, written with `sync: true`: the
 * events, their rows and the checkpoint land together or not at all.
 */
import { Effect, Layer, Option, Stream } from "effect"
import type { StoreUnavailable } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import { EventLog, type AppendBatch, type LogHead, type StoredRow } from "./event-log.ts"
import { LogFaults } from "./log-faults.ts"
import { LevelDb, storeError, type Db } from "./level-db.ts"
import * as K from "./log-keys.ts"

const unavailable = storeError

const parseJson = <A>(key: string, value: string): A => {
  try {
    return JSON.parse(value) as A
  } catch {
    throw new Error(`corrupt record at key ${key}: not valid JSON (${value.slice(0, 40)}…)`)
  }
}

/** A stored record, or a StoreUnavailable naming the damaged key (never a defect). */
const parsed = <A>(key: string, value: string) =>
  Effect.try({ try: () => parseJson<A>(key, value), catch: unavailable("corrupt store") })

/** Reads the head and checks the tail is whole, so a damaged store is reported instead of served. */
export const readHead = (db: Db): Effect.Effect<LogHead, StoreUnavailable> =>
  Effect.tryPromise({
    try: async () => {
      let lastSeq = 0
      for await (const [key, value] of db.iterator({ gte: K.EVENTS_START, lt: K.EVENTS_END, reverse: true, limit: 1 })) {
        const event = parseJson<StoredEvent>(key, value)
        lastSeq = K.seqOfEventKey(key)
        if (event.seq !== lastSeq) throw new Error(`corrupt log tail: key ${key} holds event seq ${event.seq}`)
      }
      const cp = await db.get(K.CHECKPOINT_KEY)
      const checkpoint = cp === undefined ? 0 : Number(cp)
      if (!Number.isSafeInteger(checkpoint) || checkpoint > lastSeq) {
        throw new Error(`corrupt store: checkpoint ${cp} is past the last event ${lastSeq}`)
      }
      const counters = new Map<string, number>()
      for await (const [key, value] of db.iterator({ gte: K.COUNTER_PREFIX, lt: `${K.COUNTER_PREFIX}~` })) {
        counters.set(key.slice(K.COUNTER_PREFIX.length), Number(value))
      }
      return { lastSeq, checkpoint, counters }
    },
    catch: unavailable("cannot read the log head")
  })

export const readEvents = (db: Db, fromSeq: number): Stream.Stream<StoredEvent, StoreUnavailable> =>
  Stream.fromAsyncIterable(
    db.iterator({ gte: K.eventKey(Math.max(1, fromSeq)), lt: K.EVENTS_END }),
    unavailable("cannot read the log")
  ).pipe(Stream.mapEffect(([key, value]) => parsed<StoredEvent>(key, value)))

export const readStoredRows = (db: Db): Stream.Stream<StoredRow, StoreUnavailable> =>
  Stream.fromAsyncIterable(db.iterator({ gte: K.ROWS_START, lt: K.ROWS_END }), unavailable("cannot read rows")).pipe(
    Stream.mapEffect(([key, value]) => Effect.map(parsed<StoredRow["row"]>(key, value), (row) => ({ type: key.split("!")[1], row })))
  )

/** The EventLog layer over an open database. */
export const makeClassicLevelLog = (db: Db) =>
  Effect.gen(function* () {
    const faults = yield* Effect.serviceOption(LogFaults)
    let syncWrites = 0
    let eventsWritten = 0

    const write = (batch: AppendBatch) =>
      Effect.tryPromise({
        try: () => {
          const chained = db.batch()
          let last = 0
          for (const { event, row, rowJson } of batch.entries) {
            chained.put(K.eventKey(event.seq), JSON.stringify(event))
            if (row === null) chained.del(K.rowKey(event.type, event.id))
            else chained.put(K.rowKey(event.type, event.id), rowJson ?? JSON.stringify(row))
            last = event.seq
          }
          for (const [type, n] of batch.counters) chained.put(K.counterKey(type), String(n))
          chained.put(K.CHECKPOINT_KEY, String(last))
          return chained.write({ sync: true })
        },
        catch: unavailable("write failed")
      })

    return EventLog.of({
      append: (batch) =>
        Effect.gen(function* () {
          if (Option.isSome(faults)) yield* faults.value.beforeWrite(batch.entries.length)
          yield* write(batch)
          syncWrites++
          eventsWritten += batch.entries.length
        }),
      head: readHead(db),
      readFrom: (fromSeq) => readEvents(db, fromSeq),
      storedRows: readStoredRows(db),
      stats: Effect.sync(() => ({ syncWrites, eventsWritten }))
    })
  })

/** The classic-level EventLog over the shared LevelDb. */
export const ClassicLevelLog = Layer.effect(EventLog, Effect.flatMap(LevelDb, makeClassicLevelLog))
