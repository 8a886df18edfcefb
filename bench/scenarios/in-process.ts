// The typed in-process API against REST: durable `set_price`, the same app (examples/pricing) and the same number
// in flight, measured in alternating windows.
//  - REST: a `wo run` server, loaded over HTTP by this process; its CPU per call from /proc (all its threads).
//  - In process: the runtime in this process (coreLayer over a fresh data dir), `wo.invoke("products", id,
//    "set_price", { price })` from as many fibers as REST has requests in flight; this process's CPU per call (all
//    its threads: the writer, LevelDB's synced writes), the fibers that call included.
// The ratio is in-process CPU per call over the server's CPU per REST call; the budget (<= 0.5x) is judged on the
// median of the rounds' own ratios.
//
// Alone: node --conditions=writeonce-source --import tsx bench/scenarios/in-process.ts [full|quick|smoke]
import { join } from 'node:path';
import { Effect, ManagedRuntime } from 'effect';
import { coreLayer, loadSettings, WriteOnce } from '../../src/index.ts';
import pricing from '../../examples/pricing/app.ts';
import { cpuBetween, sampleCpu } from '../lib/cpu.ts';
import { measure, type Measured } from '../lib/measure.ts';
import { warmUntilStable } from '../lib/warmup.ts';
import { freshDataDir, isRow, restSetPrice, seedProducts, startWo } from '../lib/wo.ts';
import { budget, type Budget } from '../report.ts';
import type { BenchContext, Mode } from './context.ts';
import { isMain, runAlone } from '../lib/alone.ts';

export const IN_PROCESS_BUDGET = 0.5;

interface Sizes {
  products: number;
  windowMs: number;
  rounds: number;
  concurrency: number;
  warmMs: number;
}

const SIZES: Record<Mode, Sizes> = {
  full: { products: 1000, windowMs: 1500, rounds: 7, concurrency: 16, warmMs: 4000 },
  quick: { products: 200, windowMs: 600, rounds: 5, concurrency: 16, warmMs: 1500 },
  smoke: { products: 20, windowMs: 200, rounds: 1, concurrency: 4, warmMs: 300 },
};

export interface InProcessWindow {
  calls: number;
  cpuUsPerCall: number;
  callsPerSec: number;
}

