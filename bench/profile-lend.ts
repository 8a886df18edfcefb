// Where the server's main-thread CPU goes for the `commands` section's loads (bench/scenarios/commands.ts): the
// two-entity app command `lend` and, on the same server, the `set_price` it is held against. Same method as
// profile-run.ts: one `wo run` of the lending app under --cpu-prof, warmed, one measured window per load, only that
// window's samples counted, `src/` frames mapped to their TypeScript lines (bench/lib/cpuprofile.ts).
//   node --import tsx bench/profile-lend.ts [lend] [set_price]        (default: both)
// BENCH_PROFILE_MS (default 4000) sets each measured window, BENCH_TOP (default 25) the list lengths, C (default 16)
// the calls in flight. Profiles: bench/results/lend-<load>.cpuprofile (git-ignored).
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { spawnWo } from '../testkit/spawn.ts';
import { monoUs, readWindow, renderSelfTimes } from './lib/cpuprofile.ts';
import { runLoad } from './lib/load.ts';
import { warmUntilStable } from './lib/warmup.ts';
import { repoRoot } from './lib/wo.ts';
import { lendingLoads, seedLending, writeLendingApp } from './scenarios/commands.ts';

const dataRoot = process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-run');
const LOAD_MS = Number(process.env.BENCH_PROFILE_MS ?? 4000);
const TOP = Number(process.env.BENCH_TOP ?? 25);
const C = Number(process.env.C ?? 16);
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const names = (wanted.length ? wanted : ['lend', 'set_price']) as Array<'lend' | 'set_price'>;

for (const name of names) {
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
  let window = { from: 0, to: 0, calls: 0, perSec: 0 };
  try {
    await seedLending(server.loopbackUrl, 100, 100);
    const loads = lendingLoads(server.loopbackUrl, C, 100, 100);
    const load = name === 'lend' ? loads.lend : loads.setPrice;
    await warmUntilStable({ load, pid: server.pid, maxMs: 6000 });
    const from = monoUs();
    const r = await runLoad({ ...load, durationMs: LOAD_MS });
    if (r.errors) console.error(`${name}: ${r.errors} errors, first: ${r.firstError}`);
    window = { from, to: monoUs(), calls: r.calls, perSec: r.callsPerSec };
  } finally {
    await server.stop();
  }
  const main = await readWindow(profDir, window.from, window.to, join(repoRoot, 'bench', 'results', `lend-${name}.cpuprofile`));
  rmSync(root, { recursive: true, force: true });
  console.log(`\n== ${name}: ${Math.round(window.perSec)} calls/s under the profiler, ${window.calls} calls in the window`);
  console.log(`main-thread busy time in the window: ${(main.total / 1000).toFixed(0)} ms = ${(main.total / window.calls).toFixed(1)} µs/call` +
    `${main.windowed ? '' : ' (window not found in the profile: all samples counted)'}; bench/results/lend-${name}.cpuprofile`);
  console.log(renderSelfTimes(main, window.calls, TOP));
}
