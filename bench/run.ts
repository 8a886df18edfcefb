// `npm run bench`: every ratio of architecture.md's "Performance budgets", measured side by side in one run,
// printed, written as Markdown + raw JSON, and drawn as an SVG chart.
//   npm run bench                        full run, a few minutes on 2 cores
//   npm run bench -- --quick             under a minute (shorter windows, 100k-event replay)
//   npm run bench -- --smoke --out DIR   seconds: one level, a subset, tiny sizes (what npm run bench:smoke checks)
// Options: --out DIR (default bench/results for a full run, .data/bench-<mode> otherwise), --only load,notify,readers,amplify,stall,replay,sessions,cqrs,invariant,scaleout,clusterlend,pause,commands,metrics,access,inprocess,rangefilter,backup,devreload,scale,keyedviews,viewrefold,clustercache,followercost (default: all; smoke runs leave scaleout, clusterlend, pause, clustercache and followercost out).
// Env: BENCH_DATA_DIR (data dirs and the fsync probe; default <repo>/.data/bench-run); BENCH_SCENARIOS and
// BENCH_LEVELS narrow the load matrix to some scenarios (id prefixes) at some in-flight levels (bench/scenarios/load-matrix.ts).
// Scenarios: bench/scenarios/*.ts; the kit they share: bench/lib/*.ts; the report: bench/report.ts.
// Every server is spawned here on 127.0.0.1 (port 0) and stopped before the run ends.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { measureFsyncRate } from './fsync.ts';
import { cpuBetween, sampleSystemCpu } from './lib/cpu.ts';
import type { SpawnedServer } from './lib/wo.ts';
import { freshDataDir, repoRoot, seedProducts, startWo } from './lib/wo.ts';
import { budget, computeRatios, evaluateBudgets, renderMarkdown, renderSvg, type RunReport } from './report.ts';
import type { BenchContext, Mode } from './scenarios/context.ts';
import { runMatrix, scenarioDefs, SEEDED, woMatrixEnv, type MatrixTimings } from './scenarios/load-matrix.ts';
import { NOTIFY_ENV, runNotify, type NotifyOptions } from './scenarios/notify.ts';
import { runReplay } from './scenarios/replay.ts';
import { runCqrs, type CqrsOptions } from './scenarios/cqrs.ts';
import { runSessions, SESSIONS_ENV, type SessionsOptions } from './scenarios/sessions.ts';
import { runStall, type StallOptions } from './scenarios/stall.ts';
import { runReaders, type ReadersOptions } from './scenarios/readers.ts';
import { runAmplify, type AmplifyOptions } from './scenarios/amplify.ts';
import { renderScaleOut, runScaleOut, scaleOutBudgets, type ScaleOutOptions, type ScaleOutResult } from './scenarios/scale-out.ts';
import { CLUSTER_LEND_OPTIONS, clusterLendBudgets, renderClusterLend, runClusterLend, type ClusterLendResult } from './scenarios/cluster-lend.ts';
import { PRIMARY_PAUSE_OPTIONS, primaryPauseBudgets, renderPrimaryPause, runPrimaryPause, type PrimaryPauseResult } from './scenarios/primary-pause.ts';
import { inProcessBudgets, renderInProcess, runInProcess, type InProcessResult } from './scenarios/in-process.ts';
import { RANGE_FILTER_DEFAULTS, rangeFilterBudgets, renderRangeFilter, runRangeFilter, type RangeFilterResult } from './scenarios/range-filter.ts';
import { INVARIANT_BUDGET, renderInvariant, runInvariant, type InvariantResult } from './scenarios/invariant.ts';
import { renderCommands, runCommands, type CommandsOptions, type CommandsResult } from './scenarios/commands.ts';
import { METRICS_BUDGET, renderMetricsCost, runMetricsCost, type MetricsCostResult } from './scenarios/metrics-cost.ts';
import { accessBudgets, renderAccessCost, runAccessCost, type AccessCostResult } from './scenarios/access-cost.ts';
import { renderBackup, runBackup, type BackupOptions, type BackupResult } from './scenarios/backup.ts';
import { renderScale, runScale, scaleBudgets, type ScaleOptions, type ScaleResult } from './scenarios/scale.ts';
import { KEYED_VIEWS_OPTIONS, keyedViewsBudgets, renderKeyedViews, runKeyedViews, type KeyedViewsResult } from './scenarios/keyed-views.ts';
import { renderViewRefold, runViewRefold, viewRefoldBudgets, type ViewRefoldResult } from './scenarios/view-refold.ts';
import { clusterCacheBudgets, renderClusterCache, runClusterCache, type ClusterCacheResult } from './scenarios/cluster-cache.ts';
import { followerCostBudgets, renderFollowerCost, runFollowerCost, type FollowerCostResult } from './scenarios/follower-cost.ts';
import { renderDevReload, runDevReload, type DevReloadResult } from './dev-reload.ts';

