// Blue/green view refolds (issue 45): a `wo run` restarted with products_by_currency declared again, on a log of
// `events` product creates, keeps answering reads of the view from the older value (200, marked stale) while the
// new declaration is folded in the background; the budget is the p99 of a view read during that fold against the
// p99 of the same reads once the fold is swapped in (idle: the same process, the same readers, nothing folding).
//  - the log is written directly (bench/lib/row-writer.ts); a first `wo run examples/pricing` folds the view and
//    stores it, so the second start has an older value to serve;
//  - `readers` closed-loop readers GET /api/_views/products_by_currency from the second start's announcement until
//    the swap (the `WO-View-Exact-At` mark goes), then for as many reads again (at most `idleReads`): idle;
//  - a 503 or any other status is counted (the budget wants none: a view with an older value is never refused);
//  - the refold reads and checks every event, so the start's log audit (src/log/log-audit.ts) waits for it and
//    checks only what came after: the reads of the refold have no audit beside them;
//  - where the refold ran is read from its log line: a worker thread at idle priority (projections/views/fold-thread.ts),
//    or the server's thread.
// Alone: `node --import tsx bench/scenarios/view-refold.ts [events]` (default 1,000,000).
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { LatencyHistogram } from '../lib/histogram.ts';
import { writeProducts } from '../lib/row-writer.ts';
import { freshDataDir, repoRoot, startWo } from '../lib/wo.ts';
import { budget, budgetTable, type Budget } from '../report.ts';
import { spawnWo, WO_READY } from '../../testkit/spawn.ts';
import type { BenchContext } from './context.ts';
import { isMain, runAlone } from '../lib/alone.ts';

export interface ViewRefoldOptions {
  /** product creates in the log */
  events: number;
  /** concurrent closed-loop readers of the view */
  readers: number;
  /** at most this many reads after the swap (idle) */
  idleReads: number;
}

export interface ViewRefoldResult {
  events: number;
  /** the background fold of the new declaration, from the second start's announcement to the first fresh read */
  refoldMs: number;
  refolding: { reads: number; p50Ms: number; p99Ms: number };
  /** where the refold ran, as its log line says ("in a worker thread at idle priority"; "" on the server's thread) */
  place: string;
  idle: { reads: number; p50Ms: number; p99Ms: number };
  /** answers other than 200 (a 503 is a refused read) */
  refused: number;
  /** the first start's fold of the view (no stored value: refused meanwhile), for scale */
  firstFoldMs: number;
}

/** The pricing sample with its view declared again (it counts every product too): the store's record is another declaration's. */
const CHANGED_APP = `
import { Schema } from "effect"
import { defineApp, view } from "writeonce"
import pricing from "${join(repoRoot, 'examples/pricing/app.ts')}"

export default defineApp({
  ...pricing,
  views: {
    products_by_currency: view({
      schema: Schema.Struct({ USD: Schema.Int, EUR: Schema.Int, total: Schema.Int }),
      initial: { USD: 0, EUR: 0, total: 0 },
      on: { products: ["created", "updated", "deleted"] },
      evolve: (c, { before, after }) => {
        const next = { ...c }
        if (before !== null) { next[before.currency as "USD" | "EUR"] -= 1; next.total -= 1 }
        if (after !== null) { next[after.currency as "USD" | "EUR"] += 1; next.total += 1 }
        return next
      }
    })
  }
})
`;

