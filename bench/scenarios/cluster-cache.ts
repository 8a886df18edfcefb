// A node on PostgreSQL is a cache of the store, not a replica: what a node costs as the data grows and as nodes
// are added.
//  - start: `wo run examples/pricing --store` from spawn to serving, on a store of `rows` products (1,000,000 in a
//    full run) against an empty store, the two alternated `starts` times (medians compared); each store's first
//    start, which folds and stores the view's snapshot, is not measured;
//  - memory: the node's private memory (RssAnon + RssShmem) once it has read every row once (a walk of GET
//    /api/products, 1,000 a page) and a full GC was forced, less the row cache's bound (WO_ROW_CACHE, 64 MiB),
//    against an empty store's node at ready, also after a forced GC: as scale.ts counts the embedded store's;
//  - CPU per write: durable creates and set_price through 3 nodes (the load split evenly) against 1 node, the wo
//    processes' CPU summed, on one store; then the same for creates through the floor of several nodes on one log
//    (bench/peers/pg-cluster-floor.ts: plain `pg`, group commit, a notification per group that the other nodes apply
//    to a Map), 1 node against 3, on a database of its own: what 3 nodes cost over 1 on this machine whatever the
//    code.
// All on the cluster of scripts/pg-cluster.sh (a primary and two synchronous standbys on loopback).
//  - blocking store reads: reads of the store that blocked a node's thread in each write window (a row a decision
//    read that the writer had not read ahead: wo_row_store_sync_reads_total), expected 0.
// Alone: `node --conditions=writeonce-source --import tsx bench/scenarios/cluster-cache.ts [--quick] [--rows 1000000]`.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import pg from 'pg';
import { cpuBetween, privateRssBytes, rssBytes, sampleCpu } from '../lib/cpu.ts';
import { forceGc, GC_ARGS } from '../lib/force-gc.ts';
import { freeBasePort, havePostgres } from '../lib/pg-bench-cluster.ts';
import { runLoad } from '../lib/load.ts';
import { freshDataDir, isRow, repoRoot, restCreate, restSetPrice, seedProducts, spawnPeer, type SpawnedServer } from '../lib/wo.ts';
import { budget, budgetTable, type Budget } from '../report.ts';
import { spawnWo } from '../../testkit/spawn.ts';
import { writePriceLog } from '../../testkit/pg-price-log.ts';
import type { BenchContext } from './context.ts';
import { argOf, isMain, runAlone } from '../lib/alone.ts';

export interface ClusterCacheOptions {
  /** products in the large store */
  rows: number;
  /** measured starts of each store, alternated */
  starts: number;
  /** each write window */
  windowMs: number;
  inFlight: number;
  /** products the set_price window picks from */
  products: number;
}

export interface ClusterCacheWrites {
  op: 'create' | 'set_price';
  nodes: 1 | 3;
  calls: number;
  errors: number;
  callsPerSec: number;
  woCpuUsPerWrite: number;
  /** reads of the store that blocked a node's thread during the window (wo_row_store_sync_reads_total), summed */
  syncReads: number;
}

export interface ClusterCacheResult {
  skipped?: string;
  rows: number;
  /** spawn to serving, ms, each measured start */
  startEmptyMs: number[];
  startFullMs: number[];
  rssEmptyReadyMb: number;
  rssFullReadyMb: number;
  rssFullReadAllMb: number;
  /** private memory (RssAnon + RssShmem) after a forced GC, settled: the empty store's node at ready, the large one's after the walk */
  privateEmptyMb: number;
  privateReadAllMb: number;
  cacheMb: number;
  readAllMs: number;
  writes: ClusterCacheWrites[];
  /** creates through the floor of several nodes (bench/peers/pg-cluster-floor.ts), 1 node and 3; CPU all its processes' */
  floor: Array<Omit<ClusterCacheWrites, 'op' | 'syncReads'>>;
}

const SCRIPT = join(repoRoot, 'scripts/pg-cluster.sh');

