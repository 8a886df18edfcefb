// Old against new on the durable REST writes, beside the durable-write floor, in one run: `wo run examples/pricing`
// from this checkout and from another one (OLD_ROOT, e.g. `git worktree add --detach /tmp/wo-old main`, with its
// node_modules linked to this one's), and bench/peers/durable-floor.ts; each warmed until its CPU per call is
// stable, then measured in alternating windows (ROUNDS, default 3, of WIN ms, default 3000) at C in flight
// (default 32). KIND=create (default) or set_price. Prints server CPU per call, calls/s and the ratios.
//   OLD_ROOT=/tmp/wo-old node --import tsx bench/write-ab.ts
import { combine, measure, type Measured } from './lib/measure.ts';
import { warmUntilStable } from './lib/warmup.ts';
import { restCreate, restSetPrice, seedProducts, spawnPeer, startWo, type SpawnedServer } from './lib/wo.ts';
import { oldVsNew } from './lib/old-vs-new.ts';

const { oldWo, dir, ROUNDS, WIN, C } = await oldVsNew('write-ab', { rounds: 3, inFlight: 32 });
const kind = process.env.KIND ?? 'create';
const request = kind === 'create' ? restCreate : (i: number) => restSetPrice(1 + (i % 100), 1 + (i % 1000));
const want = kind === 'create' ? 201 : 200;

const servers: Record<'old' | 'new' | 'floor', SpawnedServer> = {
  old: await oldWo.startWo({ dir: dir('old'), env: { WO_GROUP_COMMIT: 'on' } }),
  new: await startWo({ dir: dir('new'), env: { WO_GROUP_COMMIT: 'on' } }),
  floor: await spawnPeer('bench/peers/durable-floor.ts', { env: { DATA_DIR: dir('floor') } }),
};
try {
  const load = (s: SpawnedServer) => ({ url: s.url, concurrency: C, makeRequest: request, check: (status: number) => status === want });
  for (const s of Object.values(servers)) {
    if (kind !== 'create') await seedProducts(s.url, 100);
    await warmUntilStable({ load: load(s), pid: s.pid, maxMs: 8000 });
  }
  const windows: Record<keyof typeof servers, Array<Measured>> = { old: [], new: [], floor: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order: Array<keyof typeof servers> = r % 2 ? ['new', 'old', 'floor'] : ['old', 'floor', 'new'];
    for (const k of order) windows[k].push(await measure(servers[k], load(servers[k]), WIN));
  }
  const m = { old: combine(windows.old), new: combine(windows.new), floor: combine(windows.floor) };
  for (const [k, v] of Object.entries(m)) {
    console.log(`${kind} ${k.padEnd(5)} server CPU ${(v.srvCpuMsPerCall * 1000).toFixed(1)} µs/call, ${v.load.callsPerSec.toFixed(0)}/s, other cores ${v.otherCores.toFixed(2)}, errors ${v.load.errors}`);
  }
  const cpu = (a: Measured, b: Measured) => (a.srvCpuMsPerCall / b.srvCpuMsPerCall).toFixed(3);
  console.log(`${kind} CPU/call: old/floor ${cpu(m.old, m.floor)}x, new/floor ${cpu(m.new, m.floor)}x, new/old ${cpu(m.new, m.old)}; ` +
    `calls/s new/floor ${(m.new.load.callsPerSec / m.floor.load.callsPerSec).toFixed(2)}x`);
} finally {
  for (const s of Object.values(servers)) await s.stop();
}
