// The cost of the acknowledged-head record (src/log/classic-level/acked-head.ts), side by side in one run:
// durable REST creates at 32 in flight (closed-loop clients, group commit on) against two servers, one keeping
// the record and one with WO_ACKED_RECORD=off, each on a fresh data dir on the same disk. Both are warmed, then
// measured in alternating windows so that drift on shared cores hits both alike.
// Budgets: creates/s with / without >= 0.9; server CPU per create with / without <= 1.1.
//   node --conditions=writeonce-source --import tsx bench/acked-record.ts            (about 60 s; writes bench/results/acked-record.json)
//   node --conditions=writeonce-source --import tsx bench/acked-record.ts --quick    (about 30 s; writes nothing)
// BENCH_DATA_DIR: the data disk/dir (default <repo>/.data/bench-acked).
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { combine, measure, watched, type Load, type Measured } from './lib/measure.ts';
import { warmUntilStable } from './lib/warmup.ts';
import { freshDataDir, isRow, repoRoot, restCreate, startWo, type SpawnedServer } from './lib/wo.ts';

const QUICK = process.argv.includes('--quick');
const T = QUICK ? { warmMaxMs: 2500, windowMs: 2000, rounds: 3 } : { warmMaxMs: 5000, windowMs: 3000, rounds: 6 };
const CONCURRENCY = 32;
const BUDGET = { createsRatio: 0.9, cpuRatio: 1.1 };
const dataRoot = process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-acked');

interface Side {
  name: 'with the record' | 'without (WO_ACKED_RECORD=off)';
  server: SpawnedServer;
  dir: string;
  load: Load;
  windows: Measured[];
}

const start = async (name: Side['name'], record: 'on' | 'off'): Promise<Side> => {
  const dir = freshDataDir(dataRoot, `acked-${record}`);
  const server = await startWo({ dir, env: { WO_ACKED_RECORD: record }, readyTimeoutMs: 120_000 });
  let seq = 0;
  return {
    name,
    server,
    dir,
    load: { url: server.url, concurrency: CONCURRENCY, makeRequest: () => restCreate(seq++), check: (s, b) => isRow(s, b, 201) },
    windows: [],
  };
};

const sides: Side[] = [];
try {
  sides.push(await start('with the record', 'on'), await start('without (WO_ACKED_RECORD=off)', 'off'));
  for (const s of sides) {
    console.error(`warming: ${s.name}`);
    await watched(s.server, `warming ${s.name}`, () =>
      warmUntilStable({ load: s.load, pid: s.server.pid, chunkMs: 500, maxMs: T.warmMaxMs, minCalls: 3000 }));
  }
  for (let round = 0; round < T.rounds; round++) {
    // Alternate which goes first, so neither always follows the other's disk writeback.
    for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
      console.error(`round ${round + 1}/${T.rounds}: ${s.name}`);
      s.windows.push(await measure(s.server, s.load, T.windowMs));
    }
  }
} finally {
  for (const s of sides) {
    await s.server.stop();
    rmSync(s.dir, { recursive: true, force: true });
  }
}

const [withRecord, without] = sides.map((s) => ({ name: s.name, total: combine(s.windows) }));
const createsRatio = withRecord.total.load.callsPerSec / without.total.load.callsPerSec;
const cpuRatio = withRecord.total.srvCpuMsPerCall / without.total.srvCpuMsPerCall;
const line = (s: typeof withRecord) =>
  `${s.name.padEnd(32)} ${s.total.load.callsPerSec.toFixed(0).padStart(7)} creates/s   ` +
  `${(s.total.srvCpuMsPerCall * 1000).toFixed(0).padStart(5)} µs server CPU/create   p50 ${s.total.load.p50Ms?.toFixed(1) ?? '?'} ms`;
const report = [
  `acknowledged-head record, ${CONCURRENCY} in flight, group commit on, ${T.rounds} alternating ${T.windowMs / 1000} s windows each${QUICK ? ' (quick)' : ''}`,
  line(withRecord),
  line(without),
  `creates/s with / without: ${createsRatio.toFixed(3)} (budget >= ${BUDGET.createsRatio}) ${createsRatio >= BUDGET.createsRatio ? 'OK' : 'OVER BUDGET'}`,
  `server CPU per create with / without: ${cpuRatio.toFixed(3)} (budget <= ${BUDGET.cpuRatio}) ${cpuRatio <= BUDGET.cpuRatio ? 'OK' : 'OVER BUDGET'}`,
].join('\n');
console.log(report);
if (!QUICK) {
  const file = join(repoRoot, 'bench', 'results', 'acked-record.json');
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
    otherCores: s.total.otherCores,
  });
  const result = { at: new Date().toISOString(), concurrency: CONCURRENCY, createsRatio, cpuRatio, withRecord: summary(withRecord), without: summary(without) };
  writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
}
