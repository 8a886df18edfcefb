// A paused primary (issue 44's request deadline): one `wo run --store` node with WO_STORE_TIMEOUT on a PostgreSQL
// primary and two synchronous standbys (scripts/pg-cluster.sh), keyed set_price requests in a closed loop, and a
// SIGSTOP of the primary (its postmaster and every backend) for `pauseMs` in the middle of the window.
//  - every request's answer time, from its send to its answer (the client's clock): the worst, p50 and p99 of those
//    in flight at any time of the pause, and how many took longer than WO_STORE_TIMEOUT + 1 s (the budget);
//  - reads of a row (this node's memory) meanwhile, as a control;
//  - after SIGCONT, every write not answered 200 is sent again with its key until it is, and the log is counted:
//    each price (one per request) must be written exactly once (lost: 0, doubled: 0).
// Runnable alone: node --conditions=writeonce-source --import tsx bench/scenarios/primary-pause.ts [--quick]
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { LatencyHistogram } from '../lib/histogram.ts';
import { freeBasePort, havePostgres } from '../lib/pg-bench-cluster.ts';
import { runLoad } from '../lib/load.ts';
import { freshDataDir, repoRoot, restGet, seedProducts, type SpawnedServer } from '../lib/wo.ts';
import { budget, budgetTable, type Budget } from '../report.ts';
import { spawnWo } from '../../testkit/spawn.ts';
import type { BenchContext } from './context.ts';
import { isMain, runAlone } from '../lib/alone.ts';

export interface PrimaryPauseOptions {
  /** WO_STORE_TIMEOUT of the node (ms). */
  timeoutMs: number;
  /** How long the primary is stopped (ms): the is 15 s against the default 5 s bound. */
  pauseMs: number;
  /** Keyed set_price requests in flight. */
  inFlight: number;
  /** Load before and after the pause (ms each). */
  aroundMs: number;
  products: number;
}

/** The sizes of each mode: the 15 s pause against the default 5 s bound in a full run. */
export const PRIMARY_PAUSE_OPTIONS: Record<'full' | 'quick' | 'smoke', PrimaryPauseOptions> = {
  full: { timeoutMs: 5000, pauseMs: 15_000, inFlight: 32, aroundMs: 3000, products: 200 },
  quick: { timeoutMs: 2000, pauseMs: 6000, inFlight: 16, aroundMs: 2000, products: 50 },
  smoke: { timeoutMs: 1000, pauseMs: 2000, inFlight: 4, aroundMs: 500, products: 10 },
};

export interface PrimaryPauseResult {
  skipped?: string;
  timeoutMs: number;
  pauseMs: number;
  inFlight: number;
  /** Writes sent in the window, and of them those in flight at some time of the pause. */
  writes: number;
  duringPause: number;
  /** Of those in flight during the pause: answered 200, answered 503, answered otherwise. */
  ok: number;
  unavailable: number;
  other: number;
  worstMs: number;
  p50Ms: number;
  p99Ms: number;
  /** Answers (any) later than WO_STORE_TIMEOUT + 1 s after their send. */
  overBound: number;
  reads: { calls: number; worstMs: number };
  /** After the pause, every write settled with its key: prices never written, and written more than once. */
  lost: number;
  doubled: number;
}

const SCRIPT = join(repoRoot, 'scripts/pg-cluster.sh');


