// Scale-out (issues 14 and 22): writeonce nodes sharing one PostgreSQL log, against one embedded node, side by side.
//  - a PostgreSQL primary and two synchronous standbys on loopback (scripts/pg-cluster.sh, ANY 1 of 2: an ack is
//    fsynced on the primary and on one standby), and 1, then 3 `wo run --store` nodes over it;
//  - the floor on the same cluster: bench/peers/pg-floor.ts, plain `pg` doing the same batched inserts (one
//    statement per group of waiting requests) behind the same HTTP shape;
//  - durable creates/s and set_price/s at 32 and 256 in flight: one embedded node, the floor, 1 node and 3 nodes on
//    PostgreSQL (the load split evenly, one closed-loop generator per node); ack p50/p99 from the merged histograms;
//    the floor and 1 node are measured in alternating windows (`rounds`), so that load from outside falls on both;
//    each setup first runs an unmeasured window of each op (`warmUpMs`);
//  - CPU per write: the writeonce nodes' (summed), and PostgreSQL's (every postgres process of the cluster);
//  - commit to notification: one set_price at a time through node A, timed from just before the request to the
//    notification on a listen stream on node C (another node: through the log, the notification and C's
//    tailer), and on node A (the same node), as notify.ts does.
// On one 2-core box the 3 nodes and the 3 servers compete for the same cores: read CPU per write beside the rates.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { clockTicksPerSecond, cpuBetween, sampleCpu, type CpuSample } from '../lib/cpu.ts';
import { LatencyHistogram } from '../lib/histogram.ts';
import { freeBasePort, havePostgres } from '../lib/pg-bench-cluster.ts';
import { runLoad, type LoadResult } from '../lib/load.ts';
import { openListen } from '../lib/subscribers.ts';
import { freshDataDir, isRow, repoRoot, restCreate, restSetPrice, seedProducts, spawnPeer, startWo, type SpawnedServer } from '../lib/wo.ts';
import { budget, budgetTable, type Budget } from '../report.ts';
import { spawnWo } from '../../testkit/spawn.ts';
import type { BenchContext } from './context.ts';

export interface ScaleOutOptions {
  inFlight: number[];
  windowMs: number;
  /** products seeded before the set_price windows (each call picks one at random) */
  products: number;
  /** commits timed one at a time for commit-to-notification */
  notifyCommits: number;
  /** the floor and 1 node are measured in this many alternating windows of windowMs / rounds each (default 2) */
  rounds?: number;
  /** an unmeasured window of each op per setup before its first measured one (default windowMs / 4, at most 2 s) */
  warmUpMs?: number;
}

export type Setup = 'embedded x1' | 'pg floor x1' | 'postgres x1' | 'postgres x3';

export interface ScaleOutWindow {
  setup: Setup;
  op: 'create' | 'set_price';
  inFlight: number;
  calls: number;
  errors: number;
  callsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** the writeonce processes' CPU per write, summed over the nodes (the floor's process for the floor) */
  woCpuUsPerWrite: number;
  /** PostgreSQL's CPU per write (every server process of the cluster); 0 for the embedded node */
  pgCpuUsPerWrite: number;
}

export interface ScaleOutResult {
  skipped?: string;
  windows: ScaleOutWindow[];
  notify: { commits: number; otherNode: { p50Ms: number; p99Ms: number }; sameNode: { p50Ms: number; p99Ms: number } };
}

const SCRIPT = join(repoRoot, 'scripts/pg-cluster.sh');

/** CPU of every process named postgres (the cluster's servers and backends; nothing else runs one here). */
function samplePostgres(): CpuSample {
  let ticks = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (!stat.includes('(postgres)')) continue;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]);
    } catch {
      // gone meanwhile
    }
  }
  return { cpuMs: (ticks * 1000) / clockTicksPerSecond(), atMs: performance.now() };
}


const pct = (h: LatencyHistogram, p: number) => h.percentile(p) / 1000;

/** One window: the load split over the nodes (one generator each), merged. */
async function window(nodes: SpawnedServer[], inFlight: number, ms: number, make: (i: number) => ReturnType<typeof restCreate>, want: number): Promise<{ r: LoadResult[]; wo: number; pg: number }> {
  const wo0 = nodes.map((n) => sampleCpu(n.pid));
  const pg0 = samplePostgres();
  const r = await Promise.all(
    nodes.map((n, k) =>
      runLoad({
        url: n.url,
        concurrency: Math.max(1, Math.round(inFlight / nodes.length)),
        durationMs: ms,
        makeRequest: (i) => make(i * nodes.length + k),
        check: (status, body) => isRow(status, body, want),
      }),
    ),
  );
  const wo = nodes.reduce((a, n, k) => a + cpuBetween(wo0[k], sampleCpu(n.pid)).cpuMs, 0);
  const pg = cpuBetween(pg0, samplePostgres()).cpuMs;
  return { r, wo, pg };
}

