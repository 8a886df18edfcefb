/**
 * Keyed views' entries on the PostgreSQL store (`view_entries`, schema.ts), written by each node's snapshots
 * (projections/views/keyed-pg-store.ts) and read on demand.
 *
 * Every node folds every commit in seq order, so an entry exact at seq s is the same whichever node folded it. A
 * node stores the entries it changed since its last snapshot as versions exact at the snapshot's seq `at`, with the
 * views' records (their `at` is the watermark a starting node folds on from), in one statement. It reads, per key,
 * the latest version at or before its own last snapshot: every change it folded after that is still in its memory,
 * and a version another node stored further on (ahead of this node's fold) is never handed to it. A version
 * superseded by one at or before `pruneBelow` is removed with the next snapshot that writes the key.
 *
 * Each version carries a checksum (records.ts `checksum`) of its key and text; a mismatch is a StoreError naming it.
 */
import { Effect, Either } from "effect"
import type { StoreError } from "../../domain/errors.ts"
import { RecordCorrupt } from "../record.ts"
import type { ViewEntryStore } from "../event-log.ts"
import type { PgConnectionShape } from "./connection.ts"
import { checksum, decodeOrFail, viewKey } from "./records.ts"
import { SCHEMA } from "./schema.ts"
import type { SyncReads } from "./sync-reads.ts"

/** The checksum's key of one version of an entry. */
const entryKey = (name: string, definition: string, key: string, at: number) => `w!${name}!${definition}!${key}@${at}`
const entryPayload = (text: string | null | undefined) => text ?? "null"

/** A version's text (null: removed), its checksum verified; throws RecordCorrupt naming it. */
const verified = (name: string, definition: string, key: string, at: unknown, text: unknown, sum: unknown): string | null => {
  const seq = Number(at)
  const entry = typeof text === "string" ? text : null
  const k = entryKey(name, definition, key, seq)
  if (checksum(k, entryPayload(entry)) !== sum) throw new RecordCorrupt(`corrupt record at key ${k}: checksum mismatch`)
  return entry
}

const decoded = <A>(f: () => A): Effect.Effect<A, StoreError> =>
  Effect.suspend(() => {
    const out = decodeOrFail(f)
    return Either.isLeft(out) ? Effect.fail(out.left) : Effect.succeed(out.right)
  })

const LATEST = `select distinct on (key) key, at::text as at, entry, checksum from ${SCHEMA}.view_entries`

export const makeViewEntryStore = (conn: PgConnectionShape, syncReads: SyncReads): ViewEntryStore => ({
  watermarks: Effect.map(
    conn.query<{ name: string; at: string }>("cannot read the views' snapshot seqs", `select name, at::text as at from ${SCHEMA}.views`),
    (r) => new Map(r.rows.map((row) => [row.name, Number(row.at)]))
  ),
  read: (name, definition, keys, upTo) =>
    keys.length === 0
      ? Effect.succeed(new Map())
      : Effect.flatMap(
        conn.query(
          `cannot read the entries of view ${name}`,
          `${LATEST} where name = $1 and definition = $2 and key = any($3::text[]) and at <= $4 order by key, at desc`,
          [name, definition, keys, upTo]
        ),
        (r) => decoded(() => new Map(r.rows.map((row) => [row.key as string, verified(name, definition, row.key, row.at, row.entry, row.checksum)])))
      ),
  readNow: (name, definition, key, upTo) => {
    const rows = syncReads.query(
      `cannot read the entries of view ${name}`,
      `select at::text, entry, checksum from ${SCHEMA}.view_entries where name = $1 and definition = $2 and key = $3 and at <= $4 order by at desc limit 1`,
      [name, definition, key, upTo]
    )
    if (rows.length === 0) return undefined
    const [at, entry, sum] = rows[0]
    const out = decodeOrFail(() => verified(name, definition, key, at, entry, sum))
    if (Either.isLeft(out)) throw out.left
    return out.right
  },
  range: (name, definition, after, limit, upTo) =>
    Effect.flatMap(
      conn.query(
        `cannot read the entries of view ${name}`,
        `${LATEST} where name = $1 and definition = $2 and ($3::text is null or key > $3) and at <= $4 order by key, at desc limit $5`,
        [name, definition, after ?? null, upTo, limit]
      ),
      (r) => decoded(() => r.rows.map((row) => ({ key: row.key as string, text: verified(name, definition, row.key, row.at, row.entry, row.checksum) })))
    ),
  store: (entries, records, at, pruneBelow) =>
    Effect.asVoid(conn.query(
      "cannot store the keyed views' entries",
      // One statement: the entries and the records that name their seq land together, or not at all.
      `with written as (
         insert into ${SCHEMA}.view_entries (name, definition, key, at, entry, checksum)
           select n, d, k, $5::bigint, e, c from unnest($1::text[], $2::text[], $3::text[], $4::text[], $6::text[]) as u(n, d, k, e, c)
         on conflict do nothing
       ), recorded as (
         insert into ${SCHEMA}.views as v (name, record, checksum, at)
           select * from unnest($7::text[], $8::text[], $9::text[], $10::bigint[])
         on conflict (name) do update set record = excluded.record, checksum = excluded.checksum, at = excluded.at
           where v.at <= excluded.at
       )
       delete from ${SCHEMA}.view_entries d using (
         select name, definition, key, max(at) as keep from ${SCHEMA}.view_entries
          where (name, definition, key) in (select * from unnest($1::text[], $2::text[], $3::text[])) and at <= $11
          group by name, definition, key
       ) k where d.name = k.name and d.definition = k.definition and d.key = k.key and d.at < k.keep`,
      [
        entries.map((e) => e.name),
        entries.map((e) => e.definition),
        entries.map((e) => e.key),
        entries.map((e) => e.text ?? null),
        at,
        entries.map((e) => checksum(entryKey(e.name, e.definition, e.key, at), entryPayload(e.text))),
        records.map((v) => v.name),
        records.map((v) => v.json),
        records.map((v) => checksum(viewKey(v.name), v.json)),
        records.map(() => at),
        pruneBelow
      ]
    ))
})
