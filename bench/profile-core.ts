// Where the server's main-thread CPU goes in the bench:core scenarios. Each scenario gets a fresh server
// (ours on a fresh data dir, or the plain node:http peer) under --cpu-prof; it is warmed, loaded for a
// measured window, and stopped. Only samples inside the measured window are counted (the profile's
// clock is CLOCK_MONOTONIC, like process.hrtime), so start-up and warm-up do not dilute the shares.
// Frames in src/ are mapped back to their TypeScript line (tsx runs esbuild with minifyWhitespace, so
// the raw profile says line 1 for everything): the transform is redone with tsx's options.
// Prints self time by area, the top functions overall and the top functions in src/, per call.
// The main thread's profile is kept as bench/results/core-<scenario>.cpuprofile (git-ignored; open it
// in Chrome DevTools). The profiler slows the server: read the shares and µs/call side by side, not rates.
//   node --import tsx bench/profile-core.ts [create] [get] [set_price] [plain]   (default: all four)
// BENCH_PROFILE_MS (default 5000) sets the measured window; BENCH_TOP (default 20) the list lengths.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runLoad, type LoadOptions, type LoadRequest } from './lib/load.ts';
import { spawnServer, type SpawnOptions } from './lib/spawn.ts';
import { renderTable } from './lib/table.ts';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const dataRoot = process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-core');
const outDir = join(repoRoot, 'bench', 'results');
const LOAD_MS = Number(process.env.BENCH_PROFILE_MS ?? 5000);
const WARM_MS = 3000;
const TOP = Number(process.env.BENCH_TOP ?? 20);
const json = { 'content-type': 'application/json' };

