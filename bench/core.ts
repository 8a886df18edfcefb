// The core budgets in one run (architecture.md, "Performance budgets"):
//   1. durable REST creates/s at 32 in flight, group commit on and off (one server process each,
//      each on a fresh data dir on the same disk);
//   2. the disk's raw fsync rate in the same directory, before and after the create runs (mean used);
//   3. creates/s (on) / fsync rate (budget >= 10x), and on / off;
//   4. server CPU per request of our edge (GET /api/products/:id; also the durable POST set_price)
//      against the plain node:http JSON echo peer at the same concurrency (budget: GET <= 2x).
// Prints a table and a budgets section, and writes the same to bench/results/core.json.
//   npm run bench:core              (about 70 s)
//   npm run bench:core -- --quick   (about 35 s)
// BENCH_DATA_DIR: the data disk/dir (default <repo>/.data/bench-core); BENCH_EDGE_CONCURRENCY (default 16).
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { measureFsyncRate } from './fsync.ts';
import { cpuBetween, sampleSystemCpu } from './lib/cpu.ts';
import { runLoad, type LoadRequest, type LoadResult } from './lib/load.ts';
import { combine, measure, watched, type Load, type Measured } from './lib/measure.ts';
import { spawnPeer, type SpawnedServer } from './lib/wo.ts';
import { formatNumber, renderTable, type Cell } from './lib/table.ts';
import { warmUntilStable, type WarmupResult } from './lib/warmup.ts';
import { freshDataDir as freshDir, isRow, plainEcho, repoRoot, restCreate, restGet, restSetPrice, startWo as startWoServer } from './lib/wo.ts';

const QUICK = process.argv.includes('--quick');
const T = QUICK
  ? { fsyncMs: 1000, createWarmMaxMs: 2500, createMs: 3000, edgeWarmMaxMs: 2500, edgeMs: 1500, rounds: 1 }
  : { fsyncMs: 2000, createWarmMaxMs: 5000, createMs: 6000, edgeWarmMaxMs: 6000, edgeMs: 3000, rounds: 3 };
const CREATE_CONCURRENCY = 32;
const EDGE_CONCURRENCY = Number(process.env.BENCH_EDGE_CONCURRENCY ?? 16);
const SEED_PRODUCTS = 100;
const BUDGET = { createsOverFsync: 10, edgeCpuOverPlain: 1.3 };

const dataRoot = process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-core');
// Only a full run replaces the committed results; a quick one goes under .data (not committed).
const resultsFile = QUICK ? join(repoRoot, '.data', 'bench-quick', 'core.json') : join(repoRoot, 'bench', 'results', 'core.json');
// Measuring: bench/lib/measure.ts (measure, combine, watched).

// ---------------------------------------------------------------------------------------------------
// Servers and requests

function freshDataDir(label: string): string {
  return freshDir(dataRoot, label);
}

async function startWo(label: string, groupCommit: 'on' | 'off'): Promise<{ server: SpawnedServer; dir: string }> {
  const dir = freshDataDir(label);
  const server = await startWoServer({ dir, env: { WO_GROUP_COMMIT: groupCommit, WO_LOG_LEVEL: 'Info' } });
  return { server, dir };
}

const createProduct = restCreate;
const getProduct = (i: number): LoadRequest => restGet(1 + (i % SEED_PRODUCTS));
const setPrice = (i: number): LoadRequest => restSetPrice(1 + (i % SEED_PRODUCTS), 1 + (i % 1000));

// ---------------------------------------------------------------------------------------------------
// The run

const wallStart = performance.now();
const fsyncDir = join(dataRoot, 'fsync');
const phase = (what: string) => console.error(`[${((performance.now() - wallStart) / 1000).toFixed(1)} s] ${what}`);
const cleanup: string[] = [];
// The servers' data dirs go whatever happens (spawn.ts kills the children on exit too).
process.once('exit', () => {
  for (const dir of cleanup) rmSync(dir, { recursive: true, force: true });
});

interface CreateRun extends Measured {
  groupCommit: 'on' | 'off';
  warm: WarmupResult;
}