// ---------------------------------------------------------------------------------------------------
// Arguments and modes

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const option = (name: string): string | undefined => {
  const i = argv.indexOf(`--${name}`);
  if (i >= 0) return argv[i + 1];
  return argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
};
const mode: Mode = flag('smoke') ? 'smoke' : flag('quick') ? 'quick' : 'full';
// Only a full run replaces the committed results; shorter runs go under .data (not committed).
const outDir = resolve(option('out') ?? (mode === 'full' ? join(repoRoot, 'bench', 'results') : join(repoRoot, '.data', `bench-${mode}`)));
const PARTS = ['load', 'notify', 'readers', 'amplify', 'stall', 'replay', 'sessions', 'cqrs', 'invariant', 'scaleout', 'clusterlend', 'pause', 'commands', 'metrics', 'access', 'inprocess', 'rangefilter', 'backup', 'devreload', 'scale', 'keyedviews', 'viewrefold', 'clustercache', 'followercost'] as const;
type Part = (typeof PARTS)[number];
// scaleout, clusterlend, pause, clustercache and followercost start PostgreSQL clusters: not in smoke runs unless asked for.
const PG_PARTS: ReadonlyArray<Part> = ['scaleout', 'clusterlend', 'pause', 'clustercache', 'followercost'];
const only = option('only')?.split(',').map((s) => s.trim()) ?? PARTS.filter((p) => !PG_PARTS.includes(p) || mode !== 'smoke');
for (const p of only) if (!(PARTS as readonly string[]).includes(p)) throw new Error(`--only: unknown part ${p}; pick from ${PARTS.join(', ')}`);
const wanted = (p: Part) => only.includes(p);

interface Settings {
  matrix: MatrixTimings;
  fsyncMs: number;
  notify: NotifyOptions;
  stall: StallOptions;
  /** writes with unread streams, GETs while event-log readers catch up */
  readers: ReadersOptions;
  /** GETs while bad bodies are answered */
  amplify: AmplifyOptions;
  replayEvents: number;
  sessions: SessionsOptions;
  cqrs: CqrsOptions;
  /** 3 nodes on PostgreSQL against one embedded node */
  scaleOut: ScaleOutOptions;
  /** a two-entity app command (lend) against one set_price */
  commands: CommandsOptions;
  /** wo backup of a big log while writes run */
  backup: BackupOptions;
  /** a store of N rows written directly, served from disk through the row cache */
  scale: ScaleOptions;
  /** Scenarios that run on the load matrix's group-commit-on server instead of a fresh one of their own
   *  (saves server starts; full runs give every scenario a fresh server). */
  shareServer: { notify: boolean; stall: boolean; sessions: boolean };
  /** also run the notification scenario against the plain node:http fan-out peer (the floor) */
  notifyFloor: boolean;
}