export interface InProcessResult {
  concurrency: number;
  inProcess: InProcessWindow;
  rest: InProcessWindow;
  /** In-process CPU per call over the server's per REST call, over all calls. */
  cpuRatio: number;
  /** The median of each round's ratio: what the budget is judged on. */
  medianRatio: number;
  roundRatios: number[];
  errors: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

const pooled = (ws: InProcessWindow[]): InProcessWindow => {
  const calls = ws.reduce((a, w) => a + w.calls, 0);
  const cpuUs = ws.reduce((a, w) => a + w.cpuUsPerCall * w.calls, 0);
  const seconds = ws.reduce((a, w) => a + w.calls / w.callsPerSec, 0);
  return { calls, cpuUsPerCall: cpuUs / calls, callsPerSec: calls / seconds };
};

const fromMeasured = (m: Measured): InProcessWindow => ({ calls: m.load.calls, cpuUsPerCall: m.srvCpuMsPerCall * 1000, callsPerSec: m.load.callsPerSec });

export async function runInProcess(ctx: BenchContext): Promise<InProcessResult> {
  const o = SIZES[ctx.mode];
  ctx.phase('in-process: starting a wo run server and the runtime in this process');
  const restDir = freshDataDir(ctx.dataRoot, 'in-process-rest');
  const ownDir = freshDataDir(ctx.dataRoot, 'in-process-own');
  ctx.track(restDir);
  ctx.track(ownDir);
  const server = await startWo({ dir: restDir, stopTimeoutMs: 3000 });
  const settings = await Effect.runPromise(loadSettings({ dataDir: ownDir }));
  const runtime = ManagedRuntime.make(coreLayer(pricing, settings));
  try {
    const wo = await runtime.runPromise(WriteOnce.of(pricing));
    let errors = 0;
    let n = 0;
    // `concurrency` fibers, each calling set_price until the window ends, as the load generator's connections do.
    const inProcessWindow = async (ms: number): Promise<InProcessWindow> => {
      let calls = 0;
      const deadline = performance.now() + ms;
      const worker = Effect.gen(function* () {
        while (performance.now() < deadline) {
          const i = n++;
          const ok = yield* Effect.either(wo.invoke('products', String(1 + ((i * 7919) % o.products)), 'set_price', { price: 1 + (i % 500) }));
          if (ok._tag === 'Left') errors++;
          else calls++;
        }
      });
      const cpu0 = sampleCpu(process.pid);
      const started = performance.now();
      await runtime.runPromise(Effect.all(Array.from({ length: o.concurrency }, () => worker), { concurrency: 'unbounded', discard: true }));
      const wallMs = performance.now() - started;
      const cpu = cpuBetween(cpu0, sampleCpu(process.pid));
      return { calls, cpuUsPerCall: (cpu.cpuMs * 1000) / calls, callsPerSec: calls / (wallMs / 1000) };
    };
    for (let i = 1; i <= o.products; i++) await runtime.runPromise(wo.create('products', { name: `p${i}`, price: 1 + (i % 1000), currency: 'USD' }));
    await seedProducts(server.url, o.products);
    const load = {
      url: server.url,
      concurrency: o.concurrency,
      makeRequest: (i: number) => restSetPrice(1 + ((i * 7919) % o.products), 1 + (i % 500)),
      check: (s: number, b: string) => isRow(s, b, 200),
    };
    ctx.phase('in-process: warming both');
    await inProcessWindow(o.warmMs);
    await warmUntilStable({ load, pid: server.pid, chunkMs: o.warmMs / 4, maxMs: o.warmMs, minCalls: 100 });
    const own: InProcessWindow[] = [];
    const rest: InProcessWindow[] = [];
    for (let round = 0; round < o.rounds; round++) {
      ctx.phase(`in-process: set_price in process and over REST, round ${round + 1}/${o.rounds}`);
      // Alternate which side goes first, so a drift of the machine weighs on both alike.
      const first = round % 2 === 0;
      if (first) own.push(await inProcessWindow(o.windowMs));
      const m = await measure(server, load, o.windowMs);
      errors += m.load.errors;
      rest.push(fromMeasured(m));
      if (!first) own.push(await inProcessWindow(o.windowMs));
    }
    const roundRatios = own.map((w, i) => w.cpuUsPerCall / rest[i].cpuUsPerCall);
    const a = pooled(own);
    const b = pooled(rest);
    const result = { concurrency: o.concurrency, inProcess: a, rest: b, cpuRatio: a.cpuUsPerCall / b.cpuUsPerCall, medianRatio: median(roundRatios), roundRatios, errors };
    console.log(`in-process: set_price CPU/call in process / over REST: median ${result.medianRatio.toFixed(3)}x, pooled ${result.cpuRatio.toFixed(3)}x (budget <= ${IN_PROCESS_BUDGET}x)`);
    if (result.medianRatio > IN_PROCESS_BUDGET) ctx.warn(`in-process: set_price in process costs ${result.medianRatio.toFixed(3)}x the server CPU of a REST call (budget ${IN_PROCESS_BUDGET}x)`);
    if (errors > 0) ctx.warn(`in-process: ${errors} calls failed`);
    return result;
  } finally {
    await runtime.dispose();
    await server.stop();
  }
}

export function inProcessBudgets(r: InProcessResult): Budget[] {
  return [
    budget('inProcessSetPrice', 'CPU per typed in-process set_price / server CPU per REST set_price', '<=', IN_PROCESS_BUDGET, r.medianRatio, 'x',
      `${r.inProcess.cpuUsPerCall.toFixed(1)} against ${r.rest.cpuUsPerCall.toFixed(1)} µs/call, ${r.concurrency} in flight; median of ${r.roundRatios.length} rounds`),
  ];
}

/** The scenario's section of the report. */
export const renderInProcess = (r: InProcessResult): string =>
  [
    '## The typed in-process API',
    '',
    `Durable \`set_price\` on the pricing sample, ${r.concurrency} in flight: \`wo.invoke("products", id, "set_price", { price })\` in the bench process (its CPU, every thread) against REST on a \`wo run\` server (the server's CPU, every thread), in alternating windows.`,
    '',
    '| side | calls | calls/s | CPU µs/call |',
    '|---|---:|---:|---:|',
    `| in process | ${r.inProcess.calls} | ${r.inProcess.callsPerSec.toFixed(0)} | ${r.inProcess.cpuUsPerCall.toFixed(1)} |`,
    `| REST (server) | ${r.rest.calls} | ${r.rest.callsPerSec.toFixed(0)} | ${r.rest.cpuUsPerCall.toFixed(1)} |`,
    '',
    `In process / REST: median ${r.medianRatio.toFixed(3)}x (rounds ${r.roundRatios.map((x) => x.toFixed(2)).join(', ')}), pooled ${r.cpuRatio.toFixed(3)}x; budget <= ${IN_PROCESS_BUDGET}x.`,
    '',
  ].join('\n');

// Run alone: the scenario's section and its budgets on stdout (`node ... in-process.ts [full|quick|smoke]`, quick
// by default).
if (isMain(import.meta.url)) {
  await runAlone('in-process', (process.argv[2] ?? 'quick') as Mode, async (ctx) => {
    const r = await runInProcess(ctx);
    return [renderInProcess(r), ...inProcessBudgets(r).map((b) => `${b.result}: ${b.name} ${b.value.toFixed(3)}${b.unit} (${b.want}; ${b.detail})`)].join('\n');
  });
  process.exit(0);
}