type Measured = Awaited<ReturnType<typeof window>>;

/** One or more windows of a setup (one after another) as one row: their calls over their summed wall time. */
function summarise(setup: ScaleOutWindow['setup'], op: ScaleOutWindow['op'], inFlight: number, windows: ReadonlyArray<Measured>): ScaleOutWindow {
  const all = windows.flatMap((w) => w.r);
  const h = all.reduce((acc, x) => (x.histogram ? acc.merge(x.histogram) : acc), new LatencyHistogram());
  const calls = all.reduce((a, x) => a + x.calls, 0);
  // The generators of one window run side by side (one per node); windows follow each other.
  const wall = windows.reduce((a, w) => a + Math.max(...w.r.map((x) => x.durationMs)), 0);
  const wo = windows.reduce((a, w) => a + w.wo, 0);
  const pg = windows.reduce((a, w) => a + w.pg, 0);
  return {
    setup,
    op,
    inFlight,
    calls,
    errors: all.reduce((a, x) => a + x.errors, 0),
    callsPerSec: calls / (wall / 1000),
    p50Ms: pct(h, 50),
    p99Ms: pct(h, 99),
    woCpuUsPerWrite: calls ? (wo * 1000) / calls : 0,
    pgCpuUsPerWrite: calls ? (pg * 1000) / calls : 0,
  };
}

const setPriceOf = (o: ScaleOutOptions, firstId: number) => (i: number) => restSetPrice(firstId + (Math.imul(i, 2654435761) >>> 0) % o.products, 1 + (i % 1000));

/**
 * Creates, then set_prices, unmeasured: a setup's first measured window otherwise pays its code's first runs (the
 * JIT), which the seeding's serial creates do not cover at this concurrency.
 */
async function warmUp(ctx: BenchContext, setup: Setup, nodes: SpawnedServer[], o: ScaleOutOptions, firstId: number): Promise<void> {
  const ms = o.warmUpMs ?? Math.min(2000, o.windowMs / 4);
  if (ms <= 0) return;
  ctx.phase(`scale-out: ${setup}, warming up`);
  await window(nodes, o.inFlight[0], ms, restCreate, 201);
  await window(nodes, o.inFlight[0], ms, setPriceOf(o, firstId), 200);
}

async function measureSetup(ctx: BenchContext, setup: ScaleOutWindow['setup'], nodes: SpawnedServer[], o: ScaleOutOptions, firstId: number): Promise<ScaleOutWindow[]> {
  const out: ScaleOutWindow[] = [];
  await warmUp(ctx, setup, nodes, o, firstId);
  for (const inFlight of o.inFlight) {
    ctx.phase(`scale-out: ${setup}, creates at ${inFlight} in flight`);
    out.push(summarise(setup, 'create', inFlight, [await window(nodes, inFlight, o.windowMs, restCreate, 201)]));
    ctx.phase(`scale-out: ${setup}, set_price at ${inFlight} in flight`);
    out.push(summarise(setup, 'set_price', inFlight, [await window(nodes, inFlight, o.windowMs, setPriceOf(o, firstId), 200)]));
  }
  return out;
}

/**
 * Several setups on the same cluster, window by window in turn (the order reversed every round), so that whatever
 * else loads the machine meanwhile falls on each alike: their ratio is then worth reading on a shared box.
 */
async function measureAlternated(ctx: BenchContext, setups: ReadonlyArray<{ setup: Setup; nodes: SpawnedServer[] }>, o: ScaleOutOptions, firstId: number): Promise<ScaleOutWindow[]> {
  const rounds = Math.max(1, o.rounds ?? 2);
  const rows = new Map<Setup, ScaleOutWindow[]>(setups.map((s) => [s.setup, []]));
  for (const { setup, nodes } of setups) await warmUp(ctx, setup, nodes, o, firstId);
  for (const inFlight of o.inFlight) {
    for (const [op, make, want] of [['create', restCreate, 201], ['set_price', setPriceOf(o, firstId), 200]] as const) {
      const measured = new Map<Setup, Measured[]>(setups.map((s) => [s.setup, []]));
      for (let round = 0; round < rounds; round++) {
        for (const { setup, nodes } of round % 2 === 0 ? setups : [...setups].reverse()) {
          ctx.phase(`scale-out: ${setup}, ${op} at ${inFlight} in flight (round ${round + 1} of ${rounds})`);
          measured.get(setup)!.push(await window(nodes, inFlight, o.windowMs / rounds, make, want));
        }
      }
      for (const { setup } of setups) rows.get(setup)!.push(summarise(setup, op, inFlight, measured.get(setup)!));
    }
  }
  return setups.flatMap((s) => rows.get(s.setup)!);
}

