// Smoke run of the benchmark kit against the reference peers, in one process and one run:
// plain node:http echo, the SDK v2 dual-era server (modern and legacy wires) and the SDK v1 server,
// each at concurrency 1, 16 and 64, plus the disk's raw fsync rate.
//   node --import tsx bench/peers-smoke.ts
// BENCH_DURATION_MS (default 2000) sets each measured run; WO_DATA_DIR the fsync directory.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { measureFsyncRate } from './fsync.ts';
import { cpuBetween, cpuMsPerCall, rssBytes, sampleCpu, sampleSystemCpu } from './lib/cpu.ts';
import { runLoad, type LoadOptions, type LoadRequest, type ResponseHeaders } from './lib/load.ts';
import { closeLegacySession, legacyToolCall, modernToolCall, openLegacySession, toolCallSucceeded } from '../testkit/mcp.ts';
import { spawnPeer, type SpawnedServer } from './lib/wo.ts';
import { renderTable, type Cell } from './lib/table.ts';
import { warmUntilStable } from './lib/warmup.ts';

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 2000);
// V8 needs thousands of calls before CPU per call settles (seconds, for the SDK peers), so each
// scenario is warmed until stable (capped), then briefly at every concurrency level.
const MAX_WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 4500);
const LEVEL_WARMUP_MS = 300;
const CONCURRENCIES = [1, 16, 64];
const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const dataDir = process.env.WO_DATA_DIR ?? join(repoRoot, '.data', 'bench');
const warmups: string[] = []; // one line per scenario, printed under the table

interface Scenario {
  name: string;
  /** Builds the request maker once the server is up (legacy wires need a handshake first). */
  prepare(url: string): Promise<{ makeRequest: (i: number) => LoadRequest; done?: () => Promise<void> }>;
  check(status: number, body: string, headers: ResponseHeaders): boolean;
}

interface Peer {
  file: string;
  env?: Record<string, string>;
  scenarios: Scenario[];
}

const priceArgs = (i: number) => ({ id: `p${i % 100}`, price: i });

const plainEcho: Scenario = {
  name: 'plain node:http echo',
  prepare: async () => ({
    makeRequest: (i) => ({
      method: 'POST',
      path: '/echo',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: `p${i % 100}`, price: i }),
    }),
  }),
  check: (status, body) => status === 200 && body.startsWith('{"ok":true'),
};

const modern = (label: string): Scenario => ({
  name: `${label} modern tools/call`,
  prepare: async () => ({ makeRequest: (i) => modernToolCall({ id: i, name: 'set_price', arguments: priceArgs(i) }) }),
  check: toolCallSucceeded,
});

// One session for the whole scenario, shared by every worker: ids are unique per run, so they never collide.
const legacy = (label: string): Scenario => ({
  name: `${label} legacy tools/call`,
  prepare: async (url) => {
    const session = await openLegacySession(url);
    return {
      makeRequest: (i) => legacyToolCall(session, { id: i + 1, name: 'set_price', arguments: priceArgs(i) }),
      done: () => closeLegacySession(session),
    };
  },
  check: toolCallSucceeded,
});

const peers: Peer[] = [
  { file: 'bench/peers/plain-http.ts', scenarios: [plainEcho] },
  { file: 'bench/peers/sdk-v2-server.ts', scenarios: [modern('sdk-v2'), legacy('sdk-v2 (sessions)')] },
  { file: 'bench/peers/sdk-v1-server.ts', scenarios: [legacy('sdk-v1 (stateful)')] },
];
if (process.env.SMOKE_EXTRA === '1') {
  peers.push({ file: 'bench/peers/sdk-v2-server.ts', env: { LEGACY: 'stateless' }, scenarios: [legacy('sdk-v2 (stateless)')] });
}

async function measureScenario(server: SpawnedServer, s: Scenario): Promise<Cell[][]> {
  const { makeRequest, done } = await s.prepare(server.url);
  const base = { url: server.url, makeRequest, check: s.check };
  try {
    const warm = await warmUntilStable({
      load: { ...base, concurrency: 16 },
      pid: server.pid,
      chunkMs: 750,
      maxMs: MAX_WARMUP_MS,
      minCalls: 3000,
    });
    if (warm.errors > 0) console.error(`  ${s.name} warm-up: ${warm.errors} errors, first: ${warm.firstError}`);
    warmups.push(`${s.name}: ${(warm.ms / 1000).toFixed(1)} s, ${warm.calls} calls${warm.stable ? '' : ' (not yet stable)'}`);
    const rows: Cell[][] = [];
    for (const c of CONCURRENCIES) rows.push(await measureLevel(server, s, { ...base, concurrency: c }));
    return rows;
  } finally {
    await done?.();
  }
}

async function measureLevel(server: SpawnedServer, s: Scenario, load: Omit<LoadOptions, 'durationMs'>): Promise<Cell[]> {
  const concurrency = load.concurrency;
  await runLoad({ ...load, durationMs: LEVEL_WARMUP_MS }); // opens this level's connections, not reported
  const before = sampleCpu(server.pid);
  const gen0 = sampleCpu(process.pid);
  const sys0 = sampleSystemCpu();
  const r = await runLoad({ ...load, durationMs: DURATION_MS });
  const cpu = cpuBetween(before, sampleCpu(server.pid));
  const gen = cpuBetween(gen0, sampleCpu(process.pid));
  const sys = cpuBetween(sys0, sampleSystemCpu());
  // Cores used by anything other than this server and this generator: a noisy neighbour shows here.
  const otherCores = Math.max(0, sys.cpuMs - cpu.cpuMs - gen.cpuMs) / sys.wallMs;
  if (r.firstError) console.error(`  ${s.name} c=${concurrency}: ${r.errors} errors, first: ${r.firstError}`);
  return [
    s.name,
    concurrency,
    r.callsPerSec,
    r.p50Ms,
    r.p99Ms,
    r.p999Ms,
    cpuMsPerCall(cpu, r.calls),
    r.clientCpuMsPerCall,
    r.errors,
    rssBytes(server.pid) / 2 ** 20,
    otherCores,
  ];
}

const wallStart = performance.now();
const fsyncRate = measureFsyncRate({ dir: dataDir, durationMs: 1000 });
const rows: Cell[][] = [];
for (const peer of peers) {
  const server = await spawnPeer(peer.file, { env: peer.env });
  try {
    for (const s of peer.scenarios) rows.push(...(await measureScenario(server, s)));
  } finally {
    await server.stop();
  }
}

console.log(
  renderTable(
    ['scenario', 'conc', 'calls/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'srv CPU ms/call', 'gen CPU ms/call', 'errors', 'srv RSS MB', 'other cores'],
    rows,
  ),
);
console.log(`\nraw fsync rate (100 B append + fsync, ${dataDir}): ${Math.round(fsyncRate)} /s`);
console.log(`warm-up at concurrency 16 until CPU/call is stable within 10% (max ${MAX_WARMUP_MS} ms):\n  ${warmups.join('\n  ')}`);
console.log(`${DURATION_MS} ms per measured run, after ${LEVEL_WARMUP_MS} ms at the same concurrency; total wall ${((performance.now() - wallStart) / 1000).toFixed(1)} s`);