const SETTINGS: Record<Mode, Settings> = {
  full: {
    matrix: { windowMs: 1200, rounds: 2, warmMaxMs: 4000, peerWarmMaxMs: 10_000, warmChunkMs: 500, warmMinCalls: 5000, preMs: 200 },
    fsyncMs: 1500,
    notify: { subscriberCounts: [1, 100, 1000], repeats: 50, latencyBudgetMs: 10_000, fanoutMs: 2000, window: 4, afterCloseMs: 30_000 },
    stall: { durationMs: 8000, concurrency: 16, untilOverflow: { capMs: 45_000, streamBuffer: 1024 } },
    readers: { streams: 1000, subscriptions: 50, writes: 2000, concurrency: 16, readers: 50, gets: 300 },
    amplify: { senders: 4, unknownKeys: 200_000, gets: 300 },
    replayEvents: 1_000_000,
    sessions: { count: 10_000, warm: 1000, settleMs: 1000 },
    cqrs: { rows: 100_000, names: 100, liveQueries: 1000, windowMs: 1500, rounds: 3, warmMaxMs: 4000, warmChunkMs: 500, warmMinCalls: 3000, listConcurrency: 8, writeConcurrency: 16 },
    scaleOut: { inFlight: [32, 256], windowMs: 8000, products: 1000, notifyCommits: 200 },
    commands: { books: 100, products: 100, windowMs: 1500, rounds: 3, warmMaxMs: 4000, warmChunkMs: 500, warmMinCalls: 3000, concurrency: 16 },
    backup: { events: 1_000_000, products: 1000, concurrency: 16, warmMs: 1000, baselineMs: 3000 },
    scale: { rows: 1_000_000, gets: 2000 },
    shareServer: { notify: false, stall: false, sessions: false },
    notifyFloor: true,
  },
  quick: {
    matrix: { windowMs: 250, rounds: 1, warmMaxMs: 400, peerWarmMaxMs: 1500, warmChunkMs: 200, warmMinCalls: 1000, preMs: 40 },
    fsyncMs: 500,
    notify: { subscriberCounts: [100, 1000], repeats: 20, latencyBudgetMs: 2500, fanoutMs: 1500, window: 2, afterCloseMs: 5000 },
    stall: { durationMs: 800, concurrency: 16 },
    readers: { streams: 1000, subscriptions: 50, writes: 1000, concurrency: 16, readers: 50, gets: 150 },
    amplify: { senders: 4, unknownKeys: 200_000, gets: 60 },
    replayEvents: 100_000,
    sessions: { count: 10_000, warm: 300, settleMs: 300 },
    cqrs: { rows: 100_000, names: 100, liveQueries: 1000, windowMs: 500, rounds: 2, warmMaxMs: 1500, warmChunkMs: 250, warmMinCalls: 1000, listConcurrency: 8, writeConcurrency: 16 },
    scaleOut: { inFlight: [32, 256], windowMs: 3000, products: 1000, notifyCommits: 100 },
    commands: { books: 100, products: 100, windowMs: 600, rounds: 2, warmMaxMs: 1500, warmChunkMs: 250, warmMinCalls: 1000, concurrency: 16 },
    backup: { events: 100_000, products: 1000, concurrency: 16, warmMs: 500, baselineMs: 1500 },
    scale: { rows: 200_000, gets: 1000 },
    shareServer: { notify: false, stall: true, sessions: false },
    notifyFloor: true,
  },
  smoke: {
    matrix: { windowMs: 300, rounds: 1, warmMaxMs: 300, peerWarmMaxMs: 300, warmChunkMs: 150, warmMinCalls: 100, preMs: 50 },
    fsyncMs: 200,
    notify: { subscriberCounts: [1, 10], repeats: 5, latencyBudgetMs: 1000, fanoutMs: 200, window: 2 },
    stall: { durationMs: 400, concurrency: 4 },
    readers: { streams: 20, subscriptions: 5, writes: 100, concurrency: 4, readers: 5, gets: 20 },
    amplify: { senders: 2, unknownKeys: 20_000, gets: 20 },
    replayEvents: 10_000,
    sessions: { count: 200, warm: 10, settleMs: 100 },
    cqrs: { rows: 5000, names: 100, liveQueries: 1000, windowMs: 200, rounds: 1, warmMaxMs: 300, warmChunkMs: 150, warmMinCalls: 100, listConcurrency: 4, writeConcurrency: 4 },
    scaleOut: { inFlight: [8], windowMs: 300, products: 20, notifyCommits: 5 },
    commands: { books: 10, products: 10, windowMs: 200, rounds: 1, warmMaxMs: 300, warmChunkMs: 150, warmMinCalls: 100, concurrency: 4 },
    backup: { events: 10_000, products: 100, concurrency: 4, warmMs: 200, baselineMs: 300 },
    scale: { rows: 10_000, gets: 100 },
    shareServer: { notify: true, stall: true, sessions: true },
    notifyFloor: true,
  },
};
const S = SETTINGS[mode];