/** Private memory after a forced GC, once it stops falling (V8 returns freed pages from background threads). */
async function settledPrivateMb(n: SpawnedServer, ctx: BenchContext): Promise<number> {
  if (!(await forceGc(n))) ctx.warn('cluster-cache: the node did not report a forced GC within 10 s');
  let m = privateRssBytes(n.pid) / 2 ** 20;
  for (let waited = 0; waited < 5000; waited += 250) {
    await new Promise((r) => setTimeout(r, 250));
    const next = privateRssBytes(n.pid) / 2 ** 20;
    const falling = next < m - 0.5;
    m = next;
    if (!falling) break;
  }
  return m;
}

const CACHE_MB = 64;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const mb = (pid: number) => rssBytes(pid) / 2 ** 20;

/** The URL of `database` on the cluster whose URL is `url` (its last path segment replaced). */
const databaseUrl = (url: string, database: string) => url.replace(/\/[^/?]*(\?|$)/, `/${database}$1`);

async function createDatabase(url: string, name: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl(url, 'postgres').replace(/,[^/]*/, '') });
  await client.connect();
  try {
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
  return databaseUrl(url, name);
}

/** A node's wo_row_store_sync_reads_total: reads of the store that blocked its thread (a miss the writer had not read ahead). */
async function syncReads(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('wo_row_store_sync_reads_total '));
  return line === undefined ? Number.NaN : Number(line.split(' ')[1]);
}

