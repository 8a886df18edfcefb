// The cost of one feature, measured side by side: durable REST `set_price` (or a GET) on two servers that differ only in that
// feature (another app, or another setting), each seeded and warmed, then measured in alternating windows. Used by
// the invariant, metrics and access parts of bench/run.ts.
//
// The ratio is server CPU per call, B over A. Two figures: `cpuRatio` over all calls, and `medianRatio`, the
// median of the rounds' own ratios (each round measures A and B back to back). On shared cores one noisy window
// (another process waking up) moves the pooled figure by tens of percent; it moves the median only if it hits
// most rounds. Budgets are judged on the median; both are reported.
import { spawnWo } from '../../testkit/spawn.ts';
import { combine, measure, type Measured } from './measure.ts';
import { warmUntilStable } from './warmup.ts';
import type { LoadRequest } from './load.ts';
import { freshDataDir, isRow, repoRoot, restGet, restSetPrice, seedProducts, type SpawnedServer } from './wo.ts';
import type { BenchContext, Mode } from '../scenarios/context.ts';

/** Sizes and times of a side-by-side measurement (also those of bench/scenarios/commands.ts). */
export interface MeasureOptions {
  products: number;
  windowMs: number;
  rounds: number;
  warmMaxMs: number;
  warmChunkMs: number;
  warmMinCalls: number;
  concurrency: number;
}

const OPTIONS: Record<Mode, MeasureOptions> = {
  full: { products: 1000, windowMs: 1500, rounds: 7, warmMaxMs: 4000, warmChunkMs: 500, warmMinCalls: 5000, concurrency: 16 },
  quick: { products: 200, windowMs: 600, rounds: 5, warmMaxMs: 1500, warmChunkMs: 250, warmMinCalls: 1000, concurrency: 16 },
  smoke: { products: 20, windowMs: 200, rounds: 1, warmMaxMs: 300, warmChunkMs: 150, warmMinCalls: 100, concurrency: 4 },
};

/** One side of the comparison: which app, and the environment it runs with. */
export interface SideSpec {
  /** A folder under bench/apps. */
  app: string;
  /** What the report calls it ("metrics off", "one invariant"). */
  label: string;
  env?: Record<string, string>;
  /** Headers every request of this side carries, seeding included (a bearer token). */
  headers?: Record<string, string>;
}

/** What the two sides are measured on: durable `set_price` writes, or GETs of a product (answered from memory). */
export type MeasuredCall = 'set_price' | 'get';

export interface Side {
  label: string;
  calls: number;
  errors: number;
  callsPerSec: number;
  srvCpuUsPerCall: number;
  otherCores: number;
}

export interface SideBySideResult {
  a: Side;
  b: Side;
  /** Server CPU per call, B / A, over every measured call. */
  cpuRatio: number;
  /** The median of each round's B / A: what budgets are judged on. */
  medianRatio: number;
  /** Each round's B / A, in order. */
  roundRatios: number[];
}

const side = (label: string, windows: Measured[]): Side => {
  const m = combine(windows);
  return { label, calls: m.load.calls, errors: m.load.errors, callsPerSec: m.load.callsPerSec, srvCpuUsPerCall: m.srvCpuMsPerCall * 1000, otherCores: m.otherCores };
};