async function createRun(groupCommit: 'on' | 'off'): Promise<CreateRun> {
  phase(`creates, group commit ${groupCommit}`);
  flushDirtyPages();
  const { server, dir } = await startWo(`gc-${groupCommit}`, groupCommit);
  cleanup.push(dir);
  try {
    let seq = 0; // the warm-up's creates count too: ids only grow
    const load: Load = {
      url: server.url,
      concurrency: CREATE_CONCURRENCY,
      makeRequest: () => createProduct(seq++),
      check: (status, body) => isRow(status, body, 201),
    };
    // Warmed like the edge: V8 takes thousands of calls to settle (group commit off is disk-bound, so it
    // usually hits the cap first).
    const warm = await watched(server, `warming creates ${groupCommit}`, () =>
      warmUntilStable({ load, pid: server.pid, chunkMs: 500, maxMs: T.createWarmMaxMs, minCalls: 3000 }));
    if (warm.errors > 0) console.error(`  warm-up creates ${groupCommit}: ${warm.errors} errors, first: ${warm.firstError}`);
    return { groupCommit, warm, ...(await measure(server, load, T.createMs)) };
  } finally {
    await server.stop();
  }
}

/** The disk's raw rate, starting from clean page cache: a previous run's writeback would slow it down. */
function fsyncRate(when: string): number {
  phase(`raw fsync rate in ${fsyncDir} (${when})`);
  flushDirtyPages();
  return measureFsyncRate({ dir: fsyncDir, durationMs: T.fsyncMs });
}

function flushDirtyPages(): void {
  try {
    execFileSync('sync', { stdio: 'ignore', timeout: 30_000 });
  } catch {
    // no sync(1): measure anyway
  }
}

// How busy the machine is before we start: on shared cores a neighbour skews everything after.
const sysAtStart = sampleSystemCpu();
await new Promise((r) => setTimeout(r, 500));
const busyCoresAtStart = cpuBetween(sysAtStart, sampleSystemCpu()).utilisation;

const fsyncBefore = fsyncRate('before');
const createsOn = await createRun('on');
const createsOff = await createRun('off');
const fsyncAfter = fsyncRate('after');
const fsyncMean = (fsyncBefore + fsyncAfter) / 2;

// Edge cost: the plain echo peer and our server side by side, both warmed until CPU/call is stable,
// then measured in alternating windows so drift on the shared cores hits both alike.
phase('edge: starting the plain node:http peer and our server');
const plain = await spawnPeer('bench/peers/plain-http.ts');
const wo = await startWo('edge', 'on');
cleanup.push(wo.dir);
interface EdgeScenario {
  name: string;
  server: SpawnedServer;
  load: Load;
  warm?: WarmupResult;
  windows: Measured[];
}
let edge: EdgeScenario[];
try {
  const seeded = await runLoad({
    url: wo.server.url,
    concurrency: 4,
    totalRequests: SEED_PRODUCTS,
    makeRequest: createProduct,
    check: (status, body) => isRow(status, body, 201),
  });
  if (seeded.calls !== SEED_PRODUCTS) throw new Error(`seeding products failed: ${seeded.firstError}`);
  const loadOf = (server: SpawnedServer, makeRequest: (i: number) => LoadRequest, check: Load['check']): Load => ({
    url: server.url,
    concurrency: EDGE_CONCURRENCY,
    makeRequest,
    check,
  });
  edge = [
    {
      name: 'plain node:http JSON echo (POST)',
      server: plain,
      load: loadOf(plain, plainEcho, (s, b) => s === 200 && b.startsWith('{"ok":true')),
      windows: [],
    },
    {
      name: 'wo GET /api/products/:id',
      server: wo.server,
      load: loadOf(wo.server, getProduct, (s, b) => isRow(s, b, 200)),
      windows: [],
    },
    {
      name: 'wo POST set_price (durable)',
      server: wo.server,
      load: loadOf(wo.server, setPrice, (s, b) => isRow(s, b, 200)),
      windows: [],
    },
  ];
  for (const s of edge) {
    phase(`edge: warming ${s.name}`);
    s.warm = await watched(s.server, `warming ${s.name}`, () =>
      warmUntilStable({ load: s.load, pid: s.server.pid, chunkMs: 500, maxMs: T.edgeWarmMaxMs, minCalls: 3000 }));
    if (s.warm.errors > 0) console.error(`  warm-up ${s.name}: ${s.warm.errors} errors, first: ${s.warm.firstError}`);
  }
  for (let round = 0; round < T.rounds; round++) {
    for (const s of edge) {
      phase(`edge: measuring ${s.name} (round ${round + 1}/${T.rounds})`);
      await runLoad({ ...s.load, durationMs: 200 }); // reopen this scenario's connections, not reported
      s.windows.push(await measure(s.server, s.load, T.edgeMs));
    }
  }
} finally {
  await plain.stop();
  await wo.server.stop();
}

// ---------------------------------------------------------------------------------------------------
// Report

