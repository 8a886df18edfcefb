// The cost of an invariant (issue 21): durable REST `set_price` at 16 in flight on two servers side by side, the
// same app (bench/apps/pricing-plain) without and with one invariant declared on products
// (bench/apps/pricing-invariant). Each warmed, then measured in alternating windows; the ratio is the server
// CPU per call with the invariant over without (budget: <= 1.05x).
import { spawnWo } from '../../testkit/spawn.ts';
import { combine, measure, type Measured } from '../lib/measure.ts';
import { warmUntilStable } from '../lib/warmup.ts';
import { freshDataDir, isRow, repoRoot, restSetPrice, seedProducts, type SpawnedServer } from '../lib/wo.ts';
import type { BenchContext, Mode } from './context.ts';

export const INVARIANT_BUDGET = 1.05;

interface Options {
  products: number;
  windowMs: number;
  rounds: number;
  warmMaxMs: number;
  warmChunkMs: number;
  warmMinCalls: number;
  concurrency: number;
}

const OPTIONS: Record<Mode, Options> = {
  full: { products: 1000, windowMs: 1500, rounds: 4, warmMaxMs: 4000, warmChunkMs: 500, warmMinCalls: 5000, concurrency: 16 },
  quick: { products: 200, windowMs: 600, rounds: 3, warmMaxMs: 1500, warmChunkMs: 250, warmMinCalls: 1000, concurrency: 16 },
  smoke: { products: 20, windowMs: 200, rounds: 1, warmMaxMs: 300, warmChunkMs: 150, warmMinCalls: 100, concurrency: 4 },
};

export interface InvariantSide {
  calls: number;
  errors: number;
  callsPerSec: number;
  srvCpuUsPerCall: number;
  otherCores: number;
}

export interface InvariantResult {
  plain: InvariantSide;
  invariant: InvariantSide;
  /** server CPU per set_price with the invariant / without */
  cpuRatio: number;
}

const side = (windows: Measured[]): InvariantSide => {
  const m = combine(windows);
  return { calls: m.load.calls, errors: m.load.errors, callsPerSec: m.load.callsPerSec, srvCpuUsPerCall: m.srvCpuMsPerCall * 1000, otherCores: m.otherCores };
};

const start = async (ctx: BenchContext, app: string): Promise<SpawnedServer> => {
  const dir = freshDataDir(ctx.dataRoot, app);
  ctx.track(dir);
  return spawnWo(['run', `${repoRoot}bench/apps/${app}`, '--data', dir, '--listen', '127.0.0.1:0'], {
    readyTimeoutMs: 15_000,
    stopTimeoutMs: 3000,
    outputLimit: 16_384,
    env: { WO_LOG_LEVEL: 'Info' },
  });
};

export async function runInvariant(ctx: BenchContext): Promise<InvariantResult> {
  const o = OPTIONS[ctx.mode];
  ctx.phase('invariant: starting set_price servers without and with one invariant');
  const servers = await Promise.all([start(ctx, 'pricing-plain'), start(ctx, 'pricing-invariant')]);
  try {
    const loads = servers.map((server) => ({
      url: server.url,
      concurrency: o.concurrency,
      makeRequest: (i: number) => restSetPrice(1 + ((i * 7919) % o.products), 1 + (i % 500)),
      check: (s: number, b: string) => isRow(s, b, 200),
    }));
    for (const [k, server] of servers.entries()) {
      await seedProducts(server.url, o.products);
      ctx.phase(`invariant: warming set_price ${k === 0 ? 'without' : 'with'} the invariant`);
      const w = await warmUntilStable({ load: loads[k], pid: server.pid, chunkMs: o.warmChunkMs, maxMs: o.warmMaxMs, minCalls: o.warmMinCalls });
      if (w.errors) ctx.warn(`invariant warm-up: ${w.errors} errors, first: ${w.firstError}`);
    }
    const windows: [Measured[], Measured[]] = [[], []];
    for (let round = 0; round < o.rounds; round++) {
      ctx.phase(`invariant: set_price without and with the invariant, round ${round + 1}/${o.rounds}`);
      // Alternate which side goes first, so a drift of the machine weighs on both alike.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const k of order) windows[k].push(await measure(servers[k], loads[k], o.windowMs));
    }
    const plain = side(windows[0]);
    const invariant = side(windows[1]);
    const result = { plain, invariant, cpuRatio: invariant.srvCpuUsPerCall / plain.srvCpuUsPerCall };
    if (result.cpuRatio > INVARIANT_BUDGET) ctx.warn(`invariant: set_price server CPU with one invariant is ${result.cpuRatio.toFixed(3)}x without (budget ${INVARIANT_BUDGET}x)`);
    return result;
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

/** The scenario's section of the report. */
export const renderInvariant = (r: InvariantResult): string =>
  [
    '## Invariant cost (issue 21)',
    '',
    'Durable REST `set_price`, side by side: the same app without and with one invariant declared.',
    '',
    '| side | calls | calls/s | server CPU/call |',
    '|---|---:|---:|---:|',
    `| without | ${r.plain.calls} | ${r.plain.callsPerSec.toFixed(0)} | ${r.plain.srvCpuUsPerCall.toFixed(1)} µs |`,
    `| one invariant | ${r.invariant.calls} | ${r.invariant.callsPerSec.toFixed(0)} | ${r.invariant.srvCpuUsPerCall.toFixed(1)} µs |`,
    '',
    `Server CPU per call, with / without: **${r.cpuRatio.toFixed(3)}x** (budget <= ${INVARIANT_BUDGET}x: ${r.cpuRatio <= INVARIANT_BUDGET ? 'met' : 'NOT met'}).`,
    '',
  ].join('\n');