// ---------------------------------------------------------------------------------------------------
// Context: progress, warnings, data dirs (removed at exit whatever happens)

const dataRoot = resolve(process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-run'));
const wallStart = performance.now();
const warnings: string[] = [];
const tracked: string[] = [];
process.once('exit', () => {
  for (const dir of tracked) rmSync(dir, { recursive: true, force: true });
});
// Ctrl-C and kill: exit normally so the exit hooks stop the servers (testkit/spawn.ts) and remove the dirs.
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => process.exit(130));

const ctx: BenchContext = {
  mode,
  dataRoot,
  phase: (what) => console.error(`[${((performance.now() - wallStart) / 1000).toFixed(1)} s] ${what}`),
  warn: (what) => {
    warnings.push(what);
    console.error(`  warning: ${what}`);
  },
  track: (dir) => void tracked.push(dir),
};

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

function cpuModel(): string {
  try {
    return /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1].trim() ?? 'unknown CPU';
  } catch {
    return 'unknown CPU';
  }
}

function flushDirtyPages(): void {
  try {
    execFileSync('sync', { stdio: 'ignore', timeout: 30_000 });
  } catch {
    // no sync(1): measure anyway
  }
}

function fsyncRate(when: string): number {
  ctx.phase(`raw fsync rate in ${join(dataRoot, 'fsync')} (${when})`);
  if (mode !== 'smoke') flushDirtyPages();
  return measureFsyncRate({ dir: join(dataRoot, 'fsync'), durationMs: S.fsyncMs });
}

// ---------------------------------------------------------------------------------------------------
// The run

mkdirSync(dataRoot, { recursive: true });
const loadBefore = loadavg();
const sys0 = sampleSystemCpu();
await new Promise((r) => setTimeout(r, 500));
const busyCoresAtStart = cpuBetween(sys0, sampleSystemCpu()).utilisation;
const cores = availableParallelism();
ctx.phase(`npm run bench${mode === 'full' ? '' : ` -- --${mode}`}: ${cores} cores, loadavg ${loadBefore.map((v) => v.toFixed(2)).join(' ')}, ` +
  `${busyCoresAtStart.toFixed(2)} cores busy before start; data under ${dataRoot}`);
if (busyCoresAtStart > 0.3) ctx.warn(`${busyCoresAtStart.toFixed(2)} cores were busy before the run started (other work on the machine)`);

const commit = `${git(['rev-parse', '--short', 'HEAD']) || 'unknown'}${git(['status', '--porcelain', '--', 'src']) ? ' (src/ modified)' : ''}`;
const report: RunReport = {
  bench: 'run',
  mode,
  at: new Date().toISOString(),
  node: process.version,
  commit,
  cores,
  cpuModel: cpuModel(),
  loadavg: { before: loadBefore, after: [] },
  busyCoresAtStart,
  dataDir: dataRoot,
  durations: { ...S },
  wallMs: 0,
  fsync: null,
  serverStartMs: {},
  load: [],
  notify: null,
  notifyFloor: null,
  notifyLegacy: null,
  notifyFloorLegacy: null,
  stall: null,
  readers: null,
  amplify: null,
  replay: null,
  sessions: null,
  cqrs: null,
  ratios: {},
  budgets: [],
  warnings,
};