const edgeResults = edge.map((s) => ({ ...s, total: combine(s.windows) }));
const [plainR, getR, setR] = edgeResults;
const ratio = {
  createsOnOverFsync: createsOn.load.callsPerSec / fsyncMean,
  createsOnOverOff: createsOn.load.callsPerSec / createsOff.load.callsPerSec,
  createsOffOverFsync: createsOff.load.callsPerSec / fsyncMean,
  getCpuOverPlain: getR.total.srvCpuMsPerCall / plainR.total.srvCpuMsPerCall,
  setPriceCpuOverPlain: setR.total.srvCpuMsPerCall / plainR.total.srvCpuMsPerCall,
};
const cores = availableParallelism();
// With both processes on the same cores, calls/s cannot exceed cores / (server + generator CPU per call).
const cpuCeiling = (m: Measured) => cores / (m.srvCpuMsPerCall + m.genCpuMsPerCall) * 1000;
const passes = {
  createsOverFsync: ratio.createsOnOverFsync >= BUDGET.createsOverFsync,
  edgeCpu: ratio.getCpuOverPlain <= BUDGET.edgeCpuOverPlain,
};

const row = (name: string, conc: number, m: Measured, extra: Cell = '-'): Cell[] => [
  name,
  conc,
  m.load.callsPerSec,
  m.load.p50Ms,
  m.load.p99Ms,
  m.srvCpuMsPerCall * 1000,
  m.genCpuMsPerCall * 1000,
  m.load.errors,
  m.srvCores,
  m.srvRssMb,
  m.otherCores,
  extra,
];
const header = ['scenario', 'conc', 'calls/s', 'p50 ms', 'p99 ms', 'srv CPU µs/call', 'gen CPU µs/call', 'errors', 'srv cores', 'srv RSS MB', 'other cores', 'vs plain'];
const table = renderTable(header, [
  row('wo REST create, group commit ON', CREATE_CONCURRENCY, createsOn),
  row('wo REST create, group commit OFF', CREATE_CONCURRENCY, createsOff),
  row(plainR.name, EDGE_CONCURRENCY, plainR.total, '1.00x'),
  row(`${getR.name}  [budget]`, EDGE_CONCURRENCY, getR.total, `${ratio.getCpuOverPlain.toFixed(2)}x`),
  row(setR.name, EDGE_CONCURRENCY, setR.total, `${ratio.setPriceCpuOverPlain.toFixed(2)}x`),
]);
const x = (n: number) => `${n.toFixed(2)}x`;
const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const warmText = (w: WarmupResult | undefined) => (w ? `${secs(w.ms)}${w.stable ? '' : ' (not stable)'}` : '-');
const perRound = plainR.windows.map((p, i) => getR.windows[i].srvCpuMsPerCall / p.srvCpuMsPerCall);
// Things that make this run's figures less trustworthy, said out loud.
const warnings: string[] = [];
if (busyCoresAtStart > 0.3) warnings.push(`${busyCoresAtStart.toFixed(2)} cores were busy before the run started`);
const noisy = [createsOn, createsOff, ...edgeResults.map((s) => s.total)].filter((m) => m.otherCores > 0.3);
if (noisy.length) {
  warnings.push(`other cores up to ${Math.max(...noisy.map((m) => m.otherCores)).toFixed(2)}: something else is using the CPUs; rerun when quiet`);
}
if (Math.abs(fsyncBefore - fsyncAfter) > 0.3 * fsyncMean) {
  warnings.push(`the fsync rate moved by ${Math.round((100 * Math.abs(fsyncBefore - fsyncAfter)) / fsyncMean)}% during the run (shared disk?)`);
}
const failed = [createsOn, createsOff, ...edgeResults.map((s) => s.total)].filter((m) => m.load.errors > 0);
if (failed.length) warnings.push(`${failed.reduce((a, m) => a + m.load.errors, 0)} failed requests (see stderr)`);
const lines = [
  `bench:core ${QUICK ? '--quick' : '(full)'}  node ${process.version}, ${cores} cores, data dirs and fsync probe under ${dataRoot}`,
  '',
  table,
  '',
  `raw fsync rate (100 B append + fsync, ${fsyncDir}): before ${formatNumber(fsyncBefore)} /s, after ${formatNumber(fsyncAfter)} /s, mean ${formatNumber(fsyncMean)} /s`,
  `creates/s at ${CREATE_CONCURRENCY} in flight: ON ${formatNumber(createsOn.load.callsPerSec)}, OFF ${formatNumber(createsOff.load.callsPerSec)}; ` +
    `ON/OFF ${x(ratio.createsOnOverOff)}, OFF/fsync ${x(ratio.createsOffOverFsync)}`,
  `CPU ceiling for creates ON, ${cores} cores / (srv + gen CPU per call): ${formatNumber(cpuCeiling(createsOn))} /s ` +
    `(srv cores ${createsOn.srvCores.toFixed(2)}: ~1.0 means its one JS thread is saturated, so CPU, not the disk, is the limit)`,
  '',
  'budgets',
  `  durable creates/s (group commit ON, ${CREATE_CONCURRENCY} in flight) / raw fsync rate >= ${BUDGET.createsOverFsync}x: ` +
    `${x(ratio.createsOnOverFsync)}  ${verdict(passes.createsOverFsync)}`,
  `  edge server CPU/request, GET /api/products/:id / plain node:http JSON echo <= ${BUDGET.edgeCpuOverPlain}x: ` +
    `${x(ratio.getCpuOverPlain)}  ${verdict(passes.edgeCpu)}${perRound.length > 1 ? `  (per round: ${perRound.map(x).join(' ')})` : ''}`,
  `  (no budget) durable POST set_price / plain echo: ${x(ratio.setPriceCpuOverPlain)}; creates ON / OFF: ${x(ratio.createsOnOverOff)}`,
  ...(warnings.length ? ['', ...warnings.map((w) => `warning: ${w}`)] : []),
  '',
  `warm-up until CPU/call is stable within 10%: creates ON ${warmText(createsOn.warm)}, OFF ${warmText(createsOff.warm)} (max ${secs(T.createWarmMaxMs)}); ` +
    edgeResults.map((s) => `${s.name.split(' (')[0]} ${warmText(s.warm)}`).join(', ') + ` (max ${secs(T.edgeWarmMaxMs)})`,
  `measured: creates ${secs(T.createMs)} per server; edge ${T.rounds} x ${secs(T.edgeMs)} per scenario, alternating; ` +
    `total wall ${secs(performance.now() - wallStart)}`,
];
console.log(lines.join('\n'));

