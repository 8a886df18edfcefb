// The cost of metrics (issue 23): durable REST `set_price` at 16 in flight on two servers side by side, the
// same app (bench/apps/pricing-plain) with WO_METRICS=0 and WO_METRICS=1, the latter scraped once a second (a
// busy Prometheus). Each warmed, then measured in alternating windows; the ratio is the server CPU per call with
// metrics over without (budget: <= 1.05x).
import { spawnWo } from '../../testkit/spawn.ts';
import { combine, measure, type Measured } from '../lib/measure.ts';
import { warmUntilStable } from '../lib/warmup.ts';
import { freshDataDir, isRow, repoRoot, restSetPrice, seedProducts, type SpawnedServer } from '../lib/wo.ts';
import type { BenchContext, Mode } from './context.ts';

export const METRICS_BUDGET = 1.05;

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

export interface MetricsSide {
  calls: number;
  errors: number;
  callsPerSec: number;
  srvCpuUsPerCall: number;
  otherCores: number;
}

export interface MetricsCostResult {
  off: MetricsSide;
  on: MetricsSide;
  /** scrapes of /metrics made during the measured windows */
  scrapes: number;
  /** server CPU per set_price with metrics / without */
  cpuRatio: number;
}

const side = (windows: Measured[]): MetricsSide => {
  const m = combine(windows);
  return { calls: m.load.calls, errors: m.load.errors, callsPerSec: m.load.callsPerSec, srvCpuUsPerCall: m.srvCpuMsPerCall * 1000, otherCores: m.otherCores };
};

const start = async (ctx: BenchContext, metrics: boolean): Promise<SpawnedServer> => {
  const dir = freshDataDir(ctx.dataRoot, `pricing-metrics-${metrics ? 'on' : 'off'}`);
  ctx.track(dir);
  return spawnWo(['run', `${repoRoot}bench/apps/pricing-plain`, '--data', dir, '--listen', '127.0.0.1:0'], {
    readyTimeoutMs: 15_000,
    stopTimeoutMs: 3000,
    outputLimit: 16_384,
    env: { WO_LOG_LEVEL: 'Info', WO_METRICS: metrics ? '1' : '0' },
  });
};

export async function runMetricsCost(ctx: BenchContext): Promise<MetricsCostResult> {
  const o = OPTIONS[ctx.mode];
  ctx.phase('metrics: starting set_price servers with WO_METRICS=0 and WO_METRICS=1');
  const servers = await Promise.all([start(ctx, false), start(ctx, true)]);
  let scrapes = 0;
  let scraping = false;
  // A scrape a second of the metered server, as a busy Prometheus would (its cost is in the ratio).
  const scraper = setInterval(() => {
    if (!scraping) return;
    void fetch(`${servers[1].url}/metrics`).then(async (r) => {
      await r.text();
      if (r.ok) scrapes++;
    }, () => undefined);
  }, 1000);
  try {
    const loads = servers.map((server) => ({
      url: server.url,
      concurrency: o.concurrency,
      makeRequest: (i: number) => restSetPrice(1 + ((i * 7919) % o.products), 1 + (i % 500)),
      check: (s: number, b: string) => isRow(s, b, 200),
    }));
    for (const [k, server] of servers.entries()) {
      await seedProducts(server.url, o.products);
      ctx.phase(`metrics: warming set_price with metrics ${k === 0 ? 'off' : 'on'}`);
      const w = await warmUntilStable({ load: loads[k], pid: server.pid, chunkMs: o.warmChunkMs, maxMs: o.warmMaxMs, minCalls: o.warmMinCalls });
      if (w.errors) ctx.warn(`metrics warm-up: ${w.errors} errors, first: ${w.firstError}`);
    }
    const windows: [Measured[], Measured[]] = [[], []];
    scraping = true;
    for (let round = 0; round < o.rounds; round++) {
      ctx.phase(`metrics: set_price with metrics off and on, round ${round + 1}/${o.rounds}`);
      // Alternate which side goes first, so a drift of the machine weighs on both alike.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const k of order) windows[k].push(await measure(servers[k], loads[k], o.windowMs));
    }
    scraping = false;
    const off = side(windows[0]);
    const on = side(windows[1]);
    const result = { off, on, scrapes, cpuRatio: on.srvCpuUsPerCall / off.srvCpuUsPerCall };
    console.log(`metrics: set_price server CPU/call off ${off.srvCpuUsPerCall.toFixed(1)} µs, on ${on.srvCpuUsPerCall.toFixed(1)} µs: ratio ${result.cpuRatio.toFixed(3)}x (budget <= ${METRICS_BUDGET}x; ${scrapes} scrapes)`);
    if (result.cpuRatio > METRICS_BUDGET) ctx.warn(`metrics: set_price server CPU with metrics on is ${result.cpuRatio.toFixed(3)}x off (budget ${METRICS_BUDGET}x)`);
    return result;
  } finally {
    clearInterval(scraper);
    await Promise.all(servers.map((s) => s.stop()));
  }
}

/** The scenario's section of the report. */
export const renderMetricsCost = (r: MetricsCostResult): string =>
  [
    '## Metrics cost (issue 23)',
    '',
    `Durable REST \`set_price\`, side by side: the same app with WO_METRICS=0 and WO_METRICS=1 (scraped once a second: ${r.scrapes} scrapes).`,
    '',
    '| side | calls | calls/s | server CPU/call |',
    '|---|---:|---:|---:|',
    `| metrics off | ${r.off.calls} | ${r.off.callsPerSec.toFixed(0)} | ${r.off.srvCpuUsPerCall.toFixed(1)} µs |`,
    `| metrics on | ${r.on.calls} | ${r.on.callsPerSec.toFixed(0)} | ${r.on.srvCpuUsPerCall.toFixed(1)} µs |`,
    '',
    `Server CPU per call, on / off: **${r.cpuRatio.toFixed(3)}x** (budget <= ${METRICS_BUDGET}x: ${r.cpuRatio <= METRICS_BUDGET ? 'met' : 'NOT met'}).`,
    '',
  ].join('\n');
