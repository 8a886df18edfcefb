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
 *   types     per type: the highest id handed out (to a create, or in a block of ids a node reserved: id-blocks) and
 *             how many rows are live (a lost row is then reported); both moved under the database's own row lock,
 *             the checksum computed there too (`type_checksum`), so that nodes creating in one type never wait on
 *             each other's counts
 *   views     each view's value as some node folded it, exact at seq `at`: the log is totally ordered, so a value
 *             stored at `at` by any node is exact there, and a starting node folds only the events after it. An
 *             older snapshot never replaces a newer one (the upsert's `where`, postgres-log.ts).
 *   view_entries  keyed views' entries, each version exact at the snapshot seq `at` a node wrote it at (with the
 *             view's `views` record, in one statement): a node reads the latest version at or before its own last
 *             snapshot, so another node's newer snapshot never hands it an entry ahead of its fold
 *   sessions, session_subscriptions  legacy MCP sessions, shared by every node
 *   idempotency_keys  the idempotency keys writes carried, each written in its write's transaction
 *
 * `data`, `params`, `actor` and `row` are `json`, not `jsonb`: json keeps the text exactly as written, so the checksum
 * (records.ts) covers the bytes the writer produced; jsonb would reorder keys and reformat numbers.
 */
import { Effect } from "effect"
import { StoreFailed } from "../../domain/errors.ts"
import { CRC32C_TABLE } from "../crc32c.ts"
import { EVENT_ROW_COLUMNS } from "./records.ts"
import type { PgConnectionShape } from "./connection.ts"

export const SCHEMA = "writeonce"
/**
 * The notification channel: the payload is `<new head seq> <tag of the node that wrote it>`, then, when they fit,
 * ` <the commit's events>` as a JSON array of events, each an array of records.ts EVENT_ROW_COLUMNS (follow.ts).
 */
export const HEAD_CHANNEL = "writeonce_log"
/** PostgreSQL refuses a notification's payload of this many bytes or more (in its default build). */
export const NOTIFY_PAYLOAD_MOST = 8000
/** A batch of more events is not sent in its notification (their JSON would not fit, or hardly): it is read. */
export const PUSHED_EVENTS_MOST = 64
/**
 * A carried event's column, in the form the follower's read of the table gives (records.ts EVENT_COLUMNS): each
 * event is a JSON array of EVENT_ROW_COLUMNS (no names: about half the size, so twice the events fit). The JSON
 * columns are the batch's text already.
 */
const pushedColumn = (column: string) => (column === "seq" ? "(x.seq + v_shift)::text" : column === "at" ? "x.at::text" : `x.${column}`)

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
  // Format 2: legacy MCP sessions.
  `
  create table ${SCHEMA}.sessions (
    id text primary key,
    record text not null,
    last_seen bigint not null
  );
  `,
  // Format 3: one row per subscription of a session, so that a subscribe writes one row (they leave the record).
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
  // Format 4: an app command's name and the id shared by its events; older events keep NULL there and their
  // checksums (records.ts).
  `
  alter table ${SCHEMA}.events add column if not exists command text, add column if not exists correlation text;
  `,
  // Format 5: one row per idempotency key a write carried, inserted in that write's transaction: when (`at`, ms, for
  // pruning), and its request's fingerprint and answer (`result`, log/key-record.ts), checksummed under `k!<key>`.
  // The append reads the batch's keys under the head lock (append.ts).
  `
  create table if not exists ${SCHEMA}.idempotency_keys (
    key text primary key,
    at bigint not null,
    result text not null,
    checksum text not null
  );
  create index if not exists idempotency_keys_by_time on ${SCHEMA}.idempotency_keys (at);
  `,
  // Format 6: a view record is a snapshot exact at `at`; the records format 1 wrote with every batch are dropped.
  `
  delete from ${SCHEMA}.views;
  alter table ${SCHEMA}.views add column if not exists at bigint not null default 0;
  `,
  // Format 7 changes no data: events are written from then on with a checksum that does not depend on their seq
  // (records.ts), which an older writeonce would take for a corrupt event; the step makes it refuse the store by
  // name instead. Events written before keep their checksums.
  `
  comment on column ${SCHEMA}.events.checksum is
    'CRC-32C (records.ts): 8 hex keyed by e!<seq> (before format 7), or @ and 8 hex keyed by e!<type>/<id>@<version>';
  `,
  // Format 8: who made each event (domain/actor.ts), as the JSON text the writer produced (its checksum covers it:
  // records.ts). Older events keep NULL there, and their checksums; an older writeonce refuses the store by name
  // rather than write events without it.
  `
  alter table ${SCHEMA}.events add column if not exists actor json;
  `,
  // Format 9: keyed views' entries (view-entries.ts), versioned by the snapshot seq `at` they are exact at; `entry`
  // NULL is a removed entry (a tombstone, which hides an older version).
  `
  create table if not exists ${SCHEMA}.view_entries (
    name text not null,
    definition text not null,
    key text collate "C" not null,
    at bigint not null,
    entry text,
    checksum text not null,
    primary key (name, definition, key, at)
  );
  `
]