const median = (xs: number[]): number => {
  const s = [...xs].sort((x, y) => x - y);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

const start = (ctx: BenchContext, spec: SideSpec, tag: string): Promise<SpawnedServer> => {
  const dir = freshDataDir(ctx.dataRoot, `${spec.app}-${tag}`);
  ctx.track(dir);
  return spawnWo(['run', `${repoRoot}bench/apps/${spec.app}`, '--data', dir, '--listen', '127.0.0.1:0'], {
    readyTimeoutMs: 15_000,
    stopTimeoutMs: 3000,
    outputLimit: 16_384,
    env: { WO_LOG_LEVEL: 'Info', ...spec.env },
  });
};

/**
 * Runs the comparison. `name` prefixes the progress lines; `whileMeasuring` (optional) is started once both sides
 * are warm and stopped when the last window ends (e.g. a scraper of side B), with B's server; `overrides` changes the
 * mode's sizes (e.g. more rounds).
 */
export async function runSideBySide(
  ctx: BenchContext,
  name: string,
  specs: readonly [SideSpec, SideSpec],
  whileMeasuring?: (b: SpawnedServer) => () => void,
  overrides: Partial<MeasureOptions> = {},
  call: MeasuredCall = 'set_price',
): Promise<SideBySideResult> {
  const o = { ...OPTIONS[ctx.mode], ...overrides };
  ctx.phase(`${name}: starting ${call} servers (${specs[0].label}; ${specs[1].label})`);
  const servers = await Promise.all([start(ctx, specs[0], 'a'), start(ctx, specs[1], 'b')]);
  let stopSideWork: (() => void) | undefined;
  try {
    const loads = servers.map((server, k) => {
      const headers = specs[k].headers;
      const request = (r: LoadRequest): LoadRequest => (headers === undefined ? r : { ...r, headers: { ...r.headers, ...headers } });
      return {
        url: server.url,
        concurrency: o.concurrency,
        makeRequest: call === 'get'
          ? (i: number) => request(restGet(1 + ((i * 7919) % o.products)))
          : (i: number) => request(restSetPrice(1 + ((i * 7919) % o.products), 1 + (i % 500))),
        check: (s: number, b: string) => isRow(s, b, 200),
      };
    });
    for (const [k, server] of servers.entries()) {
      await seedProducts(server.url, o.products, specs[k].headers);
      ctx.phase(`${name}: warming ${call}, ${specs[k].label}`);
      const w = await warmUntilStable({ load: loads[k], pid: server.pid, chunkMs: o.warmChunkMs, maxMs: o.warmMaxMs, minCalls: o.warmMinCalls });
      if (w.errors) ctx.warn(`${name} warm-up (${specs[k].label}): ${w.errors} errors, first: ${w.firstError}`);
    }
    stopSideWork = whileMeasuring?.(servers[1]);
    const windows: [Measured[], Measured[]] = [[], []];
    for (let round = 0; round < o.rounds; round++) {
      ctx.phase(`${name}: ${call}, ${specs[0].label} and ${specs[1].label}, round ${round + 1}/${o.rounds}`);
      // Alternate which side goes first, so a drift of the machine weighs on both alike.
      const order = round % 2 === 0 ? [0, 1] : [1, 0];
      for (const k of order) windows[k].push(await measure(servers[k], loads[k], o.windowMs));
    }
    const a = side(specs[0].label, windows[0]);
    const b = side(specs[1].label, windows[1]);
    const roundRatios = windows[1].map((w, i) => w.srvCpuMsPerCall / windows[0][i].srvCpuMsPerCall);
    return { a, b, cpuRatio: b.srvCpuUsPerCall / a.srvCpuUsPerCall, medianRatio: median(roundRatios), roundRatios };
  } finally {
    stopSideWork?.();
    await Promise.all(servers.map((s) => s.stop()));
  }
}

/** The comparison's table and verdict, for a scenario's section of the report. */
export const renderSideBySide = (r: SideBySideResult, what: string, budget: number): string[] => [
  '| side | calls | calls/s | server CPU/call | other cores |',
  '|---|---:|---:|---:|---:|',
  ...[r.a, r.b].map((s) => `| ${s.label} | ${s.calls} | ${s.callsPerSec.toFixed(0)} | ${s.srvCpuUsPerCall.toFixed(1)} µs | ${s.otherCores.toFixed(2)} |`),
  '',
  `Server CPU per call, ${what}: median of ${r.roundRatios.length} paired rounds **${r.medianRatio.toFixed(3)}x** (budget <= ${budget}x: ${r.medianRatio <= budget ? 'PASS' : 'MISS'}); over all calls ${r.cpuRatio.toFixed(3)}x; rounds ${r.roundRatios.map((x) => x.toFixed(3)).join(', ')}.`,
];