// The shared server (quick and smoke): the matrix's group-commit-on server, with every scenario's caps.
// Servers of later scenarios that only need to exist by then are started alongside the matrix's.
const sharing = (['notify', 'stall', 'sessions'] as const).filter((p) => S.shareServer[p] && wanted(p));
let shared: { server: SpawnedServer; dir: string } | undefined;
/** The scale-out section (reported after the rest, in its own file too). */
let scaleOut: ScaleOutResult | undefined;
/** Requests during a pause of the primary (reported after the rest, in its own file too). */
let primaryPause: PrimaryPauseResult | undefined;
/** Commands on 3 nodes against 1 (reported after the rest, in its own file too). */
let clusterLend: ClusterLendResult | undefined;
/** The invariant cost (reported after the rest). */
let invariantCost: InvariantResult | undefined;
/** The app commands section (reported after the rest, in its own file too). */
let commands: CommandsResult | undefined;
/** The metrics cost (reported after the rest). */
let metricsCost: MetricsCostResult | undefined;
/** What principals and OAuth tokens cost (reported after the rest, in its own file too). */
let accessCost: AccessCostResult | undefined;
/** The typed in-process API against REST (reported after the rest, in its own file too). */
let inProcess: InProcessResult | undefined;
/** A range filter's first page against an equality filter's (reported after the rest, in its own file too). */
let rangeFilter: RangeFilterResult | undefined;
/** The backup budget (reported after the rest, in its own file too). */
let backup: BackupResult | undefined;
/** The data-larger-than-memory section (reported after the rest, in its own file too). */
let scale: ScaleResult | undefined;
let keyedViews: KeyedViewsResult | undefined;
let viewRefold: ViewRefoldResult | undefined;
let clusterCache: ClusterCacheResult | undefined;
let followerCost: FollowerCostResult | undefined;
/** The wo dev reload latency (reported after the rest, in its own file too). */
let devReload: DevReloadResult | undefined;
const startedEarly: SpawnedServer[] = [];
const startEarly = async (label: string, env: Record<string, string>, seed: number): Promise<{ server: SpawnedServer; dir: string }> => {
  const dir = freshDataDir(dataRoot, label);
  ctx.track(dir);
  const t0 = performance.now();
  const server = await startWo({ dir, env });
  startedEarly.push(server);
  report.serverStartMs[label] = performance.now() - t0;
  if (seed) await seedProducts(server.url, seed);
  return { server, dir };
};
const sharedStart = sharing.length ? startEarly('wo-shared', woMatrixEnv('wo-on', { ...NOTIFY_ENV, ...SESSIONS_ENV }), SEEDED) : undefined;
const sessionsStart = wanted('sessions') && !S.shareServer.sessions && mode !== 'full' ? startEarly('wo-sessions', SESSIONS_ENV, 0) : undefined;
// Awaited later; a failed start surfaces there, not as an unhandled rejection meanwhile.
void sharedStart?.catch(() => undefined);
void sessionsStart?.catch(() => undefined);