/** One set_price at a time through `writer`; time from before the request to the notification on `watcher`. */
async function notifyLatency(writer: SpawnedServer, watcher: SpawnedServer, id: number, commits: number): Promise<{ p50Ms: number; p99Ms: number }> {
  const sub = await openListen(watcher.url, 1, [`wo://products/${id}`]);
  const h = new LatencyHistogram();
  try {
    for (let i = 0; i < commits; i++) {
      const before = sub.count;
      const arrived = new Promise<number>((resolve) => {
        sub.onUpdated = (s, at) => {
          if (s.count > before) resolve(at);
        };
      });
      const sent = performance.now();
      const res = await fetch(`${writer.url}/api/products/${id}/set_price`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ price: 1 + i }) });
      await res.text();
      const at = await Promise.race([arrived, new Promise<number>((r) => setTimeout(() => r(Number.NaN), 10_000))]);
      if (Number.isFinite(at)) h.record(Math.round((at - sent) * 1000));
    }
  } finally {
    sub.close();
  }
  return { p50Ms: pct(h, 50), p99Ms: pct(h, 99) };
}

export async function runScaleOut(ctx: BenchContext, o: ScaleOutOptions): Promise<ScaleOutResult> {
  const empty = { commits: 0, otherNode: { p50Ms: 0, p99Ms: 0 }, sameNode: { p50Ms: 0, p99Ms: 0 } };
  if (!havePostgres()) {
    ctx.warn('scale-out: skipped, PostgreSQL binaries not found (Debian: apt-get install postgresql-15)');
    return { skipped: 'no PostgreSQL binaries', windows: [], notify: empty };
  }
  const windows: ScaleOutWindow[] = [];
  // One embedded node first, alone on the machine.
  const dir = freshDataDir(ctx.dataRoot, 'scaleout-embedded');
  ctx.track(dir);
  const embedded = await startWo({ dir });
  try {
    await seedProducts(embedded.url, o.products);
    windows.push(...(await measureSetup(ctx, 'embedded x1', [embedded], o, 1)));
  } finally {
    await embedded.stop();
  }

  const pgDir = freshDataDir(ctx.dataRoot, 'scaleout-pg');
  ctx.track(pgDir);
  const base = await freeBasePort();
  ctx.phase('scale-out: starting a PostgreSQL primary and two synchronous standbys');
  const url = execFileSync('bash', [SCRIPT, 'start', pgDir, String(base)], { encoding: 'utf8' }).trim().split('\n').pop()!;
  const nodes: SpawnedServer[] = [];
  const startNode = async (k: number) => {
    const data = freshDataDir(ctx.dataRoot, `scaleout-node${k}`);
    ctx.track(data);
    nodes.push(await spawnWo(['run', 'examples/pricing', '--data', data, '--listen', '127.0.0.1:0', '--store', url], { readyTimeoutMs: 30_000, stopTimeoutMs: 5000, env: { WO_LOG_LEVEL: 'Info' } }));
  };
  try {
    // The floor and 1 node on the cluster together (the floor's tables are its own), measured in turn.
    ctx.phase('scale-out: the plain pg floor and 1 node on the same cluster');
    const floor = await spawnPeer('bench/peers/pg-floor.ts', { env: { STORE_URL: url } });
    try {
      await seedProducts(floor.url, o.products);
      await startNode(0);
      await seedProducts(nodes[0].url, o.products);
      windows.push(...(await measureAlternated(ctx, [{ setup: 'pg floor x1', nodes: [floor] }, { setup: 'postgres x1', nodes: [nodes[0]] }], o, 1)));
    } finally {
      await floor.stop();
    }
    await Promise.all([startNode(1), startNode(2)]);
    windows.push(...(await measureSetup(ctx, 'postgres x3', nodes, o, 1)));
    ctx.phase('scale-out: commit to notification, node A to a listen stream on node C, and on node A');
    const otherNode = await notifyLatency(nodes[0], nodes[2], 1, o.notifyCommits);
    const sameNode = await notifyLatency(nodes[0], nodes[0], 1, o.notifyCommits);
    return { windows, notify: { commits: o.notifyCommits, otherNode, sameNode } };
  } finally {
    await Promise.allSettled(nodes.map((n) => n.stop()));
    execFileSync('bash', [SCRIPT, 'stop', pgDir]);
  }
}

/** The scale-out budgets (architecture.md), judged on this run's windows: PASS, MISS, or n/a when a side is missing. */
export const SCALE_OUT_BUDGET = { cpuOverEmbedded: 1.5, rateOverFloor: 0.8, threeOverOne: 1, notifyOtherOverSame: 1.5 } as const;

