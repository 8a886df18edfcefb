// The durable-write floor on PostgreSQL (the server is bench/peers/floor-core.ts): plain `pg`, each group
// of waiting requests one statement (so one round trip and one transaction, durable on the synchronous standby as
// the cluster is configured) inserting the events and upserting the rows. $STORE_URL: the cluster's URL; the first
// host is the primary (scripts/pg-cluster.sh). Tables floor_events and floor_rows in the public schema, made fresh.
import { eventData, floorServer, type FloorWrite } from './floor-core.ts';
import { listenAndAnnounce } from './listen.ts';
import { primaryClient } from './primary-client.ts';

const client = await primaryClient('pg-floor');
await client.query(`
  drop table if exists floor_events, floor_rows;
  create table floor_events (seq bigint primary key, type text not null, id text not null, version int not null, kind text not null, data jsonb not null);
  create table floor_rows (type text not null, id text not null, version int not null, row jsonb not null, primary key (type, id));
`);

const WRITE = `
  with e as (
    insert into floor_events (seq, type, id, version, kind, data)
    select s, 'products', i, v, k, d from unnest($1::bigint[], $2::text[], $3::int[], $4::text[], $5::jsonb[]) as t(s, i, v, k, d)
  )
  insert into floor_rows (type, id, version, row)
  select 'products', i, v, r from unnest($6::text[], $7::int[], $8::jsonb[]) as t(i, v, r)
  on conflict (type, id) do update set version = excluded.version, row = excluded.row`;

const write = async (group: ReadonlyArray<FloorWrite>) => {
  // A row set twice in one group is upserted once, at its last version (one statement cannot update a row twice).
  const last = new Map(group.map((w) => [w.row.id, w.row]));
  await client.query(WRITE, [
    group.map((w) => w.seq),
    group.map((w) => w.row.id),
    group.map((w) => w.row.version),
    group.map((w) => w.kind),
    group.map((w) => JSON.stringify(eventData(w))),
    [...last.keys()],
    [...last.values()].map((r) => r.version),
    [...last.values()].map((r) => JSON.stringify(r)),
  ]);
};

listenAndAnnounce(floorServer(write));
