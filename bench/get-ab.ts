// Old against new on a cached REST GET (`GET /api/products/:id` over 100 seeded products), beside the plain
// node:http JSON echo peer, in one run: `wo run examples/pricing` from this checkout and from another one (OLD_ROOT,
// e.g. `git worktree add --detach /tmp/wo-old main`, with its node_modules linked to this one's); each warmed until
// its CPU per call is stable, then measured in alternating windows (ROUNDS, default 4, of WIN ms, default 3000) at
// C in flight (default 16, as bench:core). Prints server CPU per call, calls/s, and the ratios against the echo.
//   OLD_ROOT=/tmp/wo-old node --import tsx bench/get-ab.ts
import { join } from 'node:path';
import { combine, measure, type Measured } from './lib/measure.ts';
import { warmUntilStable } from './lib/warmup.ts';
import { isRow, plainEcho, restGet, seedProducts, spawnPeer, startWo, type SpawnedServer } from './lib/wo.ts';
import { oldVsNew } from './lib/old-vs-new.ts';

const { oldWo, dir, ROUNDS, WIN, C } = await oldVsNew('get-ab', { rounds: 4, inFlight: 16 });

type Name = 'old' | 'new' | 'echo';
const servers: Record<Name, SpawnedServer> = {
  old: await oldWo.startWo({ dir: dir('old'), env: { WO_GROUP_COMMIT: 'on' } }),
  new: await startWo({ dir: dir('new'), env: { WO_GROUP_COMMIT: 'on' } }),
  echo: await spawnPeer('bench/peers/plain-http.ts'),
};
try {
  const load = (k: Name) =>
    k === 'echo'
      ? { url: servers.echo.url, concurrency: C, makeRequest: plainEcho, check: (s: number, b: string) => s === 200 && b.startsWith('{"ok":true') }
      : { url: servers[k].url, concurrency: C, makeRequest: (i: number) => restGet(1 + (i % 100)), check: (s: number, b: string) => isRow(s, b, 200) };
  await seedProducts(servers.old.url, 100);
  await seedProducts(servers.new.url, 100);
  for (const k of Object.keys(servers) as Array<Name>) await warmUntilStable({ load: load(k), pid: servers[k].pid, maxMs: 8000, minCalls: 3000 });
  const windows: Record<Name, Array<Measured>> = { old: [], new: [], echo: [] };
  for (let r = 0; r < ROUNDS; r++) {
    const order: Array<Name> = r % 2 ? ['new', 'old', 'echo'] : ['echo', 'old', 'new'];
    for (const k of order) windows[k].push(await measure(servers[k], load(k), WIN));
  }
  const m = { old: combine(windows.old), new: combine(windows.new), echo: combine(windows.echo) };
  for (const [k, v] of Object.entries(m)) {
    console.log(`${k.padEnd(4)} server CPU ${(v.srvCpuMsPerCall * 1000).toFixed(1)} µs/call, ${v.load.callsPerSec.toFixed(0)}/s, other cores ${v.otherCores.toFixed(2)}, errors ${v.load.errors}`);
  }
  const cpu = (a: Measured, b: Measured) => (a.srvCpuMsPerCall / b.srvCpuMsPerCall).toFixed(3);
  const perRound = (k: Name) => windows[k].map((w, i) => (w.srvCpuMsPerCall / windows.echo[i].srvCpuMsPerCall).toFixed(2)).join(' ');
  console.log(`GET CPU/call against the echo: old ${cpu(m.old, m.echo)}x (per round ${perRound('old')}), ` +
    `new ${cpu(m.new, m.echo)}x (per round ${perRound('new')}); new/old ${cpu(m.new, m.old)}`);
} finally {
  for (const s of Object.values(servers)) await s.stop();
}