try {
  if (wanted('load')) {
    const before = fsyncRate('before the load scenarios');
    const matrix = await runMatrix(ctx, scenarioDefs(mode), S.matrix, {
      ...(sharedStart ? { prestarted: { 'wo-on': sharedStart.then((s) => s.server) } } : {}),
      ...(sessionsStart ? { alongside: [sessionsStart] } : {}),
    });
    const after = fsyncRate('after the load scenarios');
    report.fsync = { dir: join(dataRoot, 'fsync'), beforePerSec: before, afterPerSec: after, meanPerSec: (before + after) / 2 };
    report.load = matrix.scenarios;
    Object.assign(report.serverStartMs, matrix.startMs);
    if (Math.abs(before - after) > 0.3 * report.fsync.meanPerSec) {
      ctx.warn(`the fsync rate moved by ${Math.round((100 * Math.abs(before - after)) / report.fsync.meanPerSec)}% during the run (shared disk?)`);
    }
  }
  shared = await sharedStart;
  const on = (p: 'notify' | 'stall' | 'sessions') => (S.shareServer[p] ? shared : undefined);
  if (wanted('notify')) {
    report.notify = await runNotify(ctx, S.notify, on('notify')?.server);
    if (S.notifyFloor) report.notifyFloor = await runNotify(ctx, S.notify, undefined, true);
    // The same with legacy sessions' GET streams, ours and the floor's, each on a fresh server.
    const legacyOpts = { ...S.notify, afterCloseMs: 0 };
    report.notifyLegacy = await runNotify(ctx, legacyOpts, undefined, false, 'legacy');
    if (S.notifyFloor) report.notifyFloorLegacy = await runNotify(ctx, legacyOpts, undefined, true, 'legacy');
  }
  if (wanted('readers')) report.readers = await runReaders(ctx, S.readers);
  if (wanted('amplify')) report.amplify = await runAmplify(ctx, S.amplify);
  let replayBase: string | undefined;
  if (wanted('stall')) {
    const stall = await runStall(ctx, S.stall, on('stall'));
    report.stall = stall.phases;
    replayBase = stall.dir;
  }
  if (wanted('sessions')) {
    const own = await sessionsStart;
    report.sessions = await runSessions(ctx, S.sessions, on('sessions')?.server ?? own?.server);
    await own?.server.stop();
  }
  if (shared) {
    await shared.server.stop();
    replayBase ??= shared.dir;
  }
  if (wanted('replay')) {
    // A dir the real server made (and has let go of) is the base; the bulk of the log is written directly.
    // Full runs time a start on an empty dir right beside the restart; shorter runs reuse the shared server's.
    const emptyStart = mode === 'full' ? undefined : report.serverStartMs['wo-shared'];
    report.replay = await runReplay(ctx, {
      events: S.replayEvents,
      products: 100,
      ...(replayBase ? { baseDir: replayBase } : {}),
      ...(emptyStart !== undefined ? { emptyStartMs: emptyStart, emptyStartNote: 'the shared server\'s start, alongside the other servers' } : {}),
    });
  }
  if (wanted('cqrs')) report.cqrs = await runCqrs(ctx, S.cqrs);
  if (wanted('invariant')) invariantCost = await runInvariant(ctx);
  if (wanted('scaleout')) scaleOut = await runScaleOut(ctx, S.scaleOut);
  if (wanted('clusterlend')) clusterLend = await runClusterLend(ctx, CLUSTER_LEND_OPTIONS[mode]);
  if (wanted('pause')) primaryPause = await runPrimaryPause(ctx, PRIMARY_PAUSE_OPTIONS[mode]);
  if (wanted('commands')) commands = await runCommands(ctx, S.commands);
  if (wanted('metrics')) metricsCost = await runMetricsCost(ctx);
  if (wanted('access')) accessCost = await runAccessCost(ctx);
  if (wanted('inprocess')) inProcess = await runInProcess(ctx);
  if (wanted('rangefilter')) rangeFilter = await runRangeFilter(ctx, RANGE_FILTER_DEFAULTS[mode]);
  if (wanted('backup')) backup = await runBackup(ctx, S.backup);
  if (wanted('scale')) scale = await runScale(ctx, S.scale);
  // The keyed views' reads during a refold are viewrefold's budget (a 1,000,000-event log): keyedviews runs its other parts.
  if (wanted('keyedviews')) keyedViews = await runKeyedViews(ctx, { ...KEYED_VIEWS_OPTIONS[mode], parts: ['keyed', 'whole', 'start'] });
  if (wanted('viewrefold')) viewRefold = await runViewRefold(ctx, { events: mode === 'full' ? 1_000_000 : mode === 'quick' ? 200_000 : 20_000, readers: 4, idleReads: mode === 'full' ? 20_000 : 5_000 });
  if (wanted('clustercache')) clusterCache = await runClusterCache(ctx, mode === 'full' ? { rows: 1_000_000, starts: 3, windowMs: 10_000, inFlight: 32, products: 1000 } : { rows: 100_000, starts: 1, windowMs: 3_000, inFlight: 32, products: 1000 });
  if (wanted('followercost')) followerCost = await runFollowerCost(ctx, { inFlight: [1, 8, 32], windowMs: mode === 'full' ? 10_000 : 3_000, products: 1000 });
  if (wanted('devreload')) devReload = await runDevReload({ rounds: mode === 'full' ? 10 : 2, rows: mode === 'smoke' ? 50 : 2000, dataRoot });
} finally {
  await Promise.allSettled([sharedStart, sessionsStart]);
  for (const s of startedEarly) await s.stop();
}

