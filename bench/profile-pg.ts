// Where one `wo run --store postgres://...` node's time and CPU go per durable write: a PostgreSQL
// primary and two synchronous standbys (scripts/pg-cluster.sh), one node under --cpu-prof, creates (BENCH_OP=set_price:
// set_price on 1,000 products seeded first; BENCH_OP=lend: the library sample's `lend` on 100 books and 1,000 members
// seeded first, as scenarios/cluster-lend.ts sends it) at BENCH_IN_FLIGHT (default 32) in flight for one measured window after a
// warm-up. Prints writes/s, batches/s, events
// per batch, the mean append (commit) time and the round trips per batch (PostgreSQL's statement count for the
// window, from pg_stat_statements when loaded, else from pg_stat_database's transactions), then the node's CPU by
// function for the window (bench/lib/cpuprofile.ts). Profile: bench/results/pg-node.cpuprofile (git-ignored; another
// folder: BENCH_PROFILE_OUT).
// BENCH_NODES=3 runs that many nodes on the cluster, the load split evenly over them (the scale-out bench's shape),
// each under --cpu-prof: the CPU table is their sum (the busiest node's profile kept, pg-node-<k>.cpuprofile), and
// each node's own account of its appends and its tailer (its last `store:` line, logged at Debug) is printed per batch:
// calls of append_batch, transactions opened, batches written by their first call, events read back by the tailer,
// and how many of those were its own batches read back (the log's length less the events its appends carried).
// BENCH_LOAD_ON=K sends the load to the first K nodes only (BENCH_LOAD_ON=1: the others only follow the log), and
// BENCH_PER_NODE=1 prints each node's own table after the summed one (a follower's cost apart from the writer's).
//   node --conditions=writeonce-source --import tsx bench/profile-pg.ts
//   BENCH_NODES=3 node --conditions=writeonce-source --import tsx bench/profile-pg.ts
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { monoUs, readWindow, renderSelfTimes } from './lib/cpuprofile.ts';
import { runLoad, type LoadRequest } from './lib/load.ts';
import { isRow, repoRoot, restCreate, restSetPrice, seedProducts } from './lib/wo.ts';
import { spawnWo } from '../testkit/spawn.ts';
import { seedLibrary, served } from './scenarios/cluster-lend.ts';

const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 32);
const LOAD_MS = Number(process.env.BENCH_PROFILE_MS ?? 5000);
const NODES = Number(process.env.BENCH_NODES ?? 1);
/** How many of the nodes take the load (the first ones; default all): BENCH_LOAD_ON=1 profiles the others as followers. */
const LOADED = Math.min(NODES, Number(process.env.BENCH_LOAD_ON ?? NODES));
/**
 * create (default), set_price (on 1,000 products seeded first, each call on one at random, as the scale-out bench) or
 * lend (the library sample's command, on 100 books seeded first, round the books as the cluster-lend bench)
 */
const OP = process.env.BENCH_OP === 'set_price' ? 'set_price' : process.env.BENCH_OP === 'lend' ? 'lend' : 'create';
const BOOKS = 100;
const MEMBERS = 1000;
const PRODUCTS = 1000;
const SCRIPT = join(repoRoot, 'scripts/pg-cluster.sh');

/** A node's account of its appends and its tailer, from its `store:` line at shutdown (postgres-log.ts). */
const storeLine = /store: (\d+) batches appended \((\d+) events\), (\d+) written by their first call, (\d+) calls of append_batch, (\d+) transactions; the tailer heard (\d+) notifications, made (\d+) fetches \((\d+) empty\), read (\d+) events(?: and took (\d+) from notifications)?(?:.*?the follower woke (\d+) times)?/;
const costOf = (output: string) => {
  const m = [...output.matchAll(new RegExp(storeLine, 'g'))].pop();
  if (!m) return undefined;
  const [batches, events, firstCall, calls, transactions, notifications, fetches, emptyFetches, rows, pushed, wakes] = m.slice(1).map(Number);
  // `pushed`: events the tailer took from notifications (absent from an older writeonce's line: none).
  return { batches, events, firstCall, calls, transactions, notifications, fetches, emptyFetches, rows, pushed: Number.isNaN(pushed) ? 0 : pushed, wakes };
};

