// Server CPU per lend with the keyed `loans_by_member` against no view (the keyed-views scenario's CPU budget), and
// against the keyed view of another checkout (OLD_ROOT=<dir>: a copy of the repo at an older commit, with its own
// node_modules or a link to these): the libraries written directly (KEYS members), the servers side by side, warmed,
// then measured in windows of LENDS lends: ROUNDS rounds one after the other (the order rotated every round), then
// TOGETHER rounds lent to all at once, so that load from outside falls on each alike. CPU is every thread's, to the ns (lib/thread-cpu.ts). PROFILE=1 runs them under --cpu-prof and
// prints where each server's main thread spends its windows (bench/results/keyed-<side>.cpuprofile).
//   node --conditions=writeonce-source --import tsx bench/keyed-cpu-ab.ts
//   OLD_ROOT=/tmp/before node --conditions=writeonce-source --import tsx bench/keyed-cpu-ab.ts
// KEYS (default 16000), LENDS (default 400), ROUNDS (default 6), TOGETHER (default 10), BENCH_TOP (default 30).
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { spawnNode, WO_READY } from '../testkit/spawn.ts';
import { privateRssBytes } from './lib/cpu.ts';
import { threadCpu } from './lib/thread-cpu.ts';
import { renderSelfTimes, selfTimes, type CpuProfile, type SelfTimes } from './lib/cpuprofile.ts';
import { writeLibrary } from './lib/library-writer.ts';
import { repoRoot } from './lib/wo.ts';
import { APPS, compiled, KEYED_VIEWS_OPTIONS, lendTogether, lendWindow, settle, startServer, warmUp, type LendServer } from './scenarios/keyed-views.ts';

const KEYS = Number(process.env.KEYS ?? 16_000);
const ROUNDS = Number(process.env.ROUNDS ?? 6);
const TOGETHER = Number(process.env.TOGETHER ?? 10);
const TOP = Number(process.env.BENCH_TOP ?? 30);
const PROFILE = process.env.PROFILE === '1';
const BEFORE = process.env.OLD_ROOT;
const o = { ...KEYED_VIEWS_OPTIONS.quick, lends: Number(process.env.LENDS ?? 400) };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

type Side = { name: string; setup: 'keyed' | 'none'; checkout?: string };
const sides: Side[] = [{ name: 'keyed', setup: 'keyed' }, ...(BEFORE ? [{ name: 'keyed-before', setup: 'keyed' as const, checkout: BEFORE }] : []), { name: 'none', setup: 'none' }];
mkdirSync(join(repoRoot, '.data'), { recursive: true });
const root = mkdtempSync(join(repoRoot, '.data', 'keyed-cpu-ab-'));
const servers: Array<LendServer & { name: string; profDir: string; together: LendServer['windows']; main: number; other: number }> = [];
try {
  for (const side of sides) {
    const dir = join(root, side.name);
    await writeLibrary(dir, { books: o.books, members: KEYS + 1, loans: KEYS - o.lends }, await compiled(APPS[side.setup]));
    const profDir = join(root, `prof-${side.name}`);
    const nodeArgs = PROFILE ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [];
    const server = side.checkout === undefined
      ? await startServer(APPS[side.setup], dir, {}, nodeArgs)
      : await spawnNode(join(side.checkout, 'bin/wo.mjs'), ['run', join(side.checkout, APPS[side.setup]), '--data', dir, '--listen', '127.0.0.1:0'], {
        ready: WO_READY, readyTimeoutMs: 600_000, stopTimeoutMs: 30_000, outputLimit: 65_536, env: { WO_LOG_LEVEL: 'Info' }, nodeArgs,
      });
    servers.push({ name: side.name, setup: side.setup, keys: KEYS, server, firstMember: KEYS - o.lends + 1, warmMember: KEYS + 1, windows: [], profDir, together: [], main: 0, other: 0 });
  }
  for (const s of servers) await warmUp(s, o);
  for (let r = 0; r < ROUNDS; r++) {
    const turn = [...servers.slice(r % servers.length), ...servers.slice(0, r % servers.length)];
    for (const s of r % 2 === 0 ? turn : turn.reverse()) {
      process.stderr.write(`round ${r + 1} of ${ROUNDS}: ${s.name}\n`);
      await settle(servers);
      const t0 = threadCpu(s.server.pid);
      await lendWindow(s, o);
      const t1 = threadCpu(s.server.pid);
      s.main += t1.main - t0.main;
      s.other += t1.other - t0.other;
    }
  }
  for (let r = 0; r < TOGETHER; r++) {
    process.stderr.write(`together ${r + 1} of ${TOGETHER}\n`);
    await settle(servers);
    await lendTogether(servers, o, servers.map((s) => s.together));
  }
  // Memory after the windows: a heap grown larger costs more to collect (V8's marking runs on threads of its own).
  console.error(`private memory after the windows: ${servers.map((s) => `${s.name} ${(privateRssBytes(s.server.pid) / 1e6).toFixed(0)} MB`).join('; ')}`);
} finally {
  await Promise.allSettled(servers.map((s) => s.server.stop()));
}