// ---------------------------------------------------------------------------------------------------
// Report

const noisy = report.load.flatMap((s) => s.levels.map((l) => ({ s, l }))).filter(({ l }) => l.otherCores > 0.3);
if (noisy.length) {
  const worst = noisy.reduce((a, b) => (b.l.otherCores > a.l.otherCores ? b : a));
  ctx.warn(`other cores busy above 0.3 in ${noisy.length} of ${report.load.reduce((a, s) => a + s.levels.length, 0)} windows ` +
    `(worst ${worst.l.otherCores.toFixed(2)}: ${worst.s.label} at ${worst.l.concurrency}); something else is using the CPUs: prefer CPU per call, rerun when quiet`);
}
const failed = report.load.reduce((a, s) => a + s.levels.reduce((b, l) => b + l.errors, 0), 0);
if (failed) ctx.warn(`${failed} failed requests in the load scenarios (see the errors column)`);
report.loadavg.after = loadavg();
if (report.loadavg.after[0] > cores * 0.75 && mode !== 'smoke') {
  ctx.warn(`1-minute loadavg at the end was ${report.loadavg.after[0].toFixed(2)} on ${cores} cores (the harness itself keeps about 1.5 busy)`);
}
report.ratios = computeRatios(report);
if (invariantCost) report.ratios.setPriceCpuInvariantOverPlain = invariantCost.medianRatio;
if (metricsCost) report.ratios.setPriceCpuMetricsOnOverOff = metricsCost.medianRatio;
// The sections' budgets join the table, so that one run shows every budget (issues 21-23 and 25).
report.budgets = [
  ...evaluateBudgets(report, report.ratios),
  ...(invariantCost ? [budget('invariantCpu', 'durable set_price server CPU with one invariant / without (median of paired rounds)', '<=', INVARIANT_BUDGET, invariantCost.medianRatio, 'x', `${invariantCost.b.srvCpuUsPerCall.toFixed(0)} against ${invariantCost.a.srvCpuUsPerCall.toFixed(0)} µs/call; see "Invariant cost"`)] : []),
  ...(metricsCost ? [budget('metricsCpu', 'durable set_price server CPU with metrics on / off (median of paired rounds)', '<=', METRICS_BUDGET, metricsCost.medianRatio, 'x', `${metricsCost.b.srvCpuUsPerCall.toFixed(0)} against ${metricsCost.a.srvCpuUsPerCall.toFixed(0)} µs/call; the hooks alone ${metricsCost.hookUsPerCall.toFixed(2)} µs/call; see "Metrics cost"`)] : []),
  ...(accessCost ? accessBudgets(accessCost) : []),
  ...(inProcess ? inProcessBudgets(inProcess) : []),
  ...(rangeFilter ? rangeFilterBudgets(rangeFilter) : []),
  ...(commands ? [budget('lendCpu', 'app command `lend` (two entities) server CPU / set_price', '<=', commands.budget, commands.ratio, 'x', `${commands.lend.srvCpuUsPerCall.toFixed(0)} against ${commands.setPrice.srvCpuUsPerCall.toFixed(0)} µs/call`)] : []),
  ...(backup ? [
    budget('backupP99', 'write p99 during `wo backup` / before it', '<=', 2, backup.p99Ratio, 'x', `${backup.events.toLocaleString('en-US')} events; see "Online backup"`),
    budget('backupTime', '`wo backup` time / `wo verify` time on the same log', '<=', 2, backup.timeRatio, 'x', `${backup.backupMs} against ${backup.verifyMs} ms`),
  ] : []),
  ...(scaleOut && !scaleOut.skipped ? scaleOutBudgets(scaleOut) : []),
  ...(clusterLend ? clusterLendBudgets(clusterLend) : []),
  ...(primaryPause ? primaryPauseBudgets(primaryPause) : []),
  ...(scale ? scaleBudgets(scale) : []),
  ...(keyedViews ? keyedViewsBudgets(keyedViews) : []),
  ...(viewRefold ? viewRefoldBudgets(viewRefold) : []),
  ...(clusterCache ? clusterCacheBudgets(clusterCache) : []),
  ...(followerCost ? followerCostBudgets(followerCost) : []),
];
report.wallMs = performance.now() - wallStart;