/** SIGSTOP or SIGCONT to the server's postmaster and its children (stopping the postmaster alone leaves backends answering). */
function signalServer(dataDir: string, signal: 'SIGSTOP' | 'SIGCONT'): void {
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const children = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return Number(readFileSync(`/proc/${p}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')[1]) === postmaster;
    } catch {
      return false; // exited meanwhile
    }
  });
  for (const pid of [postmaster, ...children.map(Number)]) process.kill(pid, signal);
}

/** One keyed set_price: its key and price are the request's number (each price is written by one request only). */
const keyedSetPrice = (i: number, products: number) => ({
  method: 'POST' as const,
  path: `/api/products/${1 + (i % products)}/set_price`,
  headers: { 'content-type': 'application/json', 'idempotency-key': `pause-${i}` },
  body: JSON.stringify({ price: 1 + i }),
});

export async function runPrimaryPause(ctx: BenchContext, o: PrimaryPauseOptions): Promise<PrimaryPauseResult> {
  const base: PrimaryPauseResult = {
    timeoutMs: o.timeoutMs, pauseMs: o.pauseMs, inFlight: o.inFlight, writes: 0, duringPause: 0, ok: 0, unavailable: 0, other: 0,
    worstMs: 0, p50Ms: 0, p99Ms: 0, overBound: 0, reads: { calls: 0, worstMs: 0 }, lost: 0, doubled: 0,
  };
  if (!havePostgres()) {
    ctx.warn('primary-pause: skipped, PostgreSQL binaries not found (Debian: apt-get install postgresql-15)');
    return { ...base, skipped: 'no PostgreSQL binaries' };
  }
  const pgDir = freshDataDir(ctx.dataRoot, 'pause-pg');
  ctx.track(pgDir);
  ctx.phase('primary-pause: starting a PostgreSQL primary and two synchronous standbys');
  const url = execFileSync('bash', [SCRIPT, 'start', pgDir, String(await freeBasePort())], { encoding: 'utf8' }).trim().split('\n').pop()!;
  let node: SpawnedServer | undefined;
  let paused = false;
  try {
    const data = freshDataDir(ctx.dataRoot, 'pause-node');
    ctx.track(data);
    node = await spawnWo(['run', 'examples/pricing', '--data', data, '--listen', '127.0.0.1:0', '--store', url], {
      readyTimeoutMs: 30_000, stopTimeoutMs: 5000, env: { WO_LOG_LEVEL: 'Info', WO_STORE_TIMEOUT: `${o.timeoutMs}ms` },
    });
    await seedProducts(node.url, o.products);

    const answers: Array<{ i: number; status: number; sentAt: number; receivedAt: number }> = [];
    let pauseFrom = Number.POSITIVE_INFINITY;
    let pauseTo = Number.POSITIVE_INFINITY;
    const windowMs = 2 * o.aroundMs + o.pauseMs;
    const pauser = (async () => {
      await new Promise((r) => setTimeout(r, o.aroundMs));
      ctx.phase(`primary-pause: the primary stopped for ${o.pauseMs} ms (WO_STORE_TIMEOUT ${o.timeoutMs} ms)`);
      signalServer(join(pgDir, 'primary'), 'SIGSTOP');
      paused = true;
      pauseFrom = performance.now();
      await new Promise((r) => setTimeout(r, o.pauseMs));
      signalServer(join(pgDir, 'primary'), 'SIGCONT');
      paused = false;
      pauseTo = performance.now();
      ctx.phase('primary-pause: the primary resumed');
    })();
    const [writes, reads] = await Promise.all([
      runLoad({
        url: node.url,
        concurrency: o.inFlight,
        durationMs: windowMs,
        makeRequest: (i) => keyedSetPrice(i, o.products),
        check: (status) => status === 200,
        // Longer than any answer today's code gives, so that a late answer is measured, not cut.
        requestTimeoutMs: o.pauseMs + 4 * o.timeoutMs + 10_000,
        maxErrors: 1_000_000,
        onResponse: (i, status, _body, sentAt, receivedAt) => answers.push({ i, status, sentAt, receivedAt }),
      }),
      runLoad({ url: node.url, concurrency: 1, durationMs: windowMs, makeRequest: (i) => restGet(1 + (i % o.products)), check: (status) => status === 200 }),
      pauser,
    ]);

    // In flight at some time of the pause: sent before it ended, answered after it began.
    const during = answers.filter((a) => a.sentAt <= pauseTo && a.receivedAt >= pauseFrom);
    const h = new LatencyHistogram();
    for (const a of during) h.record(Math.round((a.receivedAt - a.sentAt) * 1000));
    const worstMs = Math.max(0, ...answers.map((a) => a.receivedAt - a.sentAt));

    ctx.phase('primary-pause: settling every write not answered 200 with its key');
    for (const a of answers) {
      if (a.status === 200) continue;
      for (let attempt = 0; ; attempt++) {
        const req = keyedSetPrice(a.i, o.products);
        const res = await fetch(`${node.url}${req.path}`, { method: req.method, headers: req.headers, body: req.body });
        await res.text();
        if (res.status === 200) break;
        if (attempt > 100) throw new Error(`the write pause-${a.i} was never answered 200 (last ${res.status})`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const client = new pg.Client({ connectionString: url.replace(/,[^/]*/, '') });
    await client.connect();
    let counts: Map<number, number>;
    try {
      const { rows } = await client.query<{ price: string; n: string }>(
        `select data->>'price' as price, count(*) as n from writeonce.events where type = 'products' and kind = 'invoked' group by 1`,
      );
      counts = new Map(rows.map((r) => [Number(r.price), Number(r.n)]));
    } finally {
      await client.end();
    }
    const prices = answers.map((a) => 1 + a.i);
    return {
      ...base,
      writes: writes.calls + writes.errors,
      duringPause: during.length,
      ok: during.filter((a) => a.status === 200).length,
      unavailable: during.filter((a) => a.status === 503).length,
      other: during.filter((a) => a.status !== 200 && a.status !== 503).length,
      worstMs,
      p50Ms: h.percentile(50) / 1000,
      p99Ms: h.percentile(99) / 1000,
      overBound: answers.filter((a) => a.receivedAt - a.sentAt > o.timeoutMs + 1000).length,
      reads: { calls: reads.calls, worstMs: reads.maxMs },
      lost: prices.filter((p) => (counts.get(p) ?? 0) === 0).length,
      doubled: prices.filter((p) => (counts.get(p) ?? 0) > 1).length,
    };
  } finally {
    if (paused) signalServer(join(pgDir, 'primary'), 'SIGCONT');
    await node?.stop().catch(() => undefined);
    execFileSync('bash', [SCRIPT, 'stop', pgDir]);
  }
}

/** The budget: a request during a pause of the primary is answered within WO_STORE_TIMEOUT + 1 s. */
export function primaryPauseBudgets(r: PrimaryPauseResult): Budget[] {
  const bound = r.timeoutMs + 1000;
  return [
    budget('primaryPause.worst', `worst answer during a ${r.pauseMs / 1000} s pause of the primary (WO_STORE_TIMEOUT ${r.timeoutMs / 1000} s)`, '<=', bound,
      r.skipped ? Number.NaN : r.worstMs, 'ms',
      `${r.duringPause} writes in flight during the pause (${r.ok} 200, ${r.unavailable} 503), ${r.overBound} over the bound; lost ${r.lost}, doubled ${r.doubled}`),
  ];
}

/** The section of the report. */
export function renderPrimaryPause(r: PrimaryPauseResult): string {
  if (r.skipped) return `## A paused primary\n\nskipped: ${r.skipped}\n`;
  const f = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  return [
    '## A paused primary (request deadline)',
    '',
    `One node (WO_STORE_TIMEOUT ${f(r.timeoutMs)} ms) on a primary and two synchronous standbys; ${r.inFlight} keyed set_price in flight; the primary stopped (SIGSTOP) for ${f(r.pauseMs)} ms. Answer times from the client's send.`,
    '',
    '| writes | in flight during the pause | 200 | 503 | other | p50 ms | p99 ms | worst ms | over timeout + 1 s | reads (worst ms) | lost | doubled |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${r.writes} | ${r.duringPause} | ${r.ok} | ${r.unavailable} | ${r.other} | ${f(r.p50Ms)} | ${f(r.p99Ms)} | ${f(r.worstMs)} | ${r.overBound} | ${r.reads.calls} (${f(r.reads.worstMs)}) | ${r.lost} | ${r.doubled} |`,
    '',
    ...budgetTable(primaryPauseBudgets(r)),
    '',
  ].join('\n');
}

// Alone: `node --conditions=writeonce-source --import tsx bench/scenarios/primary-pause.ts [--quick]`.
if (isMain(import.meta.url)) {
  const mode = process.argv.includes('--quick') ? 'quick' : 'full';
  await runAlone('primary-pause', mode, async (ctx) => renderPrimaryPause(await runPrimaryPause(ctx, PRIMARY_PAUSE_OPTIONS[mode])));
}