export const STORE_VERSION = STEPS.length

/**
 * The append of one batch (log/postgres/append.ts), one statement: under the log_head lock, if the log is as the
 * batch was planned on (the head, which of its keys are stored, its entities' versions, its creates' ids),
 * write the plan and notify `<new head> <node tag>` (and the events, when they fit), and answer null.
 *
 * Creates: an id the store handed out (at most the type's `last_id`: a node's block) is written if no row has it
 * (`taken` answers those that do); a type listed with an expected `last_id` (`p_cnt_last`, not null: the plan gave
 * the next ids past it, no block) must be exactly there. The counters are moved, not checked: `last_id` to the
 * highest id written, `row_count` by the batch's creates minus its deletes (`t_rows`), their checksum computed here. A shiftable batch (`p_shiftable`: its events'
 * checksums do not depend on their seqs, it claims no idempotency key and stores no view record, whose answers and
 * records would name seqs) whose picture is right but for the head (other nodes committed since: the head moved
 * forward) is written all the same, after them: its seqs and its new head moved by as many, answered as
 * `{"shift": n}`. Its entities' versions and its types' counters are as planned, so the plan on the log as it is
 * would be the same but for the seqs.
 *
 * References (appended after the plan's arguments: `ref_*`, `del_*`): each referenced row flagged `ref_checked` must
 * be live, and no live row may reference a row the batch deletes flagged `del_checked` (`del_*`: the deleted row,
 * and a field that may reference it). A row that references it and that the deciding node did not see was written
 * after the seq its rows stood at (`ref_since`): only the events past it are read, through the events' primary key.
 * The answer names, among all of them (flagged or not: entries the plan left out for another reason), the
 * referenced rows that are not live (`missing`) and the deleted ones still referenced (`referenced`); the plan
 * leaves out the entries that need them.
 *
 * Otherwise write nothing and answer the log
 * as it is: by an error WO001 whose detail is that answer when the call runs alone (no commit to wait for), or as
 * the result, the lock kept, in the caller's transaction. Replaced at every start (CREATE OR REPLACE), so a store of
 * any format gets this release's: no store format of its own (an older release's signature, without `p_shiftable`,
 * is left for its nodes).
 */