const md = renderMarkdown(report) + (invariantCost ? `\n${renderInvariant(invariantCost)}` : '') + (scaleOut ? `\n${renderScaleOut(scaleOut)}` : '') + (clusterLend ? `\n${renderClusterLend(clusterLend)}\n` : '') + (primaryPause ? `\n${renderPrimaryPause(primaryPause)}\n` : '') + (commands ? `\n${renderCommands(commands)}\n` : '') + (metricsCost ? `\n${renderMetricsCost(metricsCost)}\n` : '') + (accessCost ? `\n${renderAccessCost(accessCost)}\n` : '') + (inProcess ? `\n${renderInProcess(inProcess)}\n` : '') + (rangeFilter ? `\n${renderRangeFilter(rangeFilter)}\n` : '') + (backup ? `\n${renderBackup(backup)}\n` : '') + (scale ? `\n${renderScale(scale)}\n` : '') + (keyedViews ? `\n${renderKeyedViews(keyedViews)}\n` : '') + (viewRefold ? `\n${renderViewRefold(viewRefold)}\n` : '') + (clusterCache ? `\n${renderClusterCache(clusterCache)}\n` : '') + (followerCost ? `\n${renderFollowerCost(followerCost)}\n` : '') + (devReload ? `\n${renderDevReload(devReload)}\n` : '');
mkdirSync(outDir, { recursive: true });
if (scaleOut) writeFileSync(join(outDir, 'scale-out.json'), `${JSON.stringify(scaleOut, null, 2)}\n`);
if (clusterLend) writeFileSync(join(outDir, 'cluster-lend.json'), `${JSON.stringify(clusterLend, null, 2)}\n`);
if (primaryPause) writeFileSync(join(outDir, 'primary-pause.json'), `${JSON.stringify(primaryPause, null, 2)}\n`);
if (commands) writeFileSync(join(outDir, 'commands.json'), `${JSON.stringify(commands, null, 2)}\n`);
if (accessCost) writeFileSync(join(outDir, 'access.json'), `${JSON.stringify(accessCost, null, 2)}\n`);
if (inProcess) writeFileSync(join(outDir, 'in-process.json'), `${JSON.stringify(inProcess, null, 2)}\n`);
if (rangeFilter) writeFileSync(join(outDir, 'range-filter.json'), `${JSON.stringify(rangeFilter, null, 2)}\n`);
if (backup) writeFileSync(join(outDir, 'backup.json'), `${JSON.stringify(backup, null, 2)}\n`);
if (scale) writeFileSync(join(outDir, 'scale.json'), `${JSON.stringify(scale, null, 2)}\n`);
if (keyedViews) writeFileSync(join(outDir, 'keyed-views.json'), `${JSON.stringify(keyedViews, null, 2)}\n`);
if (viewRefold) writeFileSync(join(outDir, 'view-refold.json'), `${JSON.stringify(viewRefold, null, 2)}\n`);
if (clusterCache) writeFileSync(join(outDir, 'cluster-cache.json'), `${JSON.stringify(clusterCache, null, 2)}\n`);
if (followerCost) writeFileSync(join(outDir, 'follower-cost.json'), `${JSON.stringify(followerCost, null, 2)}\n`);
if (devReload) writeFileSync(join(outDir, 'dev-reload.json'), `${JSON.stringify(devReload, null, 2)}\n`);
writeFileSync(join(outDir, 'latest.json'), `${JSON.stringify(report, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`);
writeFileSync(join(outDir, 'latest.md'), md);
writeFileSync(join(outDir, 'latest.svg'), renderSvg(report));
console.log(md);
console.log(`wrote ${['latest.md', 'latest.json', 'latest.svg'].map((f) => join(outDir, f)).join(', ')} in ${(report.wallMs / 1000).toFixed(1)} s`);
