/**
 * One group-commit batch, appended in one transaction. Several nodes append to the same log:
 *
 *   1. lock the log_head row (every writer, on any node, queues here: seq order is commit order, without gaps);
 *      read the batch's idempotency keys: a submission whose key is stored already (another node, or an attempt
 *      whose commit failed but landed, wrote it) is left out as `Duplicate`, answered with what is stored;
 *   2. assign the batch's seqs from the head on, and each create its type's next id (the row rewritten to it);
 *      check each entry's version against its entity's stored version: an entry decided against a row another
 *      node has since moved on is left out as `Stale` (and so is every later entry of that entity in the batch);
 *      an app command's entries (one correlation) are one group: if one of them is stale, or one of its creates
 *      would get another id than the one it was decided with, every entry of the group is `Stale`;
 *   3. one statement writes the rest: the events (one multi-row insert), the rows after them (the inline
 *      projection), the id counters and row counts, the views, the keys of the submissions written (with their
 *      entries as written: the answer), the new head, and `pg_notify` of that head;
 *   4. commit: with `synchronous_commit=on` and `ANY 1 (s1, s2)`, it returns once the batch is fsynced on the
 *      primary and on at least one standby.
 *
 * If the wait for a standby is cancelled (PostgreSQL then warns that the commit is local only), the append
 * fails: the caller is not acknowledged, and the writer's resync finds the events on its next batch.
 */
import { Effect, Either } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { StoredEvent } from "../../domain/events.ts"
import type pg from "pg"
import { type StoreUnavailable, StoreFailed } from "../../domain/errors.ts"
import { streamKey } from "../../domain/events.ts"
import { Duplicate, isWritten, Stale, type AppendBatch, type AppendEntry, type AppendResult, type StoredKey } from "../event-log.ts"
import { keyPayload } from "../key-record.ts"
import type { PgConnectionShape } from "./connection.ts"
import {
  checksum,
  decodeOrFail,
  decodeStoredKey,
  decodeType,
  eventColumns,
  idempotencyKeyOf,
  KEY_COLUMNS,
  rowKey,
  rowPayload,
  TYPE_COLUMNS,
  typeKey,
  typePayload,
  viewKey
} from "./records.ts"
import { HEAD_CHANNEL, SCHEMA } from "./schema.ts"

const WRITE = `
with
  e as (
    insert into ${SCHEMA}.events (seq, type, id, version, kind, schema, at, method, params, data, checksum, command, correlation)
    select seq, type, id, version, kind, schema, at, method, params::json, data::json, checksum, command, correlation
    from unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $5::text[], $6::int[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[], $26::text[], $27::text[])
      as t(seq, type, id, version, kind, schema, at, method, params, data, checksum, command, correlation)
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
  k as (
    insert into ${SCHEMA}.idempotency_keys (key, at, result, checksum)
    select * from unnest($28::text[], $29::bigint[], $30::text[], $31::text[])
  ),
  h as (update ${SCHEMA}.log_head set seq = $25::bigint)
select pg_notify('${HEAD_CHANNEL}', $25::bigint::text)`


