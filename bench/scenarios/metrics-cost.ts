// The cost of metrics: durable REST `set_price` side by side (bench/lib/side-by-side.ts), the same app
// (bench/apps/pricing-plain) with WO_METRICS=0 and WO_METRICS=1, the latter scraped once a second (a busy
// Prometheus; its cost is in the ratio). The ratio is the server CPU per call with metrics over without
// (budget: <= 1.05x).
import { Exit } from 'effect';
import type { AppendEntry } from '../../src/log/event-log.ts';
import { makeMetrics } from '../../src/metrics/metrics.ts';
import { typesOf } from '../../src/metrics/observed-log.ts';
import { renderSideBySide, runSideBySide, type SideBySideResult } from '../lib/side-by-side.ts';
import type { BenchContext } from './context.ts';

export const METRICS_BUDGET = 1.05;

export interface MetricsCostResult extends SideBySideResult {
  /** scrapes of /metrics made during the measured windows */
  scrapes: number;
  /** The writer's metric hooks alone, in this process: µs per command at `HOOK_BATCH` commands a batch. */
  hookUsPerCall: number;
}

/** Commands per batch for the in-process hook timing (set_price at 16 in flight batches about this many). */
const HOOK_BATCH = 8;

/**
 * What metrics add to one durable write, without the noise of two servers: the hooks the writer calls (one
 * `answered` per command; per batch, the count by type, one `appended` and one `flushed`) timed in this process on a fresh registry,
 * plus a scrape every 1,000 batches. The side-by-side ratio says the same thing with the machine's noise in it.
 */
const timeHooks = (): number => {
  const metrics = makeMetrics();
  const entries = Array.from({ length: HOOK_BATCH }, () => ({ event: { type: 'products' } }) as unknown as AppendEntry);
  const ok = Exit.succeed(undefined);
  const batch = () => {
    for (let i = 0; i < HOOK_BATCH; i++) metrics.answered(ok);
    const { types, n } = typesOf(entries);
    metrics.appended(types, n, 0.0004, true);
    metrics.flushed();
  };
  for (let i = 0; i < 20_000; i++) batch();
  const batches = 200_000;
  const started = performance.now();
  for (let i = 0; i < batches; i++) {
    batch();
    if (i % 1000 === 0) void metrics.render();
  }
  return ((performance.now() - started) * 1000) / (batches * HOOK_BATCH);
};

export async function runMetricsCost(ctx: BenchContext): Promise<MetricsCostResult> {
  let scrapes = 0;
  const scrapeEverySecond = (server: { url: string }) => {
    const timer = setInterval(() => {
      void fetch(`${server.url}/metrics`).then(async (r) => {
        await r.text();
        if (r.ok) scrapes++;
      }, () => undefined);
    }, 1000);
    return () => clearInterval(timer);
  };
  const result = await runSideBySide(
    ctx,
    'metrics',
    [
      { app: 'pricing-plain', label: 'metrics off', env: { WO_METRICS: '0' } },
      { app: 'pricing-plain', label: 'metrics on', env: { WO_METRICS: '1' } },
    ],
    scrapeEverySecond,
  );
  const hookUsPerCall = timeHooks();
  console.log(`metrics: set_price server CPU/call on / off: median ${result.medianRatio.toFixed(3)}x, pooled ${result.cpuRatio.toFixed(3)}x (budget <= ${METRICS_BUDGET}x; ${scrapes} scrapes); the hooks alone ${hookUsPerCall.toFixed(3)} µs per command`);
  if (result.medianRatio > METRICS_BUDGET) ctx.warn(`metrics: set_price server CPU with metrics on is ${result.medianRatio.toFixed(3)}x off (budget ${METRICS_BUDGET}x)`);
  return { ...result, scrapes, hookUsPerCall };
}

/** The scenario's section of the report. */
export const renderMetricsCost = (r: MetricsCostResult): string =>
  [
    '## Metrics cost',
    '',
    `Durable REST \`set_price\`, side by side: the same app with WO_METRICS=0 and WO_METRICS=1 (scraped once a second: ${r.scrapes} scrapes).`,
    '',
    ...renderSideBySide(r, 'on / off', METRICS_BUDGET),
    '',
    `The writer's metric hooks alone, timed in the bench process (${HOOK_BATCH} commands a batch, a scrape every 1,000 batches): ${r.hookUsPerCall.toFixed(3)} µs per command, ${((100 * r.hookUsPerCall) / r.a.srvCpuUsPerCall).toFixed(2)}% of a set_price's server CPU with metrics off.`,
    '',
  ].join('\n');
