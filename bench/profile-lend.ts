// Where the server's main-thread CPU goes for the `commands` section's loads (bench/scenarios/commands.ts): the
// two-entity app command `lend` and, on the same server, the `set_price` it is held against. One `wo run` of the
// lending app under --cpu-prof, both loads warmed, then measured in alternating windows (ROUNDS, default 4, of
// BENCH_PROFILE_MS, default 2000; the order flips every round), each load's samples counted over its own windows
// only: on shared cores a neighbour's burst weighs on both loads alike, as in bench/commands-ab.ts. `src/` frames
// are named by their module (wo run serves src/ bundled: bench/lib/cpuprofile.ts).
//   node --import tsx bench/profile-lend.ts
// BENCH_TOP (default 25) sets the list lengths, C (default 16) the calls in flight. The profile:
// bench/results/lend.cpuprofile (git-ignored).
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { spawnWo } from '../testkit/spawn.ts';
import { monoUs, renderSelfTimes, selfTimes, type CpuProfile, type SelfTimes } from './lib/cpuprofile.ts';
import { runLoad } from './lib/load.ts';
import { warmUntilStable } from './lib/warmup.ts';
import { repoRoot } from './lib/wo.ts';
import { lendingLoads, seedLending, writeLendingApp } from './scenarios/commands.ts';

const dataRoot = process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-run');
const LOAD_MS = Number(process.env.BENCH_PROFILE_MS ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const TOP = Number(process.env.BENCH_TOP ?? 25);
const C = Number(process.env.C ?? 16);
type Name = 'lend' | 'set_price';
const NAMES: Name[] = ['lend', 'set_price'];

mkdirSync(dataRoot, { recursive: true });
const root = mkdtempSync(join(dataRoot, `profile-lend-`));
const appDir = join(root, 'app');
mkdirSync(appDir);
writeLendingApp(appDir, repoRoot.replace(/\/$/, ''));
const profDir = join(root, 'prof');
const server = await spawnWo(['run', appDir, '--data', join(root, 'data'), '--listen', '127.0.0.1:0'], {
  readyTimeoutMs: 30_000, stopTimeoutMs: 15_000, outputLimit: 16_384, env: { WO_LOG_LEVEL: 'Info' },
  nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profDir],
});
const windows: Record<Name, Array<{ from: number; to: number }>> = { lend: [], set_price: [] };
const calls: Record<Name, number> = { lend: 0, set_price: 0 };
try {
  await seedLending(server.loopbackUrl, 100, 100);
  const loads = lendingLoads(server.loopbackUrl, C, 100, 100);
  const loadOf = (name: Name) => (name === 'lend' ? loads.lend : loads.setPrice);
  for (const name of NAMES) await warmUntilStable({ load: loadOf(name), pid: server.pid, maxMs: 6000 });
  for (let r = 0; r < ROUNDS; r++) {
    for (const name of r % 2 === 0 ? NAMES : [...NAMES].reverse()) {
      const from = monoUs();
      const res = await runLoad({ ...loadOf(name), durationMs: LOAD_MS });
      if (res.errors) console.error(`${name}: ${res.errors} errors, first: ${res.firstError}`);
      windows[name].push({ from, to: monoUs() });
      calls[name] += res.calls;
    }
  }
} finally {
  await server.stop();
}
// The busiest thread's profile: the main thread, which served the requests.
const profiles = readdirSync(profDir).filter((f) => f.endsWith('.cpuprofile'))
  .map((f) => ({ f, p: JSON.parse(readFileSync(join(profDir, f), 'utf8')) as CpuProfile }))
  .sort((a, b) => b.p.samples.length - a.p.samples.length);
if (profiles.length === 0) throw new Error(`no profile written in ${profDir} (did the server exit cleanly?)`);
const { f, p } = profiles[0];
mkdirSync(join(repoRoot, 'bench', 'results'), { recursive: true });
copyFileSync(join(profDir, f), join(repoRoot, 'bench', 'results', 'lend.cpuprofile'));
const add = (into: Map<string, number>, from: Map<string, number>) => {
  for (const [k, v] of from) into.set(k, (into.get(k) ?? 0) + v);
};
for (const name of NAMES) {
  const sum: SelfTimes = { total: 0, byFunction: new Map(), byArea: new Map(), inclusive: new Map(), windowed: true };
  for (const w of windows[name]) {
    const one = await selfTimes(p, w.from, w.to);
    sum.total += one.total;
    sum.windowed &&= one.windowed;
    add(sum.byFunction, one.byFunction);
    add(sum.byArea, one.byArea);
    add(sum.inclusive, one.inclusive);
  }
  console.log(`\n== ${name}: ${calls[name]} calls in ${ROUNDS} windows of ${LOAD_MS} ms`);
  console.log(`main-thread busy time in its windows: ${(sum.total / 1000).toFixed(0)} ms = ${(sum.total / calls[name]).toFixed(1)} µs/call` +
    `${sum.windowed ? '' : ' (a window not found in the profile: all samples counted)'}`);
  console.log(renderSelfTimes(sum, calls[name], TOP));
}
rmSync(root, { recursive: true, force: true });