export function scaleOutBudgets(r: ScaleOutResult): Budget[] {
  const w = (setup: Setup, op: ScaleOutWindow['op'], inFlight: number) => r.windows.find((x) => x.setup === setup && x.op === op && x.inFlight === inFlight);
  const out: Budget[] = [];
  const add = (id: string, name: string, want: '<=' | '>=', threshold: number, value: number | undefined, detail: string) =>
    out.push(budget(id, name, want, threshold, value ?? Number.NaN, 'x', detail));
  const f = (n: number) => n.toFixed(0);
  // The levels measured (32 and 256 in full and quick runs); the floor is compared at the highest (256).
  const levels = [...new Set(r.windows.map((x) => x.inFlight))].sort((a, b) => a - b);
  for (const op of ['create', 'set_price'] as const) {
    for (const inFlight of levels) {
      const emb = w('embedded x1', op, inFlight);
      const one = w('postgres x1', op, inFlight);
      const three = w('postgres x3', op, inFlight);
      const floor = w('pg floor x1', op, inFlight);
      add(`pgCpu.${op}.${inFlight}`, `wo CPU per durable ${op}, 1 node on PostgreSQL / embedded, ${inFlight} in flight`, '<=', SCALE_OUT_BUDGET.cpuOverEmbedded,
        one && emb ? one.woCpuUsPerWrite / emb.woCpuUsPerWrite : undefined, one && emb ? `${f(one.woCpuUsPerWrite)} against ${f(emb.woCpuUsPerWrite)} µs/write` : '');
      if (inFlight === levels[levels.length - 1]) {
        add(`pgRateOverFloor.${op}`, `${op}s/s, 1 node on PostgreSQL / the plain pg floor, ${inFlight} in flight`, '>=', SCALE_OUT_BUDGET.rateOverFloor,
          one && floor ? one.callsPerSec / floor.callsPerSec : undefined, one && floor ? `${f(one.callsPerSec)} against ${f(floor.callsPerSec)}/s (floor ${f(floor.woCpuUsPerWrite)} µs/write of its own CPU)` : '');
      }
      add(`threeOverOne.${op}.${inFlight}`, `${op}s/s, 3 nodes / 1 node on PostgreSQL, ${inFlight} in flight`, '>=', SCALE_OUT_BUDGET.threeOverOne,
        three && one ? three.callsPerSec / one.callsPerSec : undefined,
        three && one ? `${f(three.callsPerSec)} against ${f(one.callsPerSec)}/s; wo CPU ${f(three.woCpuUsPerWrite)} against ${f(one.woCpuUsPerWrite)} µs/write (3 nodes share 2 cores)` : '');
    }
  }
  const n = r.notify;
  add('notifyOtherNode', 'commit to notification p99, subscriber on another node / on the writing node', '<=', SCALE_OUT_BUDGET.notifyOtherOverSame,
    n.commits > 0 ? n.otherNode.p99Ms / n.sameNode.p99Ms : undefined, `${n.otherNode.p99Ms.toFixed(1)} against ${n.sameNode.p99Ms.toFixed(1)} ms over ${n.commits} commits`);
  return out;
}

/** The section of the report. */
export function renderScaleOut(r: ScaleOutResult): string {
  if (r.skipped) return `## Scale-out (PostgreSQL, 3 nodes)\n\nskipped: ${r.skipped}\n`;
  const f = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  const rows = r.windows.map((w) => `| ${w.setup} | ${w.op} | ${w.inFlight} | ${f(w.callsPerSec)} | ${f(w.p50Ms, 1)} | ${f(w.p99Ms, 1)} | ${f(w.woCpuUsPerWrite)} | ${f(w.pgCpuUsPerWrite)} | ${w.errors} |`);
  return [
    '## Scale-out (PostgreSQL, 3 nodes)',
    '',
    'Durable writes through 1 and 3 `wo run --store` nodes on a primary and two synchronous standbys (ANY 1), against one embedded node and the plain `pg` floor (bench/peers/pg-floor.ts) on the same cluster; all on this machine. For the floor, "wo CPU" is the floor process\'s.',
    '',
    '| setup | op | in flight | writes/s | ack p50 ms | ack p99 ms | wo CPU µs/write | PostgreSQL CPU µs/write | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `Commit to notification (${r.notify.commits} commits, one at a time, from before the request): subscriber on another node p50 ${f(r.notify.otherNode.p50Ms, 1)} ms, p99 ${f(r.notify.otherNode.p99Ms, 1)} ms; on the writing node p50 ${f(r.notify.sameNode.p50Ms, 1)} ms, p99 ${f(r.notify.sameNode.p99Ms, 1)} ms.`,
    '',
    ...budgetTable(scaleOutBudgets(r)),
    '',
  ].join('\n');
}