const APPEND_FUNCTION = `
create or replace function ${SCHEMA}.append_batch(
  p_alone boolean, p_shiftable boolean, p_head bigint, p_claims text[], p_present text[],
  p_ent_types text[], p_ent_ids text[], p_ent_versions int[], p_cnt_types text[], p_cnt_last bigint[],
  e_seq bigint[], e_type text[], e_id text[], e_version int[], e_kind text[], e_schema int[], e_at bigint[], e_method text[],
  e_params text[], e_data text[], e_checksum text[], e_command text[], e_correlation text[], e_actor text[],
  r_type text[], r_id text[], r_version int[], r_schema int[], r_row text[], r_checksum text[],
  t_type text[], t_last bigint[], t_rows bigint[],
  v_name text[], v_record text[], v_checksum text[],
  k_key text[], k_at bigint[], k_result text[], k_checksum text[],
  p_new_head bigint, p_tag text,
  ref_since bigint, ref_types text[], ref_ids text[], ref_checked boolean[],
  del_types text[], del_ids text[], del_by_types text[], del_by_fields text[], del_checked boolean[]
) returns json language plpgsql volatile as $fn$
declare
  v_head bigint;
  v_shift bigint := 0;
  v_log json;
  v_still_referenced boolean := false;
  v_referenced jsonb := '[]';
  v_payload text;
  v_events text;
begin
  select h.seq into v_head from ${SCHEMA}.log_head h for update;
  -- Deletes of referenced rows: the rows written since the deciding node's rows that reference one, under the lock.
  -- EXECUTE plans it for this call's values: the events past ref_since are few and read by their primary key, where
  -- a plan cached for any value could read every event of the referencing type.
  if cardinality(del_types) > 0 then
    execute 'select coalesce(bool_or(d.checked), false), coalesce(jsonb_agg(distinct jsonb_build_object(''type'', d.type, ''id'', d.id)), ''[]'')
      from (select x.type, x.id, x.checked
        from unnest($2, $3, $4, $5, $6) as x(type, id, by_type, by_field, checked)
        join ${SCHEMA}.events e on e.seq > $1 and e.type = x.by_type
        join ${SCHEMA}.rows r on r.type = e.type and r.id = e.id
        where r.row is not null and r.row ->> x.by_field = x.id and not (r.type = x.type and r.id = x.id)) d'
      into v_still_referenced, v_referenced
      using ref_since, del_types, del_ids, del_by_types, del_by_fields, del_checked;
  end if;
  -- Only the head moved (forward, from a head the caller pictured): written after the others' commits, if the other
  -- checks pass. Keys and view records name seqs: never shifted, whatever the caller says.
  if p_shiftable and p_head >= 0 and v_head > p_head and cardinality(p_claims) = 0 and cardinality(v_name) = 0 then
    v_shift := v_head - p_head;
  end if;
  -- Each check only when the batch has something for it (CASE: the branch not taken is not run; in parentheses,
  -- or PL/pgSQL would end the IF's condition at the THEN inside it).
  if v_head = p_head + v_shift
    and (case when cardinality(p_claims) = 0 then cardinality(p_present) = 0 else
      (select count(*) from ${SCHEMA}.idempotency_keys k where k.key = any(p_claims)) = cardinality(p_present)
      and (select count(*) from ${SCHEMA}.idempotency_keys k where k.key = any(p_present)) = cardinality(p_present) end)
    and (case when cardinality(p_ent_types) = 0 then true else not exists (
      select 1 from unnest(p_ent_types, p_ent_ids, p_ent_versions) as x(type, id, version)
      left join ${SCHEMA}.rows r on r.type = x.type and r.id = x.id
      where coalesce(r.version, 0) <> x.version) end)
    -- Creates: no row has the id, and it was handed out (a block: at most last_id; the next ids: last_id as planned).
    and (case when cardinality(p_cnt_types) = 0 then true else not exists (
      select 1 from unnest(e_type, e_id, e_kind) as x(type, id, kind)
      join ${SCHEMA}.rows r on r.type = x.type and r.id = x.id
      where x.kind = 'created')
      and not exists (
      select 1 from unnest(p_cnt_types, p_cnt_last) as x(type, last_id)
      left join ${SCHEMA}.types t on t.type = x.type
      where (x.last_id is not null and coalesce(t.last_id, 0) <> x.last_id)
        or (x.last_id is null and coalesce(t.last_id, 0) < (select max(e.id::bigint) from unnest(e_type, e_id, e_kind) as e(type, id, kind)
                                                           where e.kind = 'created' and e.type = x.type))) end)
    -- References: every target live (no deleted row referenced: above).
    and (case when cardinality(ref_types) = 0 then true else not exists (
      select 1 from unnest(ref_types, ref_ids, ref_checked) as x(type, id, checked)
      left join ${SCHEMA}.rows r on r.type = x.type and r.id = x.id
      where x.checked and r.row is null) end)
    and not v_still_referenced
  then
    insert into ${SCHEMA}.events (seq, type, id, version, kind, schema, at, method, params, data, checksum, command, correlation, actor)
      select x.seq + v_shift, x.type, x.id, x.version, x.kind, x.schema, x.at, x.method, x.params::json, x.data::json, x.checksum, x.command, x.correlation, x.actor::json
      from unnest(e_seq, e_type, e_id, e_version, e_kind, e_schema, e_at, e_method, e_params, e_data, e_checksum, e_command, e_correlation, e_actor)
        as x(seq, type, id, version, kind, schema, at, method, params, data, checksum, command, correlation, actor);
    insert into ${SCHEMA}.rows as r (type, id, version, schema, row, checksum)
      select x.type, x.id, x.version, x.schema, x.row::json, x.checksum
      from unnest(r_type, r_id, r_version, r_schema, r_row, r_checksum) as x(type, id, version, schema, row, checksum)
      on conflict (type, id) do update
        set version = excluded.version, schema = excluded.schema, row = excluded.row, checksum = excluded.checksum;
    -- The statements a batch has nothing for are not run (a set_price batch: no counters, views or keys).
    if cardinality(t_type) > 0 then
      insert into ${SCHEMA}.types as t (type, last_id, row_count, checksum)
        select x.type, x.last_id, x.delta, ${SCHEMA}.type_checksum(x.type, x.last_id, x.delta)
        from unnest(t_type, t_last, t_rows) as x(type, last_id, delta)
        on conflict (type) do update set last_id = greatest(t.last_id, excluded.last_id), row_count = t.row_count + excluded.row_count,
          checksum = ${SCHEMA}.type_checksum(t.type, greatest(t.last_id, excluded.last_id), t.row_count + excluded.row_count);
    end if;
    if cardinality(v_name) > 0 then
      insert into ${SCHEMA}.views as v (name, record, checksum)
        select * from unnest(v_name, v_record, v_checksum)
        on conflict (name) do update set record = excluded.record, checksum = excluded.checksum;
    end if;
    if cardinality(k_key) > 0 then
      insert into ${SCHEMA}.idempotency_keys (key, at, result, checksum)
        select * from unnest(k_key, k_at, k_result, k_checksum);
    end if;
    update ${SCHEMA}.log_head set seq = p_new_head + v_shift;
    -- The other nodes' followers take a small batch's events from its notification (each the events table's columns
    -- as they read them, in a JSON array), not from the table; a payload that would not fit names the head alone.
    v_payload := (p_new_head + v_shift)::text || ' ' || p_tag;
    if cardinality(e_seq) <= ${PUSHED_EVENTS_MOST} then
      v_events := (select json_agg(json_build_array(${EVENT_ROW_COLUMNS.map(pushedColumn).join(", ")}) order by x.seq)::text
        from unnest(e_seq, e_type, e_id, e_version, e_kind, e_schema, e_at, e_method, e_params, e_data, e_checksum, e_command, e_correlation, e_actor)
          as x(seq, type, id, version, kind, schema, at, method, params, data, checksum, command, correlation, actor));
      if octet_length(v_payload) + 1 + octet_length(v_events) < ${NOTIFY_PAYLOAD_MOST} then
        v_payload := v_payload || ' ' || v_events;
      end if;
    end if;
    perform pg_notify('${HEAD_CHANNEL}', v_payload);
    if v_shift = 0 then
      return null;
    end if;
    return json_build_object('shift', v_shift::text);
  end if;
  v_log := json_build_object(
    'head', v_head::text,
    'keys', (select coalesce(json_agg(json_build_object('key', k.key, 'result', k.result, 'checksum', k.checksum)), '[]'::json)
             from ${SCHEMA}.idempotency_keys k where k.key = any(p_claims)),
    'versions', (select coalesce(json_agg(json_build_object('type', r.type, 'id', r.id, 'version', r.version)), '[]'::json)
                 from unnest(p_ent_types, p_ent_ids) as x(type, id) join ${SCHEMA}.rows r on r.type = x.type and r.id = x.id),
    'types', (select coalesce(json_agg(json_build_object('type', t.type, 'last_id', t.last_id::text, 'row_count', t.row_count::text, 'checksum', t.checksum)), '[]'::json)
              from ${SCHEMA}.types t where t.type = any(p_cnt_types)),
    'taken', (select coalesce(json_agg(json_build_object('type', x.type, 'id', x.id)), '[]'::json)
              from unnest(e_type, e_id, e_kind) as x(type, id, kind)
              join ${SCHEMA}.rows r on r.type = x.type and r.id = x.id where x.kind = 'created'),
    'missing', (select coalesce(json_agg(json_build_object('type', x.type, 'id', x.id)), '[]'::json)
                from unnest(ref_types, ref_ids) as x(type, id)
                left join ${SCHEMA}.rows r on r.type = x.type and r.id = x.id where r.row is null),
    'referenced', v_referenced);
  if p_alone then
    raise exception 'the log is not as the batch was planned on' using errcode = 'WO001', detail = v_log::text;
  end if;
  return v_log;
end
$fn$`