const pick = (m: Measured) => ({
  callsPerSec: m.load.callsPerSec,
  calls: m.load.calls,
  errors: m.load.errors,
  ...(m.load.firstError ? { firstError: m.load.firstError } : {}),
  p50Ms: m.load.p50Ms,
  p99Ms: m.load.p99Ms,
  p999Ms: m.load.p999Ms,
  srvCpuUsPerCall: m.srvCpuMsPerCall * 1000,
  genCpuUsPerCall: m.genCpuMsPerCall * 1000,
  srvCores: m.srvCores,
  srvRssMb: m.srvRssMb,
  otherCores: m.otherCores,
  durationMs: m.load.durationMs,
});
const report = {
  bench: 'core',
  mode: QUICK ? 'quick' : 'full',
  at: new Date().toISOString(),
  node: process.version,
  cores,
  busyCoresAtStart,
  dataDir: dataRoot,
  durations: T,
  fsync: { dir: fsyncDir, beforePerSec: fsyncBefore, afterPerSec: fsyncAfter, meanPerSec: fsyncMean },
  creates: {
    concurrency: CREATE_CONCURRENCY,
    groupCommitOn: { ...pick(createsOn), warmup: { ms: createsOn.warm.ms, calls: createsOn.warm.calls, stable: createsOn.warm.stable } },
    groupCommitOff: { ...pick(createsOff), warmup: { ms: createsOff.warm.ms, calls: createsOff.warm.calls, stable: createsOff.warm.stable } },
    cpuCeilingOnPerSec: cpuCeiling(createsOn),
  },
  edge: {
    concurrency: EDGE_CONCURRENCY,
    scenarios: edgeResults.map((s) => ({
      name: s.name,
      ...pick(s.total),
      windows: s.windows.map(pick),
      warmup: s.warm && { ms: s.warm.ms, calls: s.warm.calls, stable: s.warm.stable },
    })),
  },
  ratios: { ...ratio, getCpuOverPlainPerRound: perRound },
  warnings,
  budgets: [
    {
      name: 'durable creates/s (group commit on, 32 in flight) / raw fsync rate',
      want: `>= ${BUDGET.createsOverFsync}`,
      value: ratio.createsOnOverFsync,
      result: verdict(passes.createsOverFsync),
    },
    {
      name: 'edge server CPU per request: GET /api/products/:id / plain node:http JSON echo',
      want: `<= ${BUDGET.edgeCpuOverPlain}`,
      value: ratio.getCpuOverPlain,
      result: verdict(passes.edgeCpu),
    },
  ],
  text: lines.join('\n'),
};
mkdirSync(dirname(resultsFile), { recursive: true });
writeFileSync(resultsFile, `${JSON.stringify(report, null, 2)}\n`);
console.log(`\nwrote ${resultsFile.slice(repoRoot.length)}`);
