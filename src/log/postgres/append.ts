/**
 * One group-commit batch, appended in one transaction:
 *
 *   1. lock the log_head row (every writer, on any node, queues here: seq order is commit order, without gaps);
 *   2. check that the batch starts right after the head, that each entry's version is one past its entity's
 *      stored version, and that each create takes its type's next id;
 *   3. one statement writes it all: the events (one multi-row insert), the rows after them (the inline
 *      projection), the id counters and row counts, the views, the new head, and `pg_notify` of that head;
 *   4. commit: with `synchronous_commit=on` and `ANY 1 (s1, s2)`, it returns once the batch is fsynced on the
 *      primary and on at least one standby.
 *
 * A check that fails fails the whole batch with a StoreUnavailable naming the entity (nothing is written). With
 * one node it cannot happen; the multi-node release turns it into per-entry conflicts and re-decides.
 *
 * If the wait for a standby is cancelled (PostgreSQL then warns that the commit is local only), the append
 * fails: the caller is not acknowledged, and the writer's resync finds the events on its next batch.
 */
import { Effect, Either } from "effect"
import type pg from "pg"
import { StoreUnavailable } from "../../domain/errors.ts"
import { streamKey } from "../../domain/events.ts"
import type { AppendBatch } from "../event-log.ts"
import type { PgConnectionShape } from "./connection.ts"
import { checksum, decodeOrFail, decodeType, eventColumns, rowKey, rowPayload, TYPE_COLUMNS, typeKey, typePayload, viewKey } from "./records.ts"
import { HEAD_CHANNEL, SCHEMA } from "./schema.ts"

const WRITE = `
with
  e as (
    insert into ${SCHEMA}.events (seq, type, id, version, kind, schema, at, method, params, data, checksum)
    select seq, type, id, version, kind, schema, at, method, params::json, data::json, checksum
    from unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[], $6::int[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[])
      as t(seq, type, id, version, kind, schema, at, method, params, data, checksum)
  ),
  r as (
    insert into ${SCHEMA}.rows (type, id, version, schema, row, checksum)
    select type, id, version, schema, row::json, checksum
    from unnest($12::text[], $13::text[], $14::int[], $15::int[], $16::text[], $17::text[]) as t(type, id, version, schema, row, checksum)
    on conflict (type, id) do update
      set version = excluded.version, schema = excluded.schema, row = excluded.row, checksum = excluded.checksum
  ),
  c as (
    insert into ${SCHEMA}.types (type, last_id, row_count, checksum)
    select * from unnest($18::text[], $19::bigint[], $20::bigint[], $21::text[])
    on conflict (type) do update set last_id = excluded.last_id, row_count = excluded.row_count, checksum = excluded.checksum
  ),
  v as (
    insert into ${SCHEMA}.views (name, record, checksum)
    select * from unnest($22::text[], $23::text[], $24::text[])
    on conflict (name) do update set record = excluded.record, checksum = excluded.checksum
  ),
  h as (update ${SCHEMA}.log_head set seq = $25::bigint)
select pg_notify('${HEAD_CHANNEL}', $25::bigint::text)`

const describe = (e: unknown) => (e instanceof Error ? e.message : String(e))
const refuse = (reason: string) => new StoreUnavailable({ reason: `${reason}; nothing of the batch was written` })