/**
 * The checksum of a types row (records.ts: CRC-32C over `t!<type>`, a NUL, then `<last_id>\n<row_count>`), computed
 * in the database: the append moves the counters by deltas and a reservation moves `last_id`, each under the row's
 * own lock, so only the database knows the values written. Replaced at every start, like the append function.
 */
const TYPE_CHECKSUM_FUNCTION = `
create or replace function ${SCHEMA}.type_checksum(p_type text, p_last bigint, p_rows bigint) returns text
language plpgsql immutable as $fn$
declare
  v_table bigint[] := '{${Array.from(CRC32C_TABLE, (n) => n >>> 0).join(",")}}';
  v_bytes bytea := convert_to('t!' || p_type, 'UTF8') || '\\x00'::bytea || convert_to(p_last::text || chr(10) || p_rows::text, 'UTF8');
  v_crc bigint := 4294967295;
begin
  for i in 0 .. length(v_bytes) - 1 loop
    v_crc := v_table[((v_crc # get_byte(v_bytes, i)) & 255) + 1] # (v_crc >> 8);
  end loop;
  return lpad(to_hex(v_crc # 4294967295), 8, '0');
end
$fn$`

/**
 * Reserves the next `$2` ids of type `$1` for one node (commands/id-blocks.ts), one statement: `last_id` moves past
 * them under the types row's lock, so no other reservation and no create is handed one of them; answers the new
 * `last_id`, the block's last id. A block its node never uses (the node was killed) is skipped: ids are never reused.
 */
