// What a node that writes nothing costs per commit of another node: the tailer's share of "CPU per write across 3
// nodes" (cluster-cache.ts measures the total).
//  - three `wo run examples/pricing --store` nodes on the cluster of scripts/pg-cluster.sh (a primary and two
//    synchronous standbys on loopback); the load goes to node A alone, B and C only follow the log;
//  - durable creates, then set_price on 1,000 products seeded first, at each `inFlight` (1 in flight: a batch per
//    write, so a follower pays its per-batch cost on every write; 32: batches of many writes);
//  - per window: writes/s, A's batches (wo_batches_total), each node's CPU (/proc) per write, and the followers' CPU
//    per batch of A.
// The budget: each follower's CPU per write at most a quarter of the writer's, at 32 in flight. Then 3 nodes each
// writing a third cost at most 1 + 2 x 0.25 = 1.5 times one node, if a writer's own cost per write stays the same
// (it does not: each of 3 nodes sees a third of the load, so smaller batches; cluster-cache.ts measures the whole).
// Alone: `node --conditions=writeonce-source --import tsx bench/scenarios/follower-cost.ts [--quick]`.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { cpuBetween, sampleCpu } from '../lib/cpu.ts';
import { freeBasePort, havePostgres } from '../lib/pg-bench-cluster.ts';
import { runLoad } from '../lib/load.ts';
import { freshDataDir, isRow, repoRoot, restCreate, restSetPrice, seedProducts, type SpawnedServer } from '../lib/wo.ts';
import { budget, budgetTable, type Budget } from '../report.ts';
import { spawnWo } from '../../testkit/spawn.ts';
import type { BenchContext } from './context.ts';
import { isMain, runAlone } from '../lib/alone.ts';

export interface FollowerCostOptions {
  inFlight: number[];
  windowMs: number;
  products: number;
}

export interface FollowerCostWindow {
  op: 'create' | 'set_price';
  inFlight: number;
  calls: number;
  errors: number;
  callsPerSec: number;
  /** node A's batches in the window */
  batches: number;
  writerCpuUsPerWrite: number;
  /** B's and C's, each */
  followerCpuUsPerWrite: number[];
}

export interface FollowerCostResult {
  skipped?: string;
  windows: FollowerCostWindow[];
}

const SCRIPT = join(repoRoot, 'scripts/pg-cluster.sh');

