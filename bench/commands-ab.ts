// Old against new on the `commands` section (bench/scenarios/commands.ts) in one run: the lending app served by
// `wo run` from this checkout and from another one (OLD_ROOT, e.g. /work/main), both seeded alike and warmed, then
// the two-entity app command `lend` and the `set_price` it is held against measured on both servers in alternating
// windows (ROUNDS, default 6, of WIN ms, default 2000, at C in flight, default 16; the order flips every round).
// Prints server CPU per call for each load and checkout, the lend/set_price ratio of each checkout (the section's
// budget) and new/old, as the median of the rounds' own ratios with their spread, and how busy the other cores were.
//   OLD_ROOT=/work/main node --import tsx bench/commands-ab.ts
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { combine, measure, type Measured } from './lib/measure.ts';
import { oldVsNew } from './lib/old-vs-new.ts';
import { warmUntilStable } from './lib/warmup.ts';
import { repoRoot, type SpawnedServer } from './lib/wo.ts';
import { lendingLoads, seedLending, writeLendingApp } from './scenarios/commands.ts';

const { dir, ROUNDS, WIN, C } = await oldVsNew('commands-ab', { rounds: 6, inFlight: 16 });
const BOOKS = 100;
const PRODUCTS = 100;
const oldRoot = process.env.OLD_ROOT!.replace(/\/$/, '');

const start = async (root: string, label: string): Promise<SpawnedServer> => {
  const { spawnWo }: typeof import('../testkit/spawn.ts') = await import(join(root, 'testkit/spawn.ts'));
  const base = dir(label);
  const appDir = join(base, 'app');
  mkdirSync(appDir);
  writeLendingApp(appDir, root);
  return spawnWo(['run', appDir, '--data', join(base, 'data'), '--listen', '127.0.0.1:0'], {
    readyTimeoutMs: 60_000, stopTimeoutMs: 5000, outputLimit: 16_384, env: { WO_LOG_LEVEL: 'Info' },
  });
};

const servers = { old: await start(oldRoot, 'old'), new: await start(repoRoot.replace(/\/$/, ''), 'new') };
type Side = keyof typeof servers;
type Kind = 'lend' | 'setPrice';
try {
  const loads = {
    old: lendingLoads(servers.old.loopbackUrl, C, BOOKS, PRODUCTS),
    new: lendingLoads(servers.new.loopbackUrl, C, BOOKS, PRODUCTS),
  };
  for (const side of ['old', 'new'] as const) {
    await seedLending(servers[side].loopbackUrl, BOOKS, PRODUCTS);
    for (const kind of ['lend', 'setPrice'] as const) {
      const w = await warmUntilStable({ load: loads[side][kind], pid: servers[side].pid, maxMs: 6000 });
      if (w.errors) console.error(`warm-up ${side} ${kind}: ${w.errors} errors, first: ${w.firstError}`);
    }
  }
  const windows: Record<Side, Record<Kind, Measured[]>> = { old: { lend: [], setPrice: [] }, new: { lend: [], setPrice: [] } };
  const cells: Array<[Side, Kind]> = [['old', 'lend'], ['new', 'lend'], ['old', 'setPrice'], ['new', 'setPrice']];
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? cells : [...cells].reverse();
    for (const [side, kind] of order) windows[side][kind].push(await measure(servers[side], loads[side][kind], WIN));
    const us = (side: Side, kind: Kind) => (windows[side][kind][r].srvCpuMsPerCall * 1000).toFixed(1);
    console.log(`round ${r + 1}: lend old ${us('old', 'lend')} new ${us('new', 'lend')} µs, set_price old ${us('old', 'setPrice')} new ${us('new', 'setPrice')} µs, ` +
      `other cores ${(cells.reduce((a, [s, k]) => a + windows[s][k][r].otherCores, 0) / 4).toFixed(2)}`);
  }
  const median = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const perRound = (f: (r: number) => number) => Array.from({ length: ROUNDS }, (_, r) => f(r));
  const show = (name: string, xs: number[]) =>
    console.log(`${name}: median ${median(xs).toFixed(3)}, rounds ${Math.min(...xs).toFixed(3)}..${Math.max(...xs).toFixed(3)}`);
  const cpu = (side: Side, kind: Kind, r: number) => windows[side][kind][r].srvCpuMsPerCall;
  for (const side of ['old', 'new'] as const) {
    for (const kind of ['lend', 'setPrice'] as const) {
      const m = combine(windows[side][kind]);
      console.log(`${side} ${kind.padEnd(8)} server CPU ${(m.srvCpuMsPerCall * 1000).toFixed(1)} µs/call, ${m.load.callsPerSec.toFixed(0)}/s, p99 ${m.load.p99Ms.toFixed(1)} ms, other cores ${m.otherCores.toFixed(2)}, errors ${m.load.errors}`);
    }
  }
  show('old lend/set_price', perRound((r) => cpu('old', 'lend', r) / cpu('old', 'setPrice', r)));
  show('new lend/set_price', perRound((r) => cpu('new', 'lend', r) / cpu('new', 'setPrice', r)));
  show('lend new/old', perRound((r) => cpu('new', 'lend', r) / cpu('old', 'lend', r)));
  show('set_price new/old', perRound((r) => cpu('new', 'setPrice', r) / cpu('old', 'setPrice', r)));
} finally {
  await Promise.all(Object.values(servers).map((s) => s.stop()));
}
