/**
 * The EventLog on PostgreSQL (`wo run <app> --store postgres://...`): the same service as the embedded
 * classic-level log, over the tables of schema.ts. Appends are one transaction per group-commit batch
 * (append.ts); reads are in batches of READ_BATCH, every record checksum-verified and the sequence checked
 * for gaps, as classic-level does. The pool closes with the runtime's scope.
 *
 * Several nodes share the log: the append assigns seqs and ids under the head lock and refuses stale entries
 * (append.ts), and `follow` gives each node's tailer every commit in order (follow.ts). A starting node reads the
 * head and every row in one snapshot of the store (`rowsAtHead`): its rows are exact at that head, with no event
 * folded, so a start costs the rows, not the log's length (the whole log is verified by the background audit,
 * log-audit.ts). Views are stored by each node as snapshots exact at a seq (`storeViews`, schema.ts), off the write
 * path; a starting node loads them and folds only the events after (`eventsOf` gives the rows that tail starts from).
 */
import { Chunk, Duration, Effect, Either, Exit, Layer, Option, Schedule, Stream } from "effect"
import { type StoreError, DataCorrupt, StoreFailed } from "../../domain/errors.ts"
import type { StoredEvent } from "../../domain/events.ts"
import { EventLog, isWritten, type LogHead, type ReadOptions, type StoredRow } from "../event-log.ts"
import { RecordCorrupt } from "../record.ts"
import { randomUUID } from "node:crypto"
import { appendPictured } from "./append.ts"
import { makeLogPicture, reservedIn, seePicture } from "./log-picture.ts"
import { makeFollow } from "./follow.ts"
import { PgConnection, pgConnectionLayer, type PgConnectionOptions } from "./connection.ts"
import {
  decodeEvent,
  decodeHead,
  decodeOrFail,
  decodeRow,
  decodeStoredKey,
  decodeType,
  checksum,
  viewKey,
  EVENT_COLUMNS,
  HEAD_QUERY,
  KEY_COLUMNS,
  ROW_COLUMNS,
  TYPE_COLUMNS,
  VIEW_COLUMNS,
  decodeViewOrCorrupt
} from "./records.ts"
import { ensureSchema, RELEASE_IDS, RESERVE_IDS, SCHEMA } from "./schema.ts"
import { makeRowStore } from "./row-reads.ts"
import { makeSyncReads } from "./sync-reads.ts"
import { makeViewEntryStore } from "./view-entries.ts"
import { checkRowCounts } from "../row-counts.ts"

/** How often this node's append and tailer counts are logged (Debug) while they change. */
const COST_EVERY = Duration.seconds(2)

/** Records per query when reading the log or the rows. */
export const READ_BATCH = 1000

/** Decodes every raw row with `decode` (which throws RecordCorrupt), or fails with the first problem. */
const decodeAll = <A>(raws: ReadonlyArray<unknown>, decode: (raw: any) => A) =>
  Effect.suspend(() => {
    const out = decodeOrFail(() => raws.map(decode))
    return Either.isLeft(out) ? Effect.fail(out.left) : Effect.succeed(out.right)
  })

/** Runs one statement: on any pooled connection (`conn.query`), or on the one a transaction holds. */
type Query = (what: string, text: string, values?: ReadonlyArray<unknown>) => Effect.Effect<{ readonly rows: ReadonlyArray<unknown> }, StoreError>

const corruptAt = (message: string) => new DataCorrupt({ reason: new RecordCorrupt(message).message })