interface Scenario {
  server: 'wo' | 'plain';
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
const scenarios: Record<string, Scenario> = {
  create: { server: 'wo', concurrency: 32, seed: 0, makeRequest: create, status: 201 },
  get: { server: 'wo', concurrency: 16, seed: 100, makeRequest: (i) => ({ method: 'GET', path: `/api/products/${1 + (i % 100)}` }), status: 200 },
  set_price: {
    server: 'wo',
    concurrency: 16,
    seed: 100,
    makeRequest: (i) => ({ method: 'POST', path: `/api/products/${1 + (i % 100)}/set_price`, headers: json, body: JSON.stringify({ price: 1 + (i % 1000) }) }),
    status: 200,
  },
  plain: {
    server: 'plain',
    concurrency: 16,
    seed: 0,
    makeRequest: (i) => ({ method: 'POST', path: '/echo', headers: json, body: JSON.stringify({ id: `p${i % 100}`, price: 1 + (i % 1000) }) }),
    status: 200,
  },
};

// ---------------------------------------------------------------------------------------------------
// Reading a .cpuprofile

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

type Transform = (code: string, opts: Record<string, unknown>) => { code: string; map: string };
let esbuildTransform: Transform | null | undefined;
const maps = new Map<string, SourceMap | null>();

/** The source map of tsx's output for a repo .ts file, rebuilt with tsx 4's esbuild options. */
async function sourceMapOf(path: string): Promise<SourceMap | null> {
  if (maps.has(path)) return maps.get(path)!;
  let map: SourceMap | null = null;
  try {
    if (esbuildTransform === undefined) {
      esbuildTransform = ((await import('esbuild')) as unknown as { transformSync: Transform }).transformSync;
    }
    if (esbuildTransform && existsSync(path)) {
      const out = esbuildTransform(readFileSync(path, 'utf8'), {
        loader: 'ts',
        format: 'esm',
        target: `node${process.versions.node}`,
        sourcemap: true,
        sourcefile: path,
        minifyWhitespace: true,
        keepNames: true,
      });
      map = new SourceMap(JSON.parse(out.map));
    }
  } catch {
    esbuildTransform ??= null;
  }
  maps.set(path, map);
  return map;
}

const sourceLines = new Map<string, string[]>();
function sourceLine(path: string, line: number): string {
  if (!sourceLines.has(path)) sourceLines.set(path, existsSync(path) ? readFileSync(path, 'utf8').split('\n') : []);
  return (sourceLines.get(path)![line] ?? '').trim().replace(/\s+/g, ' ').slice(0, 70);
}

function shortUrl(url: string): string {
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('node_modules/');
  if (nm >= 0) return u.slice(nm + 'node_modules/'.length);
  return u.startsWith(repoRoot) ? u.slice(repoRoot.length) : u;
}

function areaOf(f: CallFrame): string {
  if (!f.url) return f.functionName.startsWith('(') ? f.functionName : '(native)';
  const u = shortUrl(f.url);
  if (u.startsWith('src/')) return 'src/ (ours)';
  if (u.startsWith('bench/')) return 'bench/ (peer)';
  if (u.startsWith('effect/')) return 'effect';
  if (u.startsWith('@effect/')) return '@effect/*';
  if (u.startsWith('node:')) return 'node: internals';
  return u.includes('/') ? u.split('/')[0] : u;
}

/** A readable name for a frame; repo .ts frames are mapped to their original line. */
async function labelOf(f: CallFrame): Promise<string> {
  const name = f.functionName || '(anonymous)';
  if (!f.url) return name;
  const u = shortUrl(f.url);
  const path = f.url.replace(/^file:\/\//, '');
  if (path.startsWith(repoRoot) && path.endsWith('.ts')) {
    const entry = (await sourceMapOf(path))?.findEntry(f.lineNumber, f.columnNumber);
    if (entry && 'originalLine' in entry) {
      return `${name}  ${u}:${entry.originalLine + 1}  ${sourceLine(path, entry.originalLine)}`;
    }
  }
  return `${name}  ${u}:${f.lineNumber + 1}:${f.columnNumber + 1}`;
}

interface SelfTimes {
  /** busy µs in the window (idle excluded) */
  total: number;
  byFunction: Map<string, number>;
  byArea: Map<string, number>;
  /** false when the window could not be located in the profile and every sample was counted */
  windowed: boolean;
}

async function selfTimes(profile: CpuProfile, fromUs: number, toUs: number): Promise<SelfTimes> {
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const windowed = fromUs >= profile.startTime && toUs <= profile.endTime;
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  const labels = new Map<number, string>();
  let total = 0;
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    // The delta before sample i+1 is the time sample i stood for.
    const dt = profile.timeDeltas[i + 1] ?? 0;
    if (windowed && (t < fromUs || t > toUs)) continue;
    const node = byNode.get(profile.samples[i])!;
    if (node.callFrame.functionName === '(idle)') continue;
    total += dt;
    let key = labels.get(node.id);
    if (key === undefined) labels.set(node.id, (key = await labelOf(node.callFrame)));
    byFunction.set(key, (byFunction.get(key) ?? 0) + dt);
    const a = areaOf(node.callFrame);
    byArea.set(a, (byArea.get(a) ?? 0) + dt);
  }
  return { total, byFunction, byArea, windowed };
}

// ---------------------------------------------------------------------------------------------------
// Running a scenario

const monoUs = () => Number(process.hrtime.bigint() / 1000n);

async function profileScenario(name: string, s: Scenario): Promise<void> {
  mkdirSync(dataRoot, { recursive: true });
  // One directory per run: --cpu-prof writes one file per thread (tsx's loader hooks run on a worker).
  const profDir = mkdtempSync(join(dataRoot, `profiles-${name}-`));
  const dataDir = s.server === 'wo' ? mkdtempSync(join(dataRoot, `profile-${name}-`)) : undefined;
  const nodeArgs = ['--cpu-prof', '--cpu-prof-dir', profDir];
  const spawnOpts: SpawnOptions =
    s.server === 'wo'
      ? {
          file: 'bin/wo.mjs',
          importTsx: false,
          args: ['run', 'examples/pricing', '--data', dataDir!, '--listen', '127.0.0.1:0'],
          env: { WO_GROUP_COMMIT: 'on' },
          ready: /serving app "pricing" \(products\) at (http:\/\/\S+)/,
          nodeArgs,
          stopTimeoutMs: 15_000, // the profile is written on exit
        }
      : { file: 'bench/peers/plain-http.ts', nodeArgs, stopTimeoutMs: 15_000 };
  const server = await spawnServer(spawnOpts);
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
  const files = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'));
  const results = [];
  for (const f of files) {
    const profile = JSON.parse(readFileSync(join(profDir, f), 'utf8')) as CpuProfile;
    results.push({ f, ...(await selfTimes(profile, window.from, window.to)) });
  }
  results.sort((a, b) => b.total - a.total); // the main thread saw the requests: the busiest one
  if (results.length === 0) throw new Error(`${name}: no profile written (did the server exit cleanly?)`);
  const main = results[0];
  mkdirSync(outDir, { recursive: true });
  copyFileSync(join(profDir, main.f), join(outDir, `core-${name}.cpuprofile`));
  rmSync(profDir, { recursive: true, force: true });

  const us = (v: number) => (window.calls ? v / window.calls : Number.NaN);
  const share = (v: number) => `${((100 * v) / main.total).toFixed(1)}%`;
  console.log(`\n== ${name}: ${s.server === 'wo' ? 'wo' : 'plain node:http peer'}, concurrency ${s.concurrency}, ` +
    `${Math.round(window.perSec)} calls/s under the profiler, ${window.calls} calls in the window`);
  console.log(`main-thread busy time in the window: ${(main.total / 1000).toFixed(0)} ms = ${us(main.total).toFixed(1)} µs/call` +
    `${main.windowed ? '' : ' (window not found in the profile: all samples counted)'}; bench/results/core-${name}.cpuprofile`);
  const sorted = [...main.byFunction].sort((a, b) => b[1] - a[1]);
  const rows = (list: [string, number][]) => list.slice(0, TOP).map(([k, v]) => [k, share(v), us(v)]);
  console.log(renderTable(['area', 'share', 'µs/call'], rows([...main.byArea].sort((a, b) => b[1] - a[1]))));
  console.log(`\ntop ${TOP} self time, all code:`);
  console.log(renderTable(['function', 'share', 'µs/call'], rows(sorted)));
  const ours = sorted.filter(([k]) => /  (src|bench)\//.test(k));
  if (ours.length) {
    console.log(`\ntop ${TOP} self time in ${s.server === 'wo' ? 'src/' : 'bench/'}:`);
    console.log(renderTable(['function', 'share', 'µs/call'], rows(ours)));
  }
}

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
for (const name of wanted.length ? wanted : Object.keys(scenarios)) {
  const s = scenarios[name];
  if (!s) throw new Error(`unknown scenario ${name}; pick from ${Object.keys(scenarios).join(', ')}`);
  await profileScenario(name, s);
}