const none = servers.find((s) => s.name === 'none')!;
console.log(`${KEYS.toLocaleString('en-US')} members, windows of ${o.lends} lends, ${o.clients} clients per server${PROFILE ? ', under --cpu-prof' : ''}`);
for (const [what, pick] of [[`${ROUNDS} rounds, one server after the other`, (s: LendServer & { together: LendServer['windows'] }) => s.windows], [`${TOGETHER} rounds, all servers at once`, (s: { together: LendServer['windows'] }) => s.together]] as const) {
  if (pick(none).length === 0) continue;
  const perLend = (s: (typeof servers)[number]) => pick(s).map((w) => (w.cpuMs * 1000) / w.lends);
  console.log(`\n${what}:\n`);
  console.log('| server | CPU µs/lend, median window | all windows | over no view, median of rounds | rounds |');
  console.log('|---|---:|---:|---:|---|');
  for (const s of servers) {
    const own = perLend(s);
    const ratios = own.map((x, k) => x / perLend(none)[k]);
    const all = (pick(s).reduce((a, w) => a + w.cpuMs, 0) * 1000) / pick(s).reduce((a, w) => a + w.lends, 0);
    console.log(`| ${s.name} | ${median(own).toFixed(0)} | ${all.toFixed(0)} | ${median(ratios).toFixed(2)}x | ${ratios.map((x) => x.toFixed(2)).join(', ')} |`);
  }
  if (what.includes('one server after')) {
    const lends = (s: (typeof servers)[number]) => s.windows.reduce((a, w) => a + w.lends, 0);
    console.log(`\nin turn, CPU µs/lend of the main thread / of the other threads (ticks of 10 ms, windows and their returns): ${servers.map((s) => `${s.name} ${((s.main * 1000) / lends(s)).toFixed(0)} / ${((s.other * 1000) / lends(s)).toFixed(0)}`).join('; ')}`);
  }
}

if (PROFILE) {
  mkdirSync(join(repoRoot, 'bench', 'results'), { recursive: true });
  const add = (into: Map<string, number>, from: Map<string, number>) => { for (const [k, v] of from) into.set(k, (into.get(k) ?? 0) + v); };
  for (const s of servers) {
    const p = readdirSync(s.profDir).filter((f) => f.endsWith('.cpuprofile'))
      .map((f) => ({ f, p: JSON.parse(readFileSync(join(s.profDir, f), 'utf8')) as CpuProfile }))
      .sort((a, b) => b.p.samples.length - a.p.samples.length)[0];
    copyFileSync(join(s.profDir, p.f), join(repoRoot, 'bench', 'results', `keyed-${s.name}.cpuprofile`));
    const sum: SelfTimes = { total: 0, byFunction: new Map(), byArea: new Map(), inclusive: new Map(), windowed: true };
    for (const w of s.windows) {
      const one = await selfTimes(p.p, w.fromUs, w.toUs);
      sum.total += one.total;
      sum.windowed &&= one.windowed;
      add(sum.byFunction, one.byFunction);
      add(sum.byArea, one.byArea);
      add(sum.inclusive, one.inclusive);
    }
    const lends = s.windows.reduce((a, w) => a + w.lends, 0);
    console.log(`\n== ${s.name}: main-thread busy time in its windows: ${(sum.total / lends).toFixed(1)} µs/lend${sum.windowed ? '' : ' (a window not found in the profile: all samples counted)'}`);
    console.log(renderSelfTimes(sum, lends, TOP, 'lend'));
  }
}
rmSync(root, { recursive: true, force: true });
