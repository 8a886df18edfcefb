// Where a durable REST write's server CPU runs, ours against the durable-write floor (bench/peers/durable-floor.ts):
// the main thread (HTTP, our JS, the writer) apart from the process's other threads (libuv's pool: LevelDB's
// synced batch writes, the acknowledged-head pwrite; LevelDB's compaction thread), from /proc/<pid>/task/*/stat.
// Both servers warmed, then measured in alternating windows (ROUNDS, default 3, of WIN ms, default 4000) at C in
// flight (default 32). KIND=create (default) or set_price. Prints µs per call by thread and ours/floor for each.
// ACKED_OFF=1 adds a third server, ours with `WO_ACKED_RECORD=off`, to tell the acknowledged-head record's share.
//   node --import tsx bench/write-threads.ts
import { mkdirSync, mkdtempSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { runLoad } from './lib/load.ts';
import { threadCpu } from './lib/thread-cpu.ts';
import { warmUntilStable } from './lib/warmup.ts';
import { repoRoot, restCreate, restSetPrice, seedProducts, spawnPeer, startWo, type SpawnedServer } from './lib/wo.ts';

const kind = process.env.KIND ?? 'create';
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WIN = Number(process.env.WIN ?? 4000);
const C = Number(process.env.C ?? 32);
const dataRoot = process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-write-threads');
mkdirSync(dataRoot, { recursive: true });
const request = kind === 'create' ? restCreate : (i: number) => restSetPrice(1 + (i % 100), 1 + (i % 1000));
const want = kind === 'create' ? 201 : 200;

type Arm = 'wo' | 'wo-noack' | 'floor';
const arms: Arm[] = process.env.ACKED_OFF === '1' ? ['wo', 'wo-noack', 'floor'] : ['wo', 'floor'];
const servers: Partial<Record<Arm, SpawnedServer>> = {};
for (const arm of arms) {
  servers[arm] =
    arm === 'floor'
      ? await spawnPeer('bench/peers/durable-floor.ts', { env: { DATA_DIR: mkdtempSync(join(dataRoot, 'floor-')) } })
      : await startWo({ dir: mkdtempSync(join(dataRoot, `${arm}-`)), env: { WO_GROUP_COMMIT: 'on', ...(arm === 'wo-noack' ? { WO_ACKED_RECORD: 'off' } : {}) } });
}
try {
  const load = (s: SpawnedServer) => ({ url: s.url, concurrency: C, makeRequest: request, check: (status: number) => status === want });
  for (const s of Object.values(servers)) {
    if (kind !== 'create') await seedProducts(s.url, 100);
    await warmUntilStable({ load: load(s), pid: s.pid, maxMs: 8000 });
  }
  const sum = Object.fromEntries(arms.map((k) => [k, { main: 0, other: 0, calls: 0 }])) as Record<Arm, { main: number; other: number; calls: number }>;
  for (let r = 0; r < ROUNDS; r++) {
    // Alternated: each arm goes first as often as last.
    for (const k of r % 2 ? [...arms].reverse() : arms) {
      const server = servers[k]!;
      const before = threadCpu(server.pid);
      const result = await runLoad({ ...load(server), durationMs: WIN });
      const after = threadCpu(server.pid);
      sum[k].main += after.main - before.main;
      sum[k].other += after.other - before.other;
      sum[k].calls += result.calls;
    }
  }
  const us = (ms: number, calls: number) => (ms * 1000) / calls;
  console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}; ${kind}, ${C} in flight, ${ROUNDS} windows of ${WIN} ms each`);
  for (const k of arms) {
    const { main, other, calls } = sum[k];
    console.log(`${k.padEnd(8)} main thread ${us(main, calls).toFixed(1)} µs/call, other threads ${us(other, calls).toFixed(1)} µs/call, all ${us(main + other, calls).toFixed(1)} µs/call (${calls} calls)`);
  }
  for (const k of arms.filter((a) => a !== 'floor')) {
    const ratio = (f: (x: typeof sum.wo) => number) => (f(sum[k]) / sum[k].calls / (f(sum.floor) / sum.floor.calls)).toFixed(2);
    console.log(`${k}/floor: main thread ${ratio((x) => x.main)}x, other threads ${ratio((x) => x.other)}x, all ${ratio((x) => x.main + x.other)}x`);
  }
} finally {
  for (const s of Object.values(servers)) await s!.stop();
}