async function walkAll(base: string): Promise<number> {
  let cursor: string | undefined;
  let seen = 0;
  do {
    const res = await fetch(`${base}/api/products?limit=1000${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
    const body = (await res.json()) as { items: unknown[]; nextCursor?: string };
    if (res.status !== 200) throw new Error(`list answered ${res.status}`);
    seen += body.items.length;
    cursor = body.nextCursor;
  } while (cursor !== undefined);
  return seen;
}

async function views(base: string): Promise<void> {
  for (let polls = 0; polls < 6000; polls++) {
    const res = await fetch(`${base}/api/_views/products_by_currency`);
    await res.text();
    if (res.status === 200) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the view was never served');
}

export async function runClusterCache(ctx: BenchContext, o: ClusterCacheOptions): Promise<ClusterCacheResult> {
  const result: ClusterCacheResult = { rows: o.rows, startEmptyMs: [], startFullMs: [], rssEmptyReadyMb: Number.NaN, rssFullReadyMb: Number.NaN, rssFullReadAllMb: Number.NaN, privateEmptyMb: Number.NaN, privateReadAllMb: Number.NaN, cacheMb: CACHE_MB, readAllMs: Number.NaN, writes: [], floor: [] };
  if (!havePostgres()) {
    ctx.warn('cluster-cache: skipped, PostgreSQL binaries not found (Debian: apt-get install postgresql-15)');
    return { ...result, skipped: 'no PostgreSQL binaries' };
  }
  const pgDir = freshDataDir(ctx.dataRoot, 'cluster-cache-pg');
  ctx.track(pgDir);
  const base = await freeBasePort();
  ctx.phase('cluster-cache: starting a PostgreSQL primary and two synchronous standbys');
  const url = execFileSync('bash', [SCRIPT, 'start', pgDir, String(base)], { encoding: 'utf8' }).trim().split('\n').pop()!;
  const running: SpawnedServer[] = [];
  const node = async (store: string, k: string, nodeArgs?: string[]) => {
    const data = freshDataDir(ctx.dataRoot, `cluster-cache-${k}`);
    ctx.track(data);
    const started = performance.now();
    const n = await spawnWo(['run', 'examples/pricing', '--data', data, '--listen', '127.0.0.1:0', '--store', store], { readyTimeoutMs: 120_000, stopTimeoutMs: 10_000, env: { WO_LOG_LEVEL: 'Info', WO_ROW_CACHE: String(CACHE_MB * 2 ** 20) }, ...(nodeArgs ? { nodeArgs } : {}) });
    running.push(n);
    return { n, ms: performance.now() - started };
  };
  const stop = async (n: SpawnedServer) => {
    await n.stop();
    running.splice(running.indexOf(n), 1);
  };
  try {
    const empty = await createDatabase(url, 'cache_empty');
    const full = await createDatabase(url, 'cache_full');
    ctx.phase(`cluster-cache: writing ${o.rows.toLocaleString('en-US')} products`);
    await writePriceLog(full, { products: o.rows, events: 0, batch: 2_000, timeoutMs: 120_000 });
    // Each store's first start folds the view from the log and stores its snapshot at shutdown: not measured.
    for (const store of [empty, full]) {
      ctx.phase('cluster-cache: a first start, folding the view');
      const first = await node(store, 'first');
      await views(first.n.url);
      await stop(first.n);
    }
    for (let i = 0; i < o.starts; i++) {
      for (const [store, into] of i % 2 === 0 ? ([[empty, result.startEmptyMs], [full, result.startFullMs]] as const) : ([[full, result.startFullMs], [empty, result.startEmptyMs]] as const)) {
        ctx.phase(`cluster-cache: start ${i + 1} of ${o.starts} on the ${store === full ? 'large' : 'empty'} store`);
        // The last round's nodes with the GC hook (lib/force-gc.ts), for their memory.
        const last = i === o.starts - 1;
        const { n, ms } = await node(store, `start${i}`, last ? GC_ARGS : undefined);
        into.push(ms);
        if (last) {
          if (store === empty) {
            result.rssEmptyReadyMb = mb(n.pid);
            result.privateEmptyMb = await settledPrivateMb(n, ctx);
          } else {
            result.rssFullReadyMb = mb(n.pid);
            ctx.phase('cluster-cache: reading every row once');
            const t0 = performance.now();
            const seen = await walkAll(n.url);
            result.readAllMs = performance.now() - t0;
            if (seen !== o.rows) ctx.warn(`cluster-cache: the walk read ${seen} rows of ${o.rows}`);
            result.rssFullReadAllMb = mb(n.pid);
            result.privateReadAllMb = await settledPrivateMb(n, ctx);
          }
        }
        await stop(n);
      }
    }

    // CPU per write: 1 node, then 3, on one store.
    const writes = await createDatabase(url, 'cache_writes');
    const a = (await node(writes, 'w0')).n;
    await seedProducts(a.url, o.products);
    const windowOf = async (nodes: SpawnedServer[], op: 'create' | 'set_price') => {
      const sync0 = await Promise.all(nodes.map((n) => syncReads(n.url)));
      const cpu0 = nodes.map((n) => sampleCpu(n.pid));
      const make = op === 'create' ? restCreate : (i: number) => restSetPrice(1 + ((Math.imul(i, 2654435761) >>> 0) % o.products), 1 + (i % 1000));
      const r = await Promise.all(nodes.map((n, k) =>
        runLoad({ url: n.url, concurrency: Math.max(1, Math.round(o.inFlight / nodes.length)), durationMs: o.windowMs, makeRequest: (i) => make(i * nodes.length + k), check: (status, body) => isRow(status, body, op === 'create' ? 201 : 200) })));
      const cpuMs = nodes.reduce((sum, n, k) => sum + cpuBetween(cpu0[k], sampleCpu(n.pid)).cpuMs, 0);
      const sync1 = await Promise.all(nodes.map((n) => syncReads(n.url)));
      const calls = r.reduce((s, x) => s + x.calls, 0);
      const wall = Math.max(...r.map((x) => x.durationMs));
      result.writes.push({ op, nodes: nodes.length as 1 | 3, calls, errors: r.reduce((s, x) => s + x.errors, 0), callsPerSec: calls / (wall / 1000), woCpuUsPerWrite: calls ? (cpuMs * 1000) / calls : Number.NaN, syncReads: sync1.reduce((x, y, k) => x + y - sync0[k], 0) });
    };
    // Each setup runs both ops unmeasured before it measures either: nodes b and c start fresh here, and a node's
    // CPU per write keeps falling for tens of seconds while V8 compiles its paths (a follower's halved between 2 s
    // and 30 s of writes); one warm-up window of one op left the fresh nodes' JIT in the 3-node figures.
    const setup = async (nodes: SpawnedServer[], name: string) => {
      for (const op of ['create', 'set_price'] as const) {
        ctx.phase(`cluster-cache: ${op}, ${name} (warm-up)`);
        await windowOf(nodes, op);
        result.writes.pop();
      }
      for (const op of ['create', 'set_price'] as const) {
        ctx.phase(`cluster-cache: ${op}, ${name} (measured)`);
        await windowOf(nodes, op);
      }
    };
    await setup([a], '1 node');
    const b = (await node(writes, 'w1')).n;
    const c = (await node(writes, 'w2')).n;
    await setup([a, b, c], '3 nodes');
    for (const n of [a, b, c]) await stop(n);

    // The floor: one node, then three, on a database of its own (each setup warmed up by a window first).
    const floorStore = await createDatabase(url, 'cache_floor');
    const floorNode = async (k: number) => {
      const n = await spawnPeer('bench/peers/pg-cluster-floor.ts', { env: { STORE_URL: floorStore, FLOOR_TAG: `n${k}`, FLOOR_FRESH: k === 0 ? '1' : '0' } });
      running.push(n);
      return n;
    };
    const floorWindow = async (nodes: SpawnedServer[]) => {
      const cpu0 = nodes.map((n) => sampleCpu(n.pid));
      const r = await Promise.all(nodes.map((n, k) =>
        runLoad({ url: n.url, concurrency: Math.max(1, Math.round(o.inFlight / nodes.length)), durationMs: o.windowMs, makeRequest: (i) => restCreate(i * nodes.length + k), check: (status, body) => isRow(status, body, 201) })));
      const cpuMs = nodes.reduce((sum, n, k) => sum + cpuBetween(cpu0[k], sampleCpu(n.pid)).cpuMs, 0);
      const calls = r.reduce((sum, x) => sum + x.calls, 0);
      const wall = Math.max(...r.map((x) => x.durationMs));
      return { nodes: nodes.length as 1 | 3, calls, errors: r.reduce((sum, x) => sum + x.errors, 0), callsPerSec: calls / (wall / 1000), woCpuUsPerWrite: calls ? (cpuMs * 1000) / calls : Number.NaN };
    };
    const floor = [await floorNode(0)];
    for (const count of [1, 3]) {
      while (floor.length < count) floor.push(await floorNode(floor.length));
      ctx.phase(`cluster-cache: the floor, create, ${count} node${count === 1 ? '' : 's'} (warm-up, then measured)`);
      await floorWindow(floor);
      result.floor.push(await floorWindow(floor));
    }
    return result;
  } finally {
    await Promise.allSettled(running.map((n) => n.stop()));
    execFileSync('bash', [SCRIPT, 'stop', pgDir]);
  }
}

export const CLUSTER_CACHE_BUDGET = { startOverEmpty: 1.5, rssOverEmptyMb: 100, cpuThreeOverOne: 1.5 } as const;

export function clusterCacheBudgets(r: ClusterCacheResult): Budget[] {
  const out: Budget[] = [];
  const f = (n: number, d = 0) => n.toFixed(d);
  const se = median(r.startEmptyMs);
  const sf = median(r.startFullMs);
  out.push(budget('cacheStart', `start with ${r.rows.toLocaleString('en-US')} rows in PostgreSQL / an empty database`, '<=', CLUSTER_CACHE_BUDGET.startOverEmpty, sf / se, 'x',
    `median ${f(sf)} against ${f(se)} ms, spawn to serving (${r.startFullMs.map((x) => f(x)).join(', ')} / ${r.startEmptyMs.map((x) => f(x)).join(', ')})`));
  out.push(budget('cacheRss', 'private memory after reading every row once and a forced GC - an empty database\'s node - cache', '<=', CLUSTER_CACHE_BUDGET.rssOverEmptyMb, r.privateReadAllMb - r.privateEmptyMb - r.cacheMb, 'MB',
    `${f(r.privateReadAllMb)} against ${f(r.privateEmptyMb)} MB, cache ${r.cacheMb} MB, after reading ${r.rows.toLocaleString('en-US')} rows in ${f(r.readAllMs / 1000, 1)} s; all of RSS ${f(r.rssFullReadAllMb)} MB before the GC (${f(r.rssFullReadyMb)} MB at ready) against ${f(r.rssEmptyReadyMb)} MB`));
  const floorOne = r.floor.find((w) => w.nodes === 1);
  const floorThree = r.floor.find((w) => w.nodes === 3);
  const floorRatio = floorOne && floorThree ? floorThree.woCpuUsPerWrite / floorOne.woCpuUsPerWrite : Number.NaN;
  for (const op of ['create', 'set_price'] as const) {
    const one = r.writes.find((w) => w.op === op && w.nodes === 1);
    const three = r.writes.find((w) => w.op === op && w.nodes === 3);
    const ratio = one && three ? three.woCpuUsPerWrite / one.woCpuUsPerWrite : Number.NaN;
    const againstFloor = op === 'create' && Number.isFinite(floorRatio)
      ? `; the floor of several nodes ${f(floorThree!.woCpuUsPerWrite)} against ${f(floorOne!.woCpuUsPerWrite)} µs/create, ${floorRatio.toFixed(2)}x: ours / floor ${(ratio / floorRatio).toFixed(2)}`
      : '';
    out.push(budget(`cacheCpu.${op}`, `total wo CPU per ${op}, 3 nodes / 1 node`, '<=', CLUSTER_CACHE_BUDGET.cpuThreeOverOne, ratio, 'x',
      one && three ? `${f(three.woCpuUsPerWrite)} against ${f(one.woCpuUsPerWrite)} µs/write (${f(three.callsPerSec)} against ${f(one.callsPerSec)}/s, ${three.errors + one.errors} errors)${againstFloor}` : ''));
  }
  return out;
}

export function renderClusterCache(r: ClusterCacheResult): string {
  if (r.skipped) return `## A node is a cache of PostgreSQL\n\nskipped: ${r.skipped}\n`;
  const f = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  return [
    '## A node is a cache of PostgreSQL',
    '',
    `Start, memory and CPU per write of \`wo run --store\` nodes on a primary and two synchronous standbys, with ${f(r.rows)} rows against none, and 3 nodes against 1; the floor of several nodes on one log (bench/peers/pg-cluster-floor.ts) beside them, its CPU its own processes'.`,
    '',
    '| setup | op | writes/s | wo CPU µs/write | errors | blocking store reads |',
    '|---|---|---:|---:|---:|---:|',
    ...r.writes.map((w) => `| ${w.nodes} node${w.nodes === 1 ? '' : 's'} | ${w.op} | ${f(w.callsPerSec)} | ${f(w.woCpuUsPerWrite)} | ${w.errors} | ${f(w.syncReads)} |`),
    ...r.floor.map((w) => `| the floor, ${w.nodes} node${w.nodes === 1 ? '' : 's'} | create | ${f(w.callsPerSec)} | ${f(w.woCpuUsPerWrite)} (its own) | ${w.errors} | - |`),
    '',
    ...budgetTable(clusterCacheBudgets(r)),
    '',
  ].join('\n');
}

// Alone: `node --conditions=writeonce-source --import tsx bench/scenarios/cluster-cache.ts [--quick] [--rows N]
// [--starts N] [--window ms]` (--quick: 100,000 rows, one start of each store, 3 s windows; full: 1,000,000, 3, 10 s).
if (isMain(import.meta.url)) {
  const quick = process.argv.includes('--quick');
  await runAlone('cluster-cache', quick ? 'quick' : 'full', async (ctx) =>
    renderClusterCache(await runClusterCache(ctx, {
      rows: Number(argOf('rows') ?? (quick ? 100_000 : 1_000_000)),
      starts: Number(argOf('starts') ?? (quick ? 1 : 3)),
      windowMs: Number(argOf('window') ?? (quick ? 3_000 : 10_000)),
      inFlight: 32,
      products: 1000,
    })));
}
