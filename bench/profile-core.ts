// Where the server's main-thread CPU goes in the bench:core scenarios. Each scenario gets a fresh server
// (ours on a fresh data dir, or the plain node:http peer) under --cpu-prof; it is warmed, loaded for a
// measured window, and stopped. Only samples inside the measured window are counted (the profile's
// clock is CLOCK_MONOTONIC, like process.hrtime), so start-up and warm-up do not dilute the shares.
// Frames in src/ are mapped back to their TypeScript line (tsx runs esbuild with minifyWhitespace, so
// the raw profile says line 1 for everything): the transform is redone with tsx's options.
// Prints self time by area, the top functions overall and the top functions in src/, per call.
// The main thread's profile is kept as bench/results/core-<scenario>.cpuprofile (git-ignored; open it
// in Chrome DevTools). The profiler slows the server: read the shares and µs/call side by side, not rates.
//   node --import tsx bench/profile-core.ts [create] [create_keyed] [get] [set_price] [floor_create] [plain]   (default: all)
// BENCH_PROFILE_MS (default 5000) sets the measured window; BENCH_TOP (default 20) the list lengths;
// BENCH_PROFILE_OUT another folder for the kept profiles.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { monoUs, readWindow, renderSelfTimes } from './lib/cpuprofile.ts';
import { runLoad, type LoadOptions, type LoadRequest } from './lib/load.ts';
import { spawnPeer, startWo } from './lib/wo.ts';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const dataRoot = process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-core');
const outDir = process.env.BENCH_PROFILE_OUT ?? join(repoRoot, 'bench', 'results');
const LOAD_MS = Number(process.env.BENCH_PROFILE_MS ?? 5000);
const WARM_MS = 3000;
const TOP = Number(process.env.BENCH_TOP ?? 20);
const json = { 'content-type': 'application/json' };

interface Scenario {
  server: 'wo' | 'plain' | 'floor';
  concurrency: number;
  /** products created before the warm-up (ids 1..seed) */
  seed: number;
  makeRequest: (i: number) => LoadRequest;
  status: number;
}
const create = (i: number): LoadRequest => ({
  method: 'POST',
  path: '/api/products',
  headers: json,
  body: JSON.stringify({ name: `p${i}`, price: 1 + (i % 1000), currency: 'USD' }),
});
let keysSent = 0;
const scenarios: Record<string, Scenario> = {
  create: { server: 'wo', concurrency: 32, seed: 0, makeRequest: create, status: 201 },
  // `create` with a fresh Idempotency-Key each (bench/idempotency.ts measures its cost side by side).
  create_keyed: {
    server: 'wo',
    concurrency: 32,
    seed: 0,
    // Its own count: `i` starts again with each load run, and a key sent again would be a replay.
    makeRequest: (i) => ({ ...create(i), headers: { ...json, 'idempotency-key': `profile-${process.pid}-${keysSent++}` } }),
    status: 201,
  },
  get: { server: 'wo', concurrency: 16, seed: 100, makeRequest: (i) => ({ method: 'GET', path: `/api/products/${1 + (i % 100)}` }), status: 200 },
  set_price: {
    server: 'wo',
    concurrency: 16,
    seed: 100,
    makeRequest: (i) => ({ method: 'POST', path: `/api/products/${1 + (i % 100)}/set_price`, headers: json, body: JSON.stringify({ price: 1 + (i % 1000) }) }),
    status: 200,
  },
  // The durable-write floor (bench/peers/durable-floor.ts) on the same creates as `create`.
  floor_create: { server: 'floor', concurrency: 32, seed: 0, makeRequest: create, status: 201 },
  plain: {
    server: 'plain',
    concurrency: 16,
    seed: 0,
    makeRequest: (i) => ({ method: 'POST', path: '/echo', headers: json, body: JSON.stringify({ id: `p${i % 100}`, price: 1 + (i % 1000) }) }),
    status: 200,
  },
};

// ---------------------------------------------------------------------------------------------------
// Running a scenario

async function profileScenario(name: string, s: Scenario): Promise<void> {
  mkdirSync(dataRoot, { recursive: true });
  // One directory per run: --cpu-prof writes one file per thread (tsx's loader hooks run on a worker).
  const profDir = mkdtempSync(join(dataRoot, `profiles-${name}-`));
  const dataDir = s.server !== 'plain' ? mkdtempSync(join(dataRoot, `profile-${name}-`)) : undefined;
  const nodeArgs = ['--cpu-prof', '--cpu-prof-dir', profDir];
  // stopTimeoutMs: the profile is written on exit
  const server =
    s.server === 'wo'
      ? await startWo({ dir: dataDir!, env: { WO_GROUP_COMMIT: 'on' }, nodeArgs, stopTimeoutMs: 15_000 })
      : s.server === 'floor'
      ? await spawnPeer('bench/peers/durable-floor.ts', { env: { DATA_DIR: dataDir! }, nodeArgs, stopTimeoutMs: 15_000 })
      : await spawnPeer('bench/peers/plain-http.ts', { nodeArgs, stopTimeoutMs: 15_000 });
  let window = { from: 0, to: 0, calls: 0, perSec: 0 };
  try {
    const base: Omit<LoadOptions, 'durationMs'> = {
      url: server.url,
      concurrency: s.concurrency,
      makeRequest: s.makeRequest,
      check: (status) => status === s.status,
    };
    if (s.seed) await runLoad({ ...base, concurrency: 4, totalRequests: s.seed, makeRequest: create, check: (st) => st === 201 });
    await runLoad({ ...base, durationMs: WARM_MS });
    const from = monoUs();
    const r = await runLoad({ ...base, durationMs: LOAD_MS });
    window = { from, to: monoUs(), calls: r.calls, perSec: r.callsPerSec };
    if (r.errors) console.error(`${name}: ${r.errors} errors, first: ${r.firstError}`);
  } finally {
    await server.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
  const main = await readWindow(profDir, window.from, window.to, join(outDir, `core-${name}.cpuprofile`));
  const us = (v: number) => (window.calls ? v / window.calls : Number.NaN);
  console.log(`\n== ${name}: ${s.server === 'wo' ? 'wo' : `${s.server} peer`}, concurrency ${s.concurrency}, ` +
    `${Math.round(window.perSec)} calls/s under the profiler, ${window.calls} calls in the window`);
  console.log(`main-thread busy time in the window: ${(main.total / 1000).toFixed(0)} ms = ${us(main.total).toFixed(1)} µs/call` +
    `${main.windowed ? '' : ' (window not found in the profile: all samples counted)'}; bench/results/core-${name}.cpuprofile`);
  console.log(renderSelfTimes(main, window.calls, TOP));
}

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
for (const name of wanted.length ? wanted : Object.keys(scenarios)) {
  const s = scenarios[name];
  if (!s) throw new Error(`unknown scenario ${name}; pick from ${Object.keys(scenarios).join(', ')}`);
  await profileScenario(name, s);
}