const metric = (text: string, name: string) =>
  text.split('\n').filter((l) => l.startsWith(name)).reduce((a, l) => a + Number(l.split(' ').pop()), 0);

const dir = mkdtempSync(join(tmpdir(), 'wo-profile-pg-'));
chmodSync(dir, 0o755); // the servers run as the postgres user
const base = 20_000 + Math.floor(Math.random() * 12_000);
const url = execFileSync('bash', [SCRIPT, 'start', join(dir, 'pg'), String(base)], { encoding: 'utf8' }).trim().split('\n').pop()!;
const profDir = join(dir, 'prof');
const admin = new pg.Client({ host: '127.0.0.1', port: base, user: 'postgres', database: 'postgres' });
const nodes: Awaited<ReturnType<typeof spawnWo>>[] = [];
try {
  await admin.connect();
  for (let k = 0; k < NODES; k++) {
    nodes.push(await spawnWo(['run', OP === 'lend' ? 'examples/library' : 'examples/pricing', '--data', join(dir, `node${k}`), '--listen', '127.0.0.1:0', '--store', url], {
      readyTimeoutMs: 30_000,
      stopTimeoutMs: 10_000,
      env: { WO_LOG_LEVEL: 'Debug' },
      nodeArgs: ['--cpu-prof', '--cpu-prof-dir', join(profDir, String(k))],
    }));
  }
  if (OP === 'set_price') await seedProducts(nodes[0].url, PRODUCTS);
  const library = OP === 'lend' ? await seedLibrary(nodes[0].url, BOOKS, MEMBERS) : undefined;
  if (library) for (const wo of nodes) await served(wo.loopbackUrl, `/api/members/${library.members[MEMBERS - 1]}`);
  const request = (i: number): LoadRequest =>
    library !== undefined
      ? { method: 'POST', path: '/api/_commands/lend', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ book: library.books[i % BOOKS], member: library.members[i % MEMBERS] }) }
      : OP === 'create' ? restCreate(i) : restSetPrice(1 + (Math.imul(i, 2654435761) >>> 0) % PRODUCTS, 1 + (i % 1000));
  const check = (status: number, body: string) =>
    OP === 'lend' ? status === 200 && body.startsWith('{"command":"lend"') : isRow(status, body, OP === 'create' ? 201 : 200);
  const load = async (ms: number) => {
    const all = await Promise.all(nodes.slice(0, LOADED).map((wo, k) =>
      runLoad({ url: wo.url, concurrency: Math.max(1, Math.round(IN_FLIGHT / LOADED)), durationMs: ms, makeRequest: (i) => request(i * LOADED + k), check })));
    return { calls: all.reduce((a, r) => a + r.calls, 0), errors: all.reduce((a, r) => a + r.errors, 0), durationMs: Math.max(...all.map((r) => r.durationMs)), perNode: all.map((r) => r.calls) };
  };
  await load(2000);
  const scrape = async () => {
    let batches = 0, events = 0, commitS = 0;
    for (const wo of nodes) {
      const m = await (await fetch(`${wo.url}/metrics`)).text();
      batches += metric(m, 'wo_batches_total');
      events += metric(m, 'wo_batch_events_sum');
      commitS += metric(m, 'wo_commit_duration_seconds_sum');
    }
    const x = await admin.query<{ n: string }>('select sum(xact_commit + xact_rollback)::text as n from pg_stat_database');
    return { batches, events, commitS, xacts: Number(x.rows[0].n) };
  };
  const before = await scrape();
  const from = monoUs();
  const r = await load(LOAD_MS);
  const to = monoUs();
  await new Promise((res) => setTimeout(res, 600)); // the statistics collector's flush
  const after = await scrape();
  const batches = after.batches - before.batches;
  console.log(`${NODES} node(s), ${IN_FLIGHT} in flight, ${(r.calls / (r.durationMs / 1000)).toFixed(0)} ${OP}s/s (per node: ${r.perNode.join(', ')} calls), ${r.errors} errors`);
  console.log(`batches ${batches} (${(batches / (r.durationMs / 1000)).toFixed(0)}/s), ${((after.events - before.events) / batches).toFixed(1)} events/batch, append ${(((after.commitS - before.commitS) / batches) * 1000).toFixed(2)} ms mean`);
  console.log(`PostgreSQL transactions per batch (every connection: appends, the tailer's reads, polls): ${((after.xacts - before.xacts) / batches).toFixed(2)}`);
  await new Promise((res) => setTimeout(res, 2500)); // each node's last count (logged every 2 s)
  await Promise.all(nodes.map((wo) => wo.stop()));
  // The log's length, to split what each node's tailer read into the others' events and its own read back.
  const store = new pg.Client({ host: '127.0.0.1', port: base, user: 'postgres', database: 'writeonce' });
  await store.connect();
  const inLog = Number((await store.query<{ n: string }>('select count(*)::text as n from writeonce.events')).rows[0].n);
  await store.end();
  // Each node's whole run (warm-up included), per batch it appended.
  for (const [k, wo] of nodes.entries()) {
    const c = costOf(wo.output());
    if (!c) {
      console.log(`node ${k}: no store: line in its output:\n${wo.output().slice(-1500)}`);
      continue;
    }
    const per = (v: number) => (c.batches ? (v / c.batches).toFixed(2) : '-');
    console.log(`node ${k}: ${c.batches} batches, ${per(c.events)} events/batch; per batch: ${per(c.calls)} calls, ${per(c.transactions)} transactions, ` +
      `${per(c.firstCall)} written by the first call; tailer: ${per(c.notifications)} notifications, ${per(c.fetches)} fetches (${per(c.emptyFetches)} empty), ${per(c.rows)} events read, ${per(c.pushed)} taken from notifications` +
      (Number.isNaN(c.wakes) ? '' : `, ${per(c.wakes)} wake-ups`));
    // What it read beyond the others' events (every event in the log but those its appends carried; an entry refused
    // as stale and carried again counts twice there, so this is a floor): its own batches read back.
    console.log(`node ${k}: of the ${inLog} events in the log, ${c.events} carried by its appends; its tailer read ${c.rows} and took ${c.pushed} from notifications: ${c.rows + c.pushed - (inLog - c.events)} of its own taken back`);
  }
  const profs = await Promise.all(nodes.map((_, k) => readWindow(join(profDir, String(k)), from, to, join(process.env.BENCH_PROFILE_OUT ?? join(repoRoot, 'bench', 'results'), NODES === 1 ? 'pg-node.cpuprofile' : `pg-node-${k}.cpuprofile`))));
  const sum = (maps: Map<string, number>[]) => {
    const out = new Map<string, number>();
    for (const m of maps) for (const [key, v] of m) out.set(key, (out.get(key) ?? 0) + v);
    return out;
  };
  const prof = { total: profs.reduce((a, p) => a + p.total, 0), byFunction: sum(profs.map((p) => p.byFunction)), byArea: sum(profs.map((p) => p.byArea)), inclusive: sum(profs.map((p) => p.inclusive)), windowed: profs.every((p) => p.windowed) };
  console.log(`wo CPU (main threads, summed): ${(prof.total / r.calls).toFixed(0)} µs/${OP} (per node: ${profs.map((p) => (p.total / r.calls).toFixed(0)).join(', ')})`);
  console.log(renderSelfTimes(prof, r.calls, Number(process.env.BENCH_TOP ?? 25), OP));
  // BENCH_PER_NODE=1: each node's own table as well (a follower's cost apart from the writer's).
  if (process.env.BENCH_PER_NODE === '1') for (const [k, p] of profs.entries()) console.log(`\nnode ${k}:\n${renderSelfTimes(p, r.calls, Number(process.env.BENCH_TOP ?? 25), OP)}`);
} finally {
  await admin.end().catch(() => undefined);
  await Promise.allSettled(nodes.map((wo) => wo.stop()));
  execFileSync('bash', [SCRIPT, 'stop', join(dir, 'pg')]);
  rmSync(dir, { recursive: true, force: true });
}
