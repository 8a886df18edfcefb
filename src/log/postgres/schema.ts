/**
 * The tables of a PostgreSQL store, in the `writeonce` schema, created or upgraded at startup. Several nodes may
 * start at once: the upgrade runs in one transaction under an advisory lock, and each step is recorded in
 * `log_head.store_version`, so it runs once. A store written by a newer writeonce is refused by name.
 *
 *   events    the log: one row per event; seq is gap-free and equals commit order (the writer holds the log_head
 *             row lock from the first read to the commit); unique (type, id, version) backs the version check
 *   log_head  one row: the last committed seq (the append locks it: one writer at a time, across nodes too)
 *   rows      the inline projection, written in the event's transaction (restart needs no replay); a deleted
 *             row stays as a tombstone (row NULL) so that its version is still checked
 *   types     per type: the highest id handed out and how many rows are live (a lost row is then reported)
 *   views     each view's stored state (format 1; no longer written: each node folds its views from the log)
 *   sessions  legacy MCP sessions, shared by every node (format 2; until format 3 with their subscriptions inline)
 *   session_subscriptions  one row per subscription of a session, so that a subscribe writes one row (format 3)
 *
 * Format 4 adds the nullable `events.command` and `events.correlation` (an app command's name and the id shared by
 * its events); older events keep NULL there and their checksums (records.ts).
 *
 * Format 5 adds `idempotency_keys`: one row per idempotency key a write carried, inserted in that write's
 * transaction: when (`at`, ms, for pruning), and its request's fingerprint and answer (`result`, log/key-record.ts),
 * checksummed under `k!<key>`. The append reads the batch's keys under the head lock (append.ts).
 *
 * `data`, `params` and `row` are `json`, not `jsonb`: json keeps the text exactly as written, so the checksum
 * (records.ts) covers the bytes the writer produced; jsonb would reorder keys and reformat numbers.
 */
import { Effect } from "effect"
import { StoreFailed } from "../../domain/errors.ts"
import type { PgConnectionShape } from "./connection.ts"

export const SCHEMA = "writeonce"
/** The notification channel: the payload is the new head seq (for the tailers of a later release). */
export const HEAD_CHANNEL = "writeonce_log"

/** Upgrade steps; step i takes a store from version i to i + 1. Append only. */
const STEPS: ReadonlyArray<string> = [
  `
  create table ${SCHEMA}.events (
    seq bigint primary key,
    type text not null,
    id text not null,
    version integer not null check (version >= 1),
    kind text not null check (kind in ('created', 'updated', 'deleted', 'invoked')),
    schema integer not null,
    at bigint not null,
    method text,
    params json,
    data json not null,
    checksum text not null,
    unique (type, id, version)
  );
  create table ${SCHEMA}.rows (
    type text not null,
    id text not null,
    version integer not null,
    schema integer not null,
    row json,
    checksum text not null,
    primary key (type, id)
  );
  create index rows_in_id_order on ${SCHEMA}.rows (type, length(id), id);
  create table ${SCHEMA}.types (
    type text primary key,
    last_id bigint not null,
    row_count bigint not null,
    checksum text not null
  );
  create table ${SCHEMA}.views (
    name text primary key,
    record text not null,
    checksum text not null
  );
  `,
  `
  create table ${SCHEMA}.sessions (
    id text primary key,
    record text not null,
    last_seen bigint not null
  );
  `,
  `
  create table ${SCHEMA}.session_subscriptions (
    session_id text not null references ${SCHEMA}.sessions (id) on delete cascade,
    uri text not null,
    since bigint not null,
    primary key (session_id, uri)
  );
  insert into ${SCHEMA}.session_subscriptions (session_id, uri, since)
    select s.id, e.key, e.value::bigint
      from ${SCHEMA}.sessions s, json_each_text(s.record::json -> 'subscriptions') e
    on conflict do nothing;
  update ${SCHEMA}.sessions set record = (record::jsonb - 'subscriptions')::text where record::jsonb ? 'subscriptions';
  `,
  `
  alter table ${SCHEMA}.events add column if not exists command text, add column if not exists correlation text;
  `,
  `
  create table if not exists ${SCHEMA}.idempotency_keys (
    key text primary key,
    at bigint not null,
    result text not null,
    checksum text not null
  );
  create index if not exists idempotency_keys_by_time on ${SCHEMA}.idempotency_keys (at);
  `
]

export const STORE_VERSION = STEPS.length

/** Creates the tables, or brings them to this release's version; idempotent and safe to run from several nodes. */
export const ensureSchema = (conn: PgConnectionShape) =>
  Effect.scoped(
    Effect.gen(function* () {
      const client = yield* conn.client
      const run = (what: string, text: string, values?: ReadonlyArray<unknown>) =>
        Effect.tryPromise({
          try: () => client.query(text, values as Array<unknown> | undefined),
          catch: (e) => new StoreFailed({ reason: `${what}: ${e instanceof Error ? e.message : String(e)}` })
        })
      yield* run("cannot start the schema upgrade", "begin")
      yield* run("cannot lock the schema", "select pg_advisory_xact_lock(hashtext('writeonce schema'))")
      yield* run("cannot create the writeonce schema", `create schema if not exists ${SCHEMA}`)
      yield* run(
        "cannot create the log head",
        `create table if not exists ${SCHEMA}.log_head (
           one boolean primary key default true check (one),
           seq bigint not null,
           store_version integer not null
         );
         insert into ${SCHEMA}.log_head (one, seq, store_version) values (true, 0, 0) on conflict do nothing`
      )
      const { rows } = yield* run("cannot read the store version", `select store_version from ${SCHEMA}.log_head`)
      const from = Number(rows[0].store_version)
      if (from > STORE_VERSION) {
        yield* run("rollback", "rollback")
        return yield* new StoreFailed({
          reason: `this PostgreSQL store has format ${from}; this writeonce reads format ${STORE_VERSION} (upgrade writeonce)`
        })
      }
      for (let v = from; v < STORE_VERSION; v++) {
        yield* run(`cannot upgrade the store to format ${v + 1}`, STEPS[v])
      }
      if (from < STORE_VERSION) yield* run("cannot record the store version", `update ${SCHEMA}.log_head set store_version = $1`, [STORE_VERSION])
      yield* run("cannot commit the schema upgrade", "commit")
      return { from, to: STORE_VERSION }
    })
  )
