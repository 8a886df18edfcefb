/**
 * The EventLog as every reader should see it: events and stored rows written at an older schema version come
 * out upcast through the type's migrations, in the current version's form. It decorates the store's EventLog,
 * so recovery, the writer's resync, legacy resumption, `/api/_events` and `wo replay --app` all read migrated
 * data from one place. The log itself is never rewritten.
 *
 * Types the app does not declare (retired ones) pass through as written. An app whose types are all at
 * version 1 gets the store's EventLog itself: nothing to do, nothing to pay.
 */
import { Chunk, Effect, Layer, Stream } from "effect"
import { EventLog, type EventLogShape, type StoredRow } from "./event-log.ts"
import { Catalog } from "../domain/app-catalog.ts"
import type { CompiledApp } from "../domain/compile.ts"
import { StoreFailed } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import { MigrationFailed } from "../domain/migrations.ts"
import { describeThrown } from "../domain/decide/user-code.ts"

/** The event in its type's current schema version (the same object when there is nothing to migrate). */
export const upcastEvent = (catalog: CompiledApp, event: StoredEvent): StoredEvent => {
  const type = catalog.types.get(event.type)
  const from = event.schema ?? 1
  if (type === undefined || from >= type.version) return event
  // A delete carries no fields; a migration that adds one must not invent data for it.
  const data = event.kind === "deleted" ? event.data : type.upcast(event.data, from)
  return { ...event, data, schema: type.version }
}

/** The stored row in its type's current schema version. */
export const upcastRow = (catalog: CompiledApp, stored: StoredRow): StoredRow => {
  const type = catalog.types.get(stored.type)
  const from = stored.schema ?? 1
  if (type === undefined || from >= type.version) return stored
  const { id, version, ...fields } = stored.row
  // A stored row is served as it comes out: what the migrations made of it must fit the current schema.
  return { ...stored, row: { id, version, ...type.upcast(fields, from, type.presentFieldIssues) }, schema: type.version }
}

/** A migration that fails stops the read with a message naming the record, the type, the migration and the field. */
export const upcastFailure = (what: string) => (e: unknown) =>
  new StoreFailed({
    reason: e instanceof MigrationFailed ? `cannot read ${what}: ${e.message}` : `cannot read ${what}: ${describeThrown(e)}`
  })

const mapChunks = <A, E>(stream: Stream.Stream<A, E>, f: (a: A) => A, what: (a: A) => string) =>
  Stream.mapChunksEffect(stream, (chunk) =>
    Effect.suspend(() => {
      let current: A | undefined
      try {
        return Effect.succeed(Chunk.map(chunk, (a) => f((current = a))))
      } catch (e) {
        return Effect.fail(upcastFailure(current === undefined ? "the log" : what(current))(e))
      }
    }))

/** Decorates `log` so that `readFrom`, `follow`, `eventsOf`, `storedRows` and `rowsAtHead` yield upcast data. */
export const upcastingLog = (log: EventLogShape, catalog: CompiledApp): EventLogShape => {
  if (![...catalog.types.values()].some((t) => t.version > 1)) return log
  const upcastRows = <E>(rows: Stream.Stream<StoredRow, E>) =>
    mapChunks(rows, (r) => upcastRow(catalog, r), (r) => `the stored row ${r.type}/${r.row.id}`)
  return {
    ...log,
    readFrom: (fromSeq, options) =>
      mapChunks(log.readFrom(fromSeq, options), (e) => upcastEvent(catalog, e), (e) => `event ${e.seq} (${e.type}/${e.id})`),
    ...(log.follow === undefined ? {} : {
      follow: (afterSeq: number, applied?: () => number, readBefore?: () => number | undefined) =>
        mapChunks(log.follow!(afterSeq, applied, readBefore), (e) => upcastEvent(catalog, e), (e) => `event ${e.seq} (${e.type}/${e.id})`)
    }),
    ...(log.eventsOf === undefined ? {} : {
      eventsOf: (entities: ReadonlyArray<{ readonly type: string; readonly id: string }>, toSeq: number) =>
        Effect.flatMap(log.eventsOf!(entities, toSeq), (events) =>
          Effect.try({ try: () => events.map((e) => upcastEvent(catalog, e)), catch: upcastFailure("an entity's events") }))
    }),
    ...(log.history === undefined ? {} : {
      history: (type: string, id: string, afterVersion: number, limit: number) =>
        Effect.flatMap(log.history!(type, id, afterVersion, limit), (events) =>
          Effect.try({ try: () => events.map((e) => upcastEvent(catalog, e)), catch: upcastFailure("an entity's events") }))
    }),
    ...(log.rowsAtHead === undefined ? {} : {
      rowsAtHead: Effect.flatMap(log.rowsAtHead, ({ head, rows }) =>
        Effect.map(Stream.runCollect(upcastRows(Stream.fromIterable(rows))), (upcast) => ({ head, rows: Chunk.toReadonlyArray(upcast) })))
    }),
    // Read the store's stream when run, not now: a reopened store may have replaced it.
    storedRows: Stream.suspend(() => upcastRows(log.storedRows))
  }
}

/** The upcasting EventLog over the store's EventLog (provide that one to this layer). */
export const UpcastingLog = Layer.effect(
  EventLog,
  Effect.gen(function* () {
    const log = yield* EventLog
    const catalog = yield* Catalog
    return upcastingLog(log, catalog)
  })
)