/** Appends the batch in one transaction on a connection of its own; succeeds once the commit is durable. */
export const appendBatch = (conn: PgConnectionShape, batch: AppendBatch): Effect.Effect<AppendResult, StoreUnavailable> =>
  Effect.scoped(
    Effect.gen(function* () {
      const entries = batch.entries
      const client = yield* conn.client
      const q = <R extends pg.QueryResultRow>(what: string, text: string, values?: ReadonlyArray<unknown>) =>
        Effect.tryPromise({
          try: () => client.query<R>(text, values as Array<unknown> | undefined),
          catch: (e) => conn.failed(what, e)
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

      // Idempotency keys: under the head lock, so that of two nodes writing one key, the second sees the first's.
      const claims = batch.keys ?? []
      const replays = new Map<string, StoredKey>()
      const duplicates = new Set<number>()
      if (claims.length > 0) {
        const found = yield* q<{ key: string; result: string; checksum: string }>(
          "cannot read the idempotency keys",
          `select ${KEY_COLUMNS} from ${SCHEMA}.idempotency_keys where key = any($1::text[])`,
          [claims.map((c) => c.key)]
        )
        for (const raw of found.rows) {
          const stored = decodeOrFail(() => decodeStoredKey(raw))
          if (Either.isLeft(stored)) return yield* stored.left
          replays.set(raw.key, stored.right)
        }
        for (const c of claims) if (replays.has(c.key)) for (let i = c.first; i < c.first + c.count; i++) duplicates.add(i)
      }

      // Versions: one past the entity's stored version (0: never written), chained within the batch.
      const entityTypes: Array<string> = []
      const entityIds: Array<string> = []
      const versions = new Map<string, number>()
      for (const { event } of entries) {
        const key = streamKey(event.type, event.id)
        if (event.kind !== "created" && !versions.has(key)) {
          versions.set(key, 0)
          entityTypes.push(event.type)
          entityIds.push(event.id)
        }
      }
      if (entityTypes.length > 0) {
        const stored = yield* q<{ type: string; id: string; version: number }>(
          "cannot read the entities' versions",
          `select r.type, r.id, r.version from ${SCHEMA}.rows r join unnest($1::text[], $2::text[]) as k(type, id) on r.type = k.type and r.id = k.id`,
          [entityTypes, entityIds]
        )
        for (const r of stored.rows) versions.set(streamKey(r.type, r.id), r.version)
      }

      // Id counters and live row counts of the types this batch moves.
      const touched = new Set<string>()
      for (const { event } of entries) if (event.kind === "created" || event.kind === "deleted") touched.add(event.type)
      const counts = new Map<string, { lastId: number; rowCount: number }>()
      if (touched.size > 0) {
        const typeRows = yield* q("cannot read the id counters", `select ${TYPE_COLUMNS} from ${SCHEMA}.types where type = any($1::text[])`, [[...touched]])
        for (const raw of typeRows.rows) {
          const t = decodeOrFail(() => decodeType(raw))
          if (Either.isLeft(t)) return yield* t.left
          counts.set(t.right.type, { lastId: t.right.lastId, rowCount: t.right.rowCount })
        }
      }
      for (const type of touched) if (!counts.has(type)) counts.set(type, { lastId: 0, rowCount: 0 })

      const ev = { seq: [] as Array<number>, type: [] as Array<string>, id: [] as Array<string>, version: [] as Array<number>, kind: [] as Array<string>, schema: [] as Array<number>, at: [] as Array<number>, method: [] as Array<string | null>, params: [] as Array<string | null>, data: [] as Array<string>, checksum: [] as Array<string>, command: [] as Array<string | null>, correlation: [] as Array<string | null> }
      // The row after the batch, per entity (the last entry wins: one upsert per row).
      const rowsAfter = new Map<string, { type: string; id: string; version: number; schema: number; row: string | null }>()
      const outcomes: Array<AppendEntry | Stale | Duplicate> = []
      // Entities whose chain in this batch is broken (an earlier entry was stale, or its create got another id).
      const broken = new Set<string>()
      let seq = head
      // An app command's entries (consecutive, one correlation) are one group: all of them are written, or none.
      for (let start = 0; start < entries.length;) {
        const correlation = entries[start].event.correlation
        let end = start + 1
        if (correlation !== undefined) while (end < entries.length && entries[end].event.correlation === correlation) end++
        const group = correlation !== undefined
        if (duplicates.has(start)) {
          // Answered with the stored key; later entries of its entities were decided on top of it: stale.
          for (let i = start; i < end; i++) {
            const { event } = entries[i]
            if (event.kind !== "created") broken.add(streamKey(event.type, event.id))
            outcomes.push(Duplicate)
          }
          start = end
          continue
        }
        // What the group changes, to undo it when one of its entries cannot be written.
        const undo: Array<() => void> = []
        const evLength = ev.seq.length
        const seqBefore = seq
        const setVersion = (key: string, version: number) => {
          const had = versions.has(key)
          const before = versions.get(key)
          undo.push(() => (had ? versions.set(key, before!) : versions.delete(key)))
          versions.set(key, version)
        }
        const countOf = (type: string) => {
          const count = counts.get(type)!
          const before = { ...count }
          undo.push(() => Object.assign(count, before))
          return count
        }
        const written: Array<AppendEntry> = []
        let failed = false
        for (let i = start; i < end && !failed; i++) {
          let { event, row, rowJson } = entries[i]
          let key = streamKey(event.type, event.id)
          if (event.kind === "created" && event.version !== 1) {
            // A create decided against a row (a bug of the writer's): never write it.
            failed = true
            break
          } else if (event.kind === "created") {
            // The next id of the type in the shared log, whatever this node thought it was.
            const count = countOf(event.type)
            const id = String(count.lastId + 1)
            if (id !== event.id) {
              if (group) {
                // The command was decided with other ids: it is decided again.
                failed = true
                break
              }
              broken.add(key)
              event = { ...event, id }
              row = row === null ? null : ({ ...row, id } as Row)
              rowJson = row === null ? null : JSON.stringify(row)
              key = streamKey(event.type, id)
            }
            count.lastId++
            count.rowCount++
            setVersion(key, 0)
          } else if (broken.has(key) || event.version !== versions.get(key)! + 1) {
            failed = true
            break
          } else if (event.kind === "deleted") countOf(event.type).rowCount--
          setVersion(key, event.version)
          event = { ...event, seq: ++seq } satisfies StoredEvent
          const json = row === null ? null : rowJson ?? JSON.stringify(row)
          written.push({ event, row, rowJson: json })
        }
        if (failed) {
          for (let u = undo.length - 1; u >= 0; u--) undo[u]()
          seq = seqBefore
          for (let i = start; i < end; i++) {
            const { event } = entries[i]
            // Later entries of these entities were decided on top of this one: stale too.
            if (event.kind !== "created") broken.add(streamKey(event.type, event.id))
            outcomes.push(Stale)
          }
        } else {
          for (const entry of written) {
            const { event } = entry
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
            ev.command.push(c.command)
            ev.correlation.push(c.correlation)
            rowsAfter.set(streamKey(event.type, event.id), { type: event.type, id: event.id, version: event.version, schema: event.schema ?? 1, row: entry.rowJson ?? null })
            outcomes.push(entry)
          }
        }
        start = end
      }
      if (seq === head) {
        // Everything was stale: nothing to write.
        yield* q("cannot end the append", "rollback")
        return { outcomes, lastSeq: head, ...(replays.size > 0 ? { replays } : {}) }
      }
      // The keys of the submissions written, each with its entries as written (seqs and ids the log assigned).
      const keys = { key: [] as Array<string>, at: [] as Array<number>, result: [] as Array<string>, checksum: [] as Array<string> }
      for (const c of claims) {
        const written = outcomes.slice(c.first, c.first + c.count)
        if (written.length === 0 || !written.every(isWritten)) continue
        const result = keyPayload(c.fingerprint, c.at, written as ReadonlyArray<AppendEntry>)
        keys.key.push(c.key)
        keys.at.push(c.at)
        keys.result.push(result)
        keys.checksum.push(checksum(idempotencyKeyOf(c.key), result))
      }
      const rows = [...rowsAfter.values()]
      const types = [...counts]
      const views = new Map((batch.views ?? []).map((v) => [v.name, v.json]))
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
        seq,
        ev.command,
        ev.correlation,
        keys.key,
        keys.at,
        keys.result,
        keys.checksum
      ])
      yield* q("the commit failed (its outcome is unknown until the log is read again)", "commit")
      if (localOnly !== undefined) {
        return yield* new StoreFailed({
          reason: `the batch committed on the primary, but no standby confirmed it (${localOnly}); not acknowledged`
        })
      }
      return { outcomes, lastSeq: seq, ...(replays.size > 0 ? { replays } : {}) }
    })
  )