export const RESERVE_IDS = `
insert into ${SCHEMA}.types as t (type, last_id, row_count, checksum) values ($1, $2, 0, ${SCHEMA}.type_checksum($1, $2, 0))
on conflict (type) do update set last_id = t.last_id + excluded.last_id, checksum = ${SCHEMA}.type_checksum(t.type, t.last_id + excluded.last_id, t.row_count)
returning last_id::text as last_id`

/**
 * Gives back the unused end of a node's last block of each type (`$1`) at its clean stop, one statement: `last_id`
 * moves back from the block's last id (`$3`) to the highest id the node gave (`$2`), only if it is still the
 * block's last (no reservation came after the block; under the types row's lock). Then no id above the new
 * `last_id` was ever handed to anyone else, and none is in use: ids stay unique. Answers the types it moved.
 */
export const RELEASE_IDS = `
update ${SCHEMA}.types as t set last_id = x.keep, checksum = ${SCHEMA}.type_checksum(t.type, x.keep, t.row_count)
from unnest($1::text[], $2::bigint[], $3::bigint[]) as x(type, keep, block_last)
where t.type = x.type and t.last_id = x.block_last and x.keep < x.block_last
returning t.type`

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
      yield* run("cannot create the checksum function", TYPE_CHECKSUM_FUNCTION)
      yield* run("cannot create the append function", APPEND_FUNCTION)
      yield* run("cannot commit the schema upgrade", "commit")
      return { from, to: STORE_VERSION }
    })
  )