const appDir = (): string => {
  const dir = mkdtempSync(join(tmpdir(), 'wo-refold-app-'));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(repoRoot, join(dir, 'node_modules', 'writeonce'), 'dir');
  symlinkSync(join(repoRoot, 'node_modules', 'effect'), join(dir, 'node_modules', 'effect'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(join(dir, 'app.ts'), CHANGED_APP);
  return dir;
};

interface ReadOutcome {
  status: number;
  stale: boolean;
  us: number;
}

const readView = async (url: string): Promise<ReadOutcome> => {
  const began = performance.now();
  const res = await request(`${url}/api/_views/products_by_currency`);
  await res.body.text();
  return { status: res.statusCode, stale: res.headers['wo-view-exact-at'] !== undefined, us: Math.round((performance.now() - began) * 1000) };
};

/** Reads the view from `url` until the view is swapped in, then `idleReads` more: each read's latency, by phase. */
const readThroughSwap = async (url: string, readers: number, idleReads: number) => {
  const refolding = new LatencyHistogram();
  const idle = new LatencyHistogram();
  let refused = 0;
  let swappedAt: number | undefined;
  let idleLeft = idleReads;
  await Promise.all(Array.from({ length: readers }, async () => {
    while (idleLeft > 0) {
      const r = await readView(url);
      if (r.status !== 200) {
        refused++;
        if (swappedAt === undefined) refolding.record(r.us);
        continue;
      }
      if (r.stale) {
        refolding.record(r.us);
      } else {
        swappedAt ??= performance.now();
        // The same number of reads after the swap as during the fold (at most idleReads): idle.
        if (idleLeft === idleReads) idleLeft = Math.min(idleReads, Math.max(refolding.count, 1000));
        idle.record(r.us);
        idleLeft--;
      }
    }
  }));
  return { refolding, idle, refused, swappedAt: swappedAt! };
};

const summary = (h: LatencyHistogram) => ({ reads: h.count, p50Ms: h.percentile(50) / 1000, p99Ms: h.percentile(99) / 1000 });

export async function runViewRefold(ctx: BenchContext, o: ViewRefoldOptions): Promise<ViewRefoldResult> {
  const dir = freshDataDir(ctx.dataRoot, 'view-refold');
  ctx.track(dir);
  const app = appDir();
  try {
    ctx.phase(`view refold: writing ${o.events.toLocaleString('en-US')} product creates`);
    await writeProducts(dir, o.events, (i) => ({ name: `item-${i}`, price: i, currency: i % 3 === 0 ? 'EUR' : 'USD' }));
    ctx.phase('view refold: the first start folds the view and stores it');
    const first = await startWo({ dir, readyTimeoutMs: 10 * 60_000 });
    const firstBegan = performance.now();
    let firstFoldMs = 0;
    try {
      for (;;) {
        const r = await readView(first.loopbackUrl);
        if (r.status === 200) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      firstFoldMs = performance.now() - firstBegan;
    } finally {
      await first.stop();
    }
    ctx.phase('view refold: restarted with the view declared again; reading it through the refold and the swap');
    const second = await spawnWo(['run', app, '--data', dir, '--listen', '127.0.0.1:0'], {
      env: { WO_LOG_LEVEL: 'Debug' }, ready: WO_READY, readyTimeoutMs: 10 * 60_000, stopTimeoutMs: 3000, outputLimit: 4_000_000,
    });
    const began = performance.now();
    try {
      const { refolding, idle, refused, swappedAt } = await readThroughSwap(second.loopbackUrl, o.readers, o.idleReads);
      const place = /views: products_by_currency folded again from \d+ events(?: (.*?))? in \d+ ms/.exec(second.output())?.[1] ?? '';
      return { events: o.events, refoldMs: swappedAt - began, refolding: summary(refolding), place, idle: summary(idle), refused, firstFoldMs };
    } finally {
      await second.stop();
    }
  } finally {
    rmSync(app, { recursive: true, force: true });
  }
}

export const VIEW_REFOLD_BUDGET = { p99RefoldOverIdle: 2 } as const;

export function viewRefoldBudgets(r: ViewRefoldResult): Budget[] {
  return [
    budget('viewRefold.p99', `view read p99 during the refold of a ${r.events.toLocaleString('en-US')}-event log / idle`, '<=', VIEW_REFOLD_BUDGET.p99RefoldOverIdle,
      r.refolding.p99Ms / r.idle.p99Ms, 'x',
      `${r.refolding.p99Ms.toFixed(2)} against ${r.idle.p99Ms.toFixed(2)} ms (${r.refolding.reads} reads during the refold, folded ${r.place === '' ? "on the server's thread" : r.place}, and ${r.idle.reads} idle)`),
    budget('viewRefold.refused', 'view reads refused (503) while a view with an older value is folded again', '<=', 0, r.refused, '',
      `${r.refolding.reads} reads during a ${(r.refoldMs / 1000).toFixed(1)} s refold`),
  ];
}

export function renderViewRefold(r: ViewRefoldResult): string {
  const f = (n: number, d = 2) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  return [
    '## View refold (blue/green)',
    '',
    `\`wo run\` restarted with \`products_by_currency\` declared again on a log of ${r.events.toLocaleString('en-US')} events: its older value is served, marked stale, while the new declaration is folded in the background (${r.place === '' ? "on the server's thread" : r.place}, ${f(r.refoldMs / 1000, 1)} s; the first start's fold with nothing to serve took ${f(r.firstFoldMs / 1000, 1)} s), then swapped in.`,
    '',
    '| phase | reads | p50 ms | p99 ms |',
    '|---|---:|---:|---:|',
    `| during the refold (older value) | ${r.refolding.reads} | ${f(r.refolding.p50Ms)} | ${f(r.refolding.p99Ms)} |`,
    `| idle (after the swap) | ${r.idle.reads} | ${f(r.idle.p50Ms)} | ${f(r.idle.p99Ms)} |`,
    '',
    `Refused reads (not 200): ${r.refused}.`,
    '',
    ...budgetTable(viewRefoldBudgets(r)),
    '',
  ].join('\n');
}

// Alone: `node --conditions=writeonce-source --import tsx bench/scenarios/view-refold.ts [events]` (1,000,000 by default).
if (isMain(import.meta.url)) {
  const events = Number(process.argv[2] ?? 1_000_000);
  await runAlone('view-refold', 'full', async (ctx) => renderViewRefold(await runViewRefold(ctx, { events, readers: 4, idleReads: 20_000 })));
}