export const makePostgresLog = Effect.gen(function* () {
  const conn = yield* PgConnection
  const schema = yield* ensureSchema(conn)
  if (schema.from < schema.to) yield* Effect.logInfo(`store: PostgreSQL tables ${schema.from === 0 ? "created" : "upgraded"} (format ${schema.to})`)
  let syncWrites = 0
  let eventsWritten = 0

  const readHeadSeq = (run: Query) => Effect.flatMap(run("cannot read the log head", HEAD_QUERY), (r) => Effect.map(decodeAll(r.rows, decodeHead), (s) => s[0]))
  const readCounts = (run: Query) =>
    Effect.flatMap(run("cannot read the id counters", `select ${TYPE_COLUMNS} from ${SCHEMA}.types`), (r) => decodeAll(r.rows, decodeType))
  const readHead = (run: Query) =>
    Effect.gen(function* () {
      const lastSeq = yield* readHeadSeq(run)
      const types = yield* readCounts(run)
      // Rows are written in each batch's transaction: the stored rows always include every event.
      const head: LogHead = { lastSeq, checkpoint: lastSeq, counters: new Map(types.map((t) => [t.type, t.lastId])) }
      return { head, types }
    })

  const headSeq = readHeadSeq(conn.query)
  const counts = readCounts(conn.query)
  const head: Effect.Effect<LogHead, StoreError> = Effect.map(readHead(conn.query), (h) => h.head)

  const start = yield* readHead(conn.query)
  // The head and counters this node expects the log at (append.ts): right, the append is one round trip.
  const picture = makeLogPicture(start.head.lastSeq, start.types)
  // Names this node's commits in the log's notifications: its tailer need not read them back (follow.ts).
  const tag = randomUUID()

  // A reader that serves requests meanwhile (`slice`) gets the fetched batch in slices: it gives the loop a turn
  // between them, not only between two queries.
  const readFrom = (fromSeq: number, options?: ReadOptions): Stream.Stream<StoredEvent, StoreError> =>
    options?.slice === undefined ? readBatches(fromSeq) : Stream.rechunk(readBatches(fromSeq), Math.max(1, Math.floor(options.slice)))

  const readBatches = (fromSeq: number): Stream.Stream<StoredEvent, StoreError> =>
    Stream.unwrap(
      Effect.map(headSeq, (last) => {
        let expected = Math.max(1, fromSeq)
        if (expected > last) return Stream.empty
        return Stream.paginateChunkEffect(expected, (from) =>
          Effect.flatMap(
            conn.query(
              "cannot read the log",
              `select ${EVENT_COLUMNS} from ${SCHEMA}.events e where e.seq >= $1 and e.seq <= $2 order by e.seq limit $3`,
              [from, last, READ_BATCH]
            ),
            (r) =>
              Effect.flatMap(decodeAll(r.rows, decodeEvent), (events) => {
                for (const event of events) {
                  if (event.seq !== expected) return Effect.fail(corruptAt(`corrupt log: event ${expected} is missing (the next is ${event.seq})`))
                  expected++
                }
                const done = events.length < READ_BATCH || expected > last
                if (done && expected <= last) return Effect.fail(corruptAt(`corrupt log: event ${expected} is missing (the head is ${last})`))
                return Effect.succeed([Chunk.unsafeFromArray(events), done ? Option.none<number>() : Option.some(expected)] as const)
              })
          ))
      })
    )

  type RowCursor = readonly [type: string, length: number, id: string]
  /** Every stored row, a page at a time through `run`, then checked against the row counts `types` recorded. */
  const rowPages = (run: Query, types: ReadonlyArray<{ readonly type: string; readonly rowCount: number }>): Stream.Stream<StoredRow, StoreError> => {
    const recorded = new Map(types.map((t) => [t.type, t.rowCount]))
    const seen = new Map<string, number>()
    // Ids in numeric order within a type (shorter first), so recovery appends to its sorted ids.
    const pages = Stream.paginateChunkEffect<RowCursor, StoredRow, StoreError, never>(["", -1, ""], ([type, length, id]) =>
      Effect.flatMap(
        run(
          "cannot read the stored rows",
          `select ${ROW_COLUMNS} from ${SCHEMA}.rows where row is not null and (type, length(id), id) > ($1, $2, $3)
           order by type, length(id), id limit $4`,
          [type, length, id, READ_BATCH]
        ),
        (r) =>
          Effect.map(decodeAll(r.rows, decodeRow), (decoded) => {
            const out: Array<StoredRow> = []
            for (const d of decoded) {
              seen.set(d.type, (seen.get(d.type) ?? 0) + 1)
              out.push({ type: d.type, row: d.row!, schema: d.schema })
            }
            const lastRow = decoded[decoded.length - 1]
            const next: Option.Option<RowCursor> = decoded.length < READ_BATCH ? Option.none() : Option.some([lastRow.type, lastRow.id.length, lastRow.id])
            return [Chunk.unsafeFromArray(out), next] as const
          })
      ))
    return pages.pipe(Stream.concat(Stream.drain(Stream.fromEffect(checkRowCounts(recorded, seen)))))
  }
  const storedRows: Stream.Stream<StoredRow, StoreError> = Stream.unwrap(Effect.map(counts, (types) => rowPages(conn.query, types)))

  // The head, the counters and every row in one read-only repeatable-read transaction: one snapshot of the store, so
  // the rows are exactly those of that head even while other nodes commit (each commit writes its events, rows and
  // head together). The rows are read at once and the transaction ended: it holds no pooled connection afterwards.
  const rowsAtHead = Effect.scoped(
    Effect.gen(function* () {
      const client = yield* conn.client
      const run: Query = (what, text, values) =>
        Effect.tryPromise({ try: () => client.query(text, values as Array<unknown> | undefined), catch: (e) => conn.failed(what, e) })
      yield* run("cannot read the stored rows", "begin transaction isolation level repeatable read read only")
      const { head, types } = yield* readHead(run)
      const rows = yield* Stream.runCollect(rowPages(run, types))
      yield* run("cannot read the stored rows", "commit")
      return { head, rows: Chunk.toReadonlyArray(rows) }
    })
  )

  // A node caching rows (row-reads.ts) starts from the head and the row counts, read at one moment of the store
  // (each commit writes its events, rows, head and counts together), once: the rows' recovery and the views' pin
  // the same head.
  const rowsStart = yield* Effect.cached(Effect.scoped(
    Effect.gen(function* () {
      const client = yield* conn.client
      const run: Query = (what, text, values) =>
        Effect.tryPromise({ try: () => client.query(text, values as Array<unknown> | undefined), catch: (e) => conn.failed(what, e) })
      yield* run("cannot read the log head", "begin transaction isolation level repeatable read read only")
      const { head, types } = yield* readHead(run)
      yield* run("cannot read the log head", "commit")
      return { head, rowCounts: new Map(types.map((t) => [t.type, t.rowCount])) }
    })
  ))
  const syncReads = makeSyncReads(conn.clientConfig, conn.timeoutMs)
  yield* Effect.addFinalizer(() => Effect.promise(() => syncReads.close()))
  const rowStore = makeRowStore(conn, syncReads, rowsStart)
  const viewEntries = makeViewEntryStore(conn, syncReads)

  type EntityCursor = readonly [type: string, id: string, version: number]
  // A page at a time in (type, id, version) order, the unique index's (a hot entity's history may be most of the log:
  // one statement would outlast WO_STORE_TIMEOUT), then in seq order.
  const eventsOf = (entities: ReadonlyArray<{ readonly type: string; readonly id: string }>, toSeq: number) =>
    Effect.map(
      Stream.runCollect(Stream.paginateChunkEffect<EntityCursor, StoredEvent, StoreError, never>(["", "", 0], ([type, id, version]) =>
        Effect.flatMap(
          conn.query(
            "cannot read the entities' events",
            `select ${EVENT_COLUMNS} from ${SCHEMA}.events e
               where (e.type, e.id) in (select * from unnest($1::text[], $2::text[])) and e.seq <= $3
                 and (e.type, e.id, e.version) > ($4, $5, $6)
               order by e.type, e.id, e.version limit $7`,
            [entities.map((e) => e.type), entities.map((e) => e.id), toSeq, type, id, version, READ_BATCH]
          ),
          (r) =>
            Effect.map(decodeAll(r.rows, decodeEvent), (events) => {
              const last = events[events.length - 1]
              const next: Option.Option<EntityCursor> = events.length < READ_BATCH ? Option.none() : Option.some([last.type, last.id, last.version])
              return [Chunk.unsafeFromArray(events), next] as const
            })
        ))),
      (events) => Chunk.toArray(events).sort((a, b) => a.seq - b.seq)
    )

  // Other nodes' commits, as the tailer reads them, keep the picture right.
  const follow = yield* makeFollow(conn, tag, (events) => seePicture(picture, events))
  // What the shared log costs this node, at Debug every COST_EVERY while it changes (cumulative), for an operator
  // (and bench/profile-pg.ts) to see where a write's round trips and reads go.
  let reported = ""
  const reportCost = Effect.suspend(() => {
    const a = picture.cost
    const f = follow.cost
    const line = `store: ${a.batches} batches appended (${a.events} events), ${a.firstCall} written by their first call, ` +
      `${a.calls} calls of append_batch, ${a.transactions} transactions; the tailer heard ${f.notifications} notifications, ` +
      `made ${f.fetches} fetches (${f.emptyFetches} empty), read ${f.rows} events and took ${f.pushed} from notifications (${f.ownRows} of them this node's own); ` +
      `${a.shifted} batches written after other nodes' commits; the follower woke ${f.wakes} times; ` +
      `${a.stale} entries refused as stale, ${a.renumbered} creates given another id`
    if (line === reported) return Effect.void
    reported = line
    return Effect.logDebug(line)
  })
  yield* Effect.forkScoped(Effect.repeat(reportCost, Schedule.spaced(COST_EVERY)))

  return EventLog.of({
    append: (batch) =>
      // Bounded as a whole (append.ts). Whether a batch cut off after its commit was sent landed is settled by the
      // log: the tailer applies it if it did.
      Effect.suspend(() => {
        // The batch lands after the head as this node knows it: its tailer reads no further until it is told where.
        follow.sending(picture.head)
        return appendPictured(conn, batch, picture, tag)
      }).pipe(
        Effect.map(({ result, last }) => {
          syncWrites++
          eventsWritten += result.outcomes.filter(isWritten).length
          // This node applies its batch itself when it can; else its tailer reads it now, not on the notification.
          follow.wrote(result.lastSeq, last, result.outcomes.find(isWritten)?.event.seq)
          return result
        }),
        // A failed (or interrupted) append may have landed: the tailer reads what the log holds now.
        Effect.onExit((exit) => (Exit.isFailure(exit) ? Effect.sync(() => follow.failed()) : Effect.void))
      ),
    head,
    readFrom,
    follow: follow.events,
    failovers: conn.generation,
    storedRows,
    rowsAtHead,
    rowStore,
    viewEntries,
    // The entries as the last snapshot stored them (exact at the view's `at`: keyed-check.ts folds the log up to it).
    storedViewEntries: (name, definition) =>
      Stream.unwrap(Effect.map(viewEntries.watermarks, (marks) => {
        const at = marks.get(name) ?? 0
        return Stream.paginateChunkEffect(undefined as string | undefined, (after) =>
          Effect.map(viewEntries.range(name, definition, after, READ_BATCH, at), (rows) => {
            const present = rows.flatMap((r) => (r.text === null ? [] : [{ key: r.key, text: r.text }]))
            const next: Option.Option<string | undefined> = rows.length < READ_BATCH ? Option.none() : Option.some(rows[rows.length - 1].key)
            return [Chunk.unsafeFromArray(present), next] as const
          }))
      })),
    // One view's corrupt record is that view's problem: it is folded again (views.ts), never served.
    storedViews: Effect.map(
      conn.query("cannot read the stored views", `select ${VIEW_COLUMNS} from ${SCHEMA}.views`),
      (r) => r.rows.map(decodeViewOrCorrupt)
    ),
    storeViews: (views) =>
      Effect.asVoid(conn.query(
          "cannot store the views",
          `insert into ${SCHEMA}.views as v (name, record, checksum, at)
             select * from unnest($1::text[], $2::text[], $3::text[], $4::bigint[])
           on conflict (name) do update set record = excluded.record, checksum = excluded.checksum, at = excluded.at
             where v.at <= excluded.at`,
          [views.map((v) => v.name), views.map((v) => v.json), views.map((v) => checksum(viewKey(v.name), v.json)), views.map((v) => v.at ?? 0)]
        )),
    eventsOf: (entities, toSeq) => (entities.length === 0 ? Effect.succeed([]) : eventsOf(entities, toSeq)),
    // The unique (type, id, version) index: a page of one entity's history is one index range.
    history: (type, id, afterVersion, limit) =>
      Effect.flatMap(
        conn.query(
          "cannot read the entity's events",
          `select ${EVENT_COLUMNS} from ${SCHEMA}.events e where e.type = $1 and e.id = $2 and e.version > $3 order by e.version limit $4`,
          [type, id, afterVersion, limit]
        ),
        (r) => decodeAll(r.rows, decodeEvent)
      ),
    reserveIds: (type, count) =>
      Effect.flatMap(conn.query("cannot reserve ids", RESERVE_IDS, [type, count]), (r) => {
        const last = Number(r.rows[0]?.last_id)
        if (!Number.isSafeInteger(last) || last < count) return Effect.fail(new StoreFailed({ reason: `the store reserved ids up to ${r.rows[0]?.last_id} (a bug)` }))
        // This node's next creates in the type are planned with ids up to `last` (append-plan.ts).
        reservedIn(picture, type, last)
        return Effect.succeed(last)
      }),
    releaseIds: (unused) =>
      Effect.map(
        conn.query("cannot give back unused ids", RELEASE_IDS, [unused.map((u) => u.type), unused.map((u) => u.keep), unused.map((u) => u.blockLast)]),
        (r) => r.rows.map((row) => String(row.type))
      ),
    storedKey: (key) =>
      Effect.flatMap(
        conn.query("cannot read the idempotency key", `select ${KEY_COLUMNS} from ${SCHEMA}.idempotency_keys where key = $1`, [key]),
        (r) => Effect.map(decodeAll(r.rows, decodeStoredKey), (found) => found[0])
      ),
    storedKeys: (keys) =>
      Effect.flatMap(
        conn.query("cannot read the idempotency keys", `select ${KEY_COLUMNS} from ${SCHEMA}.idempotency_keys where key = any($1::text[])`, [keys]),
        (r) => Effect.map(decodeAll(r.rows, decodeStoredKey), (found) => new Map(found.map((k) => [k.key, k])))
      ),
    // Every node prunes; `skip locked` keeps two nodes from waiting on each other's rows.
    pruneKeys: (before, limit) =>
      Effect.map(
        conn.query(
          "cannot prune idempotency keys",
          `delete from ${SCHEMA}.idempotency_keys where key in
             (select key from ${SCHEMA}.idempotency_keys where at < $1 order by at limit $2 for update skip locked)`,
          [before, limit]
        ),
        (r) => r.rowCount ?? 0
      ),
    stats: Effect.sync(() => ({ syncWrites, eventsWritten }))
  })
})

/** The EventLog on the PostgreSQL store at `url` (several hosts allowed: the primary is chosen, connection.ts). */
export const postgresLogLayer = (url: string, options: PgConnectionOptions = {}) =>
  Layer.scoped(EventLog, makePostgresLog).pipe(Layer.provide(pgConnectionLayer(url, options)))