/** Appends the batch in one transaction on a connection of its own; succeeds once the commit is durable. */
export const appendBatch = (conn: PgConnectionShape, batch: AppendBatch) =>
  Effect.scoped(
    Effect.gen(function* () {
      const entries = batch.entries
      if (entries.length === 0) return
      const client = yield* conn.client
      const q = <R extends pg.QueryResultRow>(what: string, text: string, values?: ReadonlyArray<unknown>) =>
        Effect.tryPromise({
          try: () => client.query<R>(text, values as Array<unknown> | undefined),
          catch: (e) => new StoreUnavailable({ reason: `${what}: ${describe(e)}` })
        })
      // PostgreSQL warns (and the commit returns) when a commit's wait for the standbys is cancelled.
      let localOnly: string | undefined
      const onNotice = (n: { readonly message?: string; readonly detail?: string }) => {
        if (/synchronous replication|might not have been replicated/i.test(`${n.message ?? ""} ${n.detail ?? ""}`)) localOnly = n.message ?? "warning"
      }
      yield* Effect.acquireRelease(Effect.sync(() => client.on("notice", onNotice)), () => Effect.sync(() => client.removeListener("notice", onNotice)))

      yield* q("cannot begin the append", "begin")
      const headRows = yield* q<{ seq: string }>("cannot lock the log head", `select seq::text as seq from ${SCHEMA}.log_head for update`)
      const head = Number(headRows.rows[0]?.seq)
      const first = entries[0].event.seq
      if (first !== head + 1) {
        return yield* refuse(`the shared log is at seq ${head}, but this batch starts at seq ${first} (another writer appended)`)
      }
      for (let i = 1; i < entries.length; i++) {
        if (entries[i].event.seq !== first + i) return yield* refuse(`the batch's sequence is not contiguous at seq ${entries[i].event.seq}`)
      }

      // Versions: one past the entity's stored version (0: never written), chained within the batch.
      const entityTypes: Array<string> = []
      const entityIds: Array<string> = []
      const versions = new Map<string, number>()
      for (const { event } of entries) {
        const key = streamKey(event.type, event.id)
        if (!versions.has(key)) {
          versions.set(key, 0)
          entityTypes.push(event.type)
          entityIds.push(event.id)
        }
      }
      const stored = yield* q<{ type: string; id: string; version: number }>(
        "cannot read the entities' versions",
        `select r.type, r.id, r.version from ${SCHEMA}.rows r join unnest($1::text[], $2::text[]) as k(type, id) on r.type = k.type and r.id = k.id`,
        [entityTypes, entityIds]
      )
      for (const r of stored.rows) versions.set(streamKey(r.type, r.id), r.version)

      // Id counters and live row counts of the types this batch moves.
      const touched = new Set<string>(batch.counters.keys())
      for (const { event } of entries) if (event.kind === "created" || event.kind === "deleted") touched.add(event.type)
      const typeRows = yield* q("cannot read the id counters", `select ${TYPE_COLUMNS} from ${SCHEMA}.types where type = any($1::text[])`, [[...touched]])
      const counts = new Map<string, { lastId: number; rowCount: number }>()
      for (const raw of typeRows.rows) {
        const t = decodeOrFail(() => decodeType(raw))
        if (Either.isLeft(t)) return yield* t.left
        counts.set(t.right.type, { lastId: t.right.lastId, rowCount: t.right.rowCount })
      }
      for (const type of touched) if (!counts.has(type)) counts.set(type, { lastId: 0, rowCount: 0 })

      const ev = { seq: [] as Array<number>, type: [] as Array<string>, id: [] as Array<string>, version: [] as Array<number>, kind: [] as Array<string>, schema: [] as Array<number>, at: [] as Array<number>, method: [] as Array<string | null>, params: [] as Array<string | null>, data: [] as Array<string>, checksum: [] as Array<string> }
      // The row after the batch, per entity (the last entry wins: one upsert per row).
      const rowsAfter = new Map<string, { type: string; id: string; version: number; schema: number; row: string | null }>()
      for (const { event, row, rowJson } of entries) {
        const key = streamKey(event.type, event.id)
        const current = versions.get(key)!
        if (event.version !== current + 1) {
          return yield* refuse(
            `version conflict: ${event.type} ${event.id} is at version ${current} in the shared log, but this batch's event is version ${event.version} (expected ${event.version - 1})`
          )
        }
        versions.set(key, event.version)
        const count = counts.get(event.type)
        if (event.kind === "created") {
          if (Number(event.id) !== count!.lastId + 1) {
            return yield* refuse(`id conflict: the next ${event.type} id in the shared log is ${count!.lastId + 1}, but this batch creates ${event.id}`)
          }
          count!.lastId++
          count!.rowCount++
        } else if (event.kind === "deleted") count!.rowCount--
        const c = eventColumns(event)
        ev.seq.push(c.seq)
        ev.type.push(c.type)
        ev.id.push(c.id)
        ev.version.push(c.version)
        ev.kind.push(c.kind)
        ev.schema.push(c.schema)
        ev.at.push(c.at)
        ev.method.push(c.method)
        ev.params.push(c.params)
        ev.data.push(c.data)
        ev.checksum.push(c.checksum)
        rowsAfter.set(key, {
          type: event.type,
          id: event.id,
          version: event.version,
          schema: event.schema ?? 1,
          row: row === null ? null : rowJson ?? JSON.stringify(row)
        })
      }
      for (const [type, n] of batch.counters) {
        const count = counts.get(type)!
        if (n !== count.lastId) return yield* refuse(`id conflict: the batch moves the ${type} counter to ${n}, its creates to ${count.lastId}`)
      }
      const rows = [...rowsAfter.values()]
      const types = [...counts]
      const views = new Map((batch.views ?? []).map((v) => [v.name, v.json]))
      const last = first + entries.length - 1
      yield* q("cannot write the batch", WRITE, [
        ev.seq, ev.type, ev.id, ev.version, ev.kind, ev.schema, ev.at, ev.method, ev.params, ev.data, ev.checksum,
        rows.map((r) => r.type),
        rows.map((r) => r.id),
        rows.map((r) => r.version),
        rows.map((r) => r.schema),
        rows.map((r) => r.row),
        rows.map((r) => checksum(rowKey(r.type, r.id), rowPayload(r.version, r.schema, r.row))),
        types.map(([type]) => type),
        types.map(([, c]) => c.lastId),
        types.map(([, c]) => c.rowCount),
        types.map(([type, c]) => checksum(typeKey(type), typePayload(c.lastId, c.rowCount))),
        [...views.keys()],
        [...views.values()],
        [...views].map(([name, json]) => checksum(viewKey(name), json)),
        last
      ])
      yield* q("the commit failed (its outcome is unknown until the log is read again)", "commit")
      if (localOnly !== undefined) {
        return yield* new StoreUnavailable({
          reason: `the batch committed on the primary, but no standby confirmed it (${localOnly}); not acknowledged`
        })
      }
    })
  )