async function batchesOf(n: SpawnedServer): Promise<number> {
  const text = await (await fetch(`${n.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('wo_batches_total'));
  return line === undefined ? Number.NaN : Number(line.split(' ').pop());
}

export async function runFollowerCost(ctx: BenchContext, o: FollowerCostOptions): Promise<FollowerCostResult> {
  if (!havePostgres()) {
    ctx.warn('follower-cost: skipped, PostgreSQL binaries not found (Debian: apt-get install postgresql-15)');
    return { skipped: 'no PostgreSQL binaries', windows: [] };
  }
  const pgDir = freshDataDir(ctx.dataRoot, 'follower-cost-pg');
  ctx.track(pgDir);
  const base = await freeBasePort();
  ctx.phase('follower-cost: starting a PostgreSQL primary and two synchronous standbys');
  const url = execFileSync('bash', [SCRIPT, 'start', pgDir, String(base)], { encoding: 'utf8' }).trim().split('\n').pop()!;
  const nodes: SpawnedServer[] = [];
  const windows: FollowerCostWindow[] = [];
  try {
    for (const k of ['a', 'b', 'c']) {
      const data = freshDataDir(ctx.dataRoot, `follower-cost-${k}`);
      ctx.track(data);
      nodes.push(await spawnWo(['run', 'examples/pricing', '--data', data, '--listen', '127.0.0.1:0', '--store', url], { readyTimeoutMs: 120_000, stopTimeoutMs: 10_000, env: { WO_LOG_LEVEL: 'Info' } }));
    }
    const [a] = nodes;
    await seedProducts(a.url, o.products);
    let offset = 0;
    const windowOf = async (op: 'create' | 'set_price', inFlight: number) => {
      const make = op === 'create' ? restCreate : (i: number) => restSetPrice(1 + ((Math.imul(i, 2654435761) >>> 0) % o.products), 1 + (i % 1000));
      const from = offset;
      const b0 = await batchesOf(a);
      const cpu0 = nodes.map((n) => sampleCpu(n.pid));
      const r = await runLoad({ url: a.url, concurrency: inFlight, durationMs: o.windowMs, makeRequest: (i) => make(from + i), check: (status, body) => isRow(status, body, op === 'create' ? 201 : 200) });
      const cpuMs = nodes.map((n, k) => cpuBetween(cpu0[k], sampleCpu(n.pid)).cpuMs);
      offset += r.calls + 1;
      const per = (ms: number) => (r.calls ? (ms * 1000) / r.calls : Number.NaN);
      return { op, inFlight, calls: r.calls, errors: r.errors, callsPerSec: r.calls / (r.durationMs / 1000), batches: (await batchesOf(a)) - b0, writerCpuUsPerWrite: per(cpuMs[0]), followerCpuUsPerWrite: cpuMs.slice(1).map(per) };
    };
    for (const op of ['create', 'set_price'] as const) {
      ctx.phase(`follower-cost: ${op}, warm-up`);
      await windowOf(op, Math.max(...o.inFlight));
      for (const inFlight of o.inFlight) {
        ctx.phase(`follower-cost: ${op}, ${inFlight} in flight on node A`);
        windows.push(await windowOf(op, inFlight));
      }
    }
    return { windows };
  } finally {
    await Promise.allSettled(nodes.map((n) => n.stop()));
    execFileSync('bash', [SCRIPT, 'stop', pgDir]);
  }
}

export const FOLLOWER_COST_BUDGET = { followerOverWriter: 0.25, atInFlight: 32 } as const;

export function followerCostBudgets(r: FollowerCostResult): Budget[] {
  const f = (n: number) => n.toFixed(0);
  return (['create', 'set_price'] as const).map((op) => {
    const w = r.windows.find((x) => x.op === op && x.inFlight === FOLLOWER_COST_BUDGET.atInFlight);
    const follower = w ? Math.max(...w.followerCpuUsPerWrite) : Number.NaN;
    return budget(`followerCost.${op}`, `CPU per ${op} of a node that only follows the log / the writing node's, ${FOLLOWER_COST_BUDGET.atInFlight} in flight`, '<=', FOLLOWER_COST_BUDGET.followerOverWriter,
      w ? follower / w.writerCpuUsPerWrite : Number.NaN, 'x', w ? `${f(follower)} against ${f(w.writerCpuUsPerWrite)} µs/write (${f(w.callsPerSec)}/s, ${(w.calls / w.batches).toFixed(1)} writes a batch)` : '');
  });
}

export function renderFollowerCost(r: FollowerCostResult): string {
  if (r.skipped) return `## What a node that only follows the log costs\n\nskipped: ${r.skipped}\n`;
  const f = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  return [
    '## What a node that only follows the log costs',
    '',
    'Three `wo run --store` nodes on a primary and two synchronous standbys; the load on node A alone. CPU from /proc.',
    '',
    '| op | in flight | writes/s | writes a batch | writer µs/write | each follower µs/write | each follower µs/batch | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...r.windows.map((w) => `| ${w.op} | ${w.inFlight} | ${f(w.callsPerSec)} | ${f(w.calls / w.batches, 1)} | ${f(w.writerCpuUsPerWrite)} | ${w.followerCpuUsPerWrite.map((x) => f(x)).join(', ')} | ${w.followerCpuUsPerWrite.map((x) => f((x * w.calls) / w.batches)).join(', ')} | ${w.errors} |`),
    '',
    ...budgetTable(followerCostBudgets(r)),
    '',
  ].join('\n');
}

// Alone: `node --conditions=writeonce-source --import tsx bench/scenarios/follower-cost.ts [--quick]` (3 s windows;
// a full run: 10 s).
if (isMain(import.meta.url)) {
  const quick = process.argv.includes('--quick');
  await runAlone('follower-cost', quick ? 'quick' : 'full', async (ctx) =>
    renderFollowerCost(await runFollowerCost(ctx, { inFlight: [1, 8, 32], windowMs: quick ? 3_000 : 10_000, products: 1000 })));
}
