// The least several nodes on one PostgreSQL log can do per durable create, for the cluster-cache bench's "total CPU
// per write, 3 nodes / 1" (bench/scenarios/cluster-floor.ts runs it). Each process is one node: floor-core.ts's HTTP
// server and group commit, each group one statement that takes its seqs from a sequence, inserts the events and
// rows, and notifies the group's events (with this node's tag) on one channel, as `wo run --store` does; and a
// LISTEN connection that applies the other nodes' events to its rows (a Map), as a writeonce node's tailer does.
// No checks across nodes (creates only, each node's ids its own: `<tag>-<n>`), no views, no idempotency keys, no
// fencing: the floor of the work, not a store.
// $STORE_URL: the cluster's URL (the first host is the primary); $FLOOR_TAG: this node's tag; $FLOOR_FRESH=1: the
// first node makes the tables fresh (the others start once it serves).
import { eventData, floorServer, type FloorWrite } from './floor-core.ts';
import { listenAndAnnounce } from './listen.ts';
import { primaryClient } from './primary-client.ts';

const tag = process.env.FLOOR_TAG ?? 'a';
const client = await primaryClient('pg-cluster-floor');
if (process.env.FLOOR_FRESH === '1') {
  await client.query(`
    drop table if exists cfloor_events, cfloor_rows;
    drop sequence if exists cfloor_seq;
    create sequence cfloor_seq;
    create table cfloor_events (seq bigint primary key, type text not null, id text not null, version int not null, kind text not null, data jsonb not null);
    create table cfloor_rows (type text not null, id text not null, version int not null, row jsonb not null, primary key (type, id));
  `);
}

// One statement per group: events (seqs from the sequence), rows, and one notification of the group's events.
const WRITE = `
  with e as (
    insert into cfloor_events (seq, type, id, version, kind, data)
    select nextval('cfloor_seq'), 'products', i, 1, 'created', d from unnest($1::text[], $2::jsonb[]) as t(i, d)
    returning seq, id, data
  ), r as (
    insert into cfloor_rows (type, id, version, row)
    select 'products', i, 1, w from unnest($1::text[], $3::jsonb[]) as t(i, w)
  )
  select pg_notify('cfloor', $4 || ' ' || (select json_agg(json_build_array(e.seq, e.id, e.data) order by e.seq)::text from e))`;

const followed = new Map<string, unknown>();
const follower = await primaryClient('pg-cluster-floor');
follower.on('notification', (n) => {
  const text = n.payload ?? '';
  const space = text.indexOf(' ');
  if (text.slice(0, space) === tag) return; // its own group: applied as it was answered
  for (const [seq, id, data] of JSON.parse(text.slice(space + 1)) as Array<[number, string, Record<string, unknown>]>) followed.set(id, { seq, id, version: 1, ...data });
});
await follower.query('listen cfloor');

let n = 0;
const write = async (group: ReadonlyArray<FloorWrite>) => {
  // This node's ids: the HTTP floor numbers its creates 1, 2, …; on several nodes they are made unique by the tag.
  const ids = group.map(() => `${tag}-${++n}`);
  await client.query(WRITE, [ids, group.map((w) => JSON.stringify(eventData(w))), group.map((w, k) => JSON.stringify({ ...w.row, id: ids[k] })), tag]);
};

listenAndAnnounce(floorServer(write));
