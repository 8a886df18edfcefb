// The cost of idempotency keys (src/commands/idempotency.ts), side by side in one run: durable
// REST creates at 32 in flight (closed-loop clients, group commit on) against two identical servers, one sent every
// create with a fresh Idempotency-Key and one sent none, each on a fresh data dir on the same disk. Both are warmed,
// then measured in alternating windows so that drift on shared cores hits both alike.
// Budget (architecture.md): server CPU per create with keys / without <= 1.1.
//   node --conditions=writeonce-source --import tsx bench/idempotency.ts            (about 60 s; writes bench/results/idempotency.json)
//   node --conditions=writeonce-source --import tsx bench/idempotency.ts --quick    (about 30 s; writes nothing)
// BENCH_DATA_DIR: the data disk/dir (default <repo>/.data/bench-idempotency).
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { combine, measure, watched, type Load, type Measured } from './lib/measure.ts';
import { threadCpu } from './lib/thread-cpu.ts';
import { warmUntilStable } from './lib/warmup.ts';
import { freshDataDir, isRow, repoRoot, restCreate, startWo, type SpawnedServer } from './lib/wo.ts';

const QUICK = process.argv.includes('--quick');
const T = QUICK ? { warmMaxMs: 2500, windowMs: 2000, rounds: 3 } : { warmMaxMs: 5000, windowMs: 3000, rounds: 6 };
const CONCURRENCY = 32;
const BUDGET = { createsRatio: 0.95, cpuRatio: 1.1 };
const dataRoot = process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-idempotency');

interface Side {
  name: 'with Idempotency-Key' | 'without keys';
  server: SpawnedServer;
  dir: string;
  load: Load;
  windows: Measured[];
  /** CPU ms of the server's main thread and of its other threads (LevelDB's) over the measured windows. */
  threads: { main: number; other: number };
}

const start = async (name: Side['name'], keyed: boolean): Promise<Side> => {
  const dir = freshDataDir(dataRoot, keyed ? 'keyed' : 'unkeyed');
  const server = await startWo({ dir, readyTimeoutMs: 120_000 });
  let seq = 0;
  const run = randomUUID();
  const makeRequest = keyed
    ? () => {
      const r = restCreate(seq);
      return { ...r, headers: { ...r.headers, 'idempotency-key': `${run}-${seq++}` } };
    }
    : () => restCreate(seq++);
  return {
    name,
    server,
    dir,
    load: { url: server.url, concurrency: CONCURRENCY, makeRequest, check: (s, b) => isRow(s, b, 201) },
    windows: [],
    threads: { main: 0, other: 0 },
  };
};

const sides: Side[] = [];
try {
  sides.push(await start('with Idempotency-Key', true), await start('without keys', false));
  for (const s of sides) {
    console.error(`warming: ${s.name}`);
    await watched(s.server, `warming ${s.name}`, () =>
      warmUntilStable({ load: s.load, pid: s.server.pid, chunkMs: 500, maxMs: T.warmMaxMs, minCalls: 3000 }));
  }
  for (let round = 0; round < T.rounds; round++) {
    // Alternate which goes first, so neither always follows the other's disk writeback.
    for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
      console.error(`round ${round + 1}/${T.rounds}: ${s.name}`);
      const before = threadCpu(s.server.pid);
      s.windows.push(await measure(s.server, s.load, T.windowMs));
      const after = threadCpu(s.server.pid);
      s.threads.main += after.main - before.main;
      s.threads.other += after.other - before.other;
    }
  }
} finally {
  for (const s of sides) {
    await s.server.stop();
    rmSync(s.dir, { recursive: true, force: true });
  }
}

const [withRecord, without] = sides.map((s) => {
  const total = combine(s.windows);
  // µs per create on each kind of thread (clock ticks of 10 ms: rough in a short run).
  const perCall = (ms: number) => (ms * 1000) / total.load.calls;
  return { name: s.name, total, mainUs: perCall(s.threads.main), otherUs: perCall(s.threads.other) };
});
const createsRatio = withRecord.total.load.callsPerSec / without.total.load.callsPerSec;
const cpuRatio = withRecord.total.srvCpuMsPerCall / without.total.srvCpuMsPerCall;
const line = (s: typeof withRecord) =>
  `${s.name.padEnd(32)} ${s.total.load.callsPerSec.toFixed(0).padStart(7)} creates/s   ` +
  `${(s.total.srvCpuMsPerCall * 1000).toFixed(0).padStart(5)} µs server CPU/create ` +
  `(main thread ${s.mainUs.toFixed(0)}, other threads ${s.otherUs.toFixed(0)})   p50 ${s.total.load.p50Ms?.toFixed(1) ?? '?'} ms`;
const report = [
  `idempotency keys, ${CONCURRENCY} in flight, group commit on, ${T.rounds} alternating ${T.windowMs / 1000} s windows each${QUICK ? ' (quick)' : ''}`,
  line(withRecord),
  line(without),
  `creates/s with / without: ${createsRatio.toFixed(3)} (budget >= ${BUDGET.createsRatio}) ${createsRatio >= BUDGET.createsRatio ? 'OK' : 'OVER BUDGET'}`,
  `server CPU per create with / without: ${cpuRatio.toFixed(3)} (budget <= ${BUDGET.cpuRatio}) ${cpuRatio <= BUDGET.cpuRatio ? 'OK' : 'OVER BUDGET'}; ` +
    `main thread ${(withRecord.mainUs / without.mainUs).toFixed(2)}, other threads ${(withRecord.otherUs / without.otherUs).toFixed(2)}`,
].join('\n');
console.log(report);
if (!QUICK) {
  const file = join(repoRoot, 'bench', 'results', 'idempotency.json');
  mkdirSync(dirname(file), { recursive: true });
  const summary = (s: typeof withRecord) => ({
    name: s.name,
    calls: s.total.load.calls,
    callsPerSec: s.total.load.callsPerSec,
    p50Ms: s.total.load.p50Ms,
    p99Ms: s.total.load.p99Ms,
    errors: s.total.load.errors,
    srvCpuMsPerCall: s.total.srvCpuMsPerCall,
    srvCores: s.total.srvCores,
    mainThreadUsPerCall: s.mainUs,
    otherThreadsUsPerCall: s.otherUs,
    otherCores: s.total.otherCores,
  });
  const result = { at: new Date().toISOString(), concurrency: CONCURRENCY, createsRatio, cpuRatio, withKeys: summary(withRecord), without: summary(without) };
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
}
