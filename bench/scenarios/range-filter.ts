// A range filter's first page against an equality filter's, side by side on one server (`wo run examples/pricing`)
// over a table written directly (bench/lib/row-writer.ts: 1,000,000 products in a full run; names item-0 .. item-99,
// prices 1 .. 997, so one name and ten prices each hold about 1% of the rows):
//  - equality: `GET /api/products?name=item-<k>` (its index on name: the first page of 50 in id order);
//  - range: `GET /api/products?price[gte]=<p>&price[lt]=<p+10>&order=price` (its index on price: the range's span,
//    from its lower bound), the budget's side;
//  - range in id order: the same range without `order` (its ten prices are few distinct values: each one's ids are
//    walked and merged, as a set's are: store-table.ts `listWalk`), reported beside it without a budget.
// Each list warmed until its CPU per call is stable, then measured in alternating windows; the cost is the server's
// CPU per call. Both indexes are built first (each list's first call starts its build).
// Alone: `node --conditions=writeonce-source --import tsx bench/scenarios/range-filter.ts [--rows 1000000]`.
import { join } from 'node:path';
import { combine, measure, type Measured } from '../lib/measure.ts';
import { writeProducts } from '../lib/row-writer.ts';
import { warmUntilStable } from '../lib/warmup.ts';
import { freshDataDir, startWo } from '../lib/wo.ts';
import type { LoadRequest } from '../lib/load.ts';
import { budget, budgetTable, type Budget } from '../report.ts';
import type { BenchContext } from './context.ts';
import { argOf, isMain, modeOfArgs, runAlone } from '../lib/alone.ts';

export interface RangeFilterOptions {
  rows: number;
  /** distinct product names: 1/names of the rows share one */
  names: number;
  limit: number;
  windowMs: number;
  rounds: number;
  warmMaxMs: number;
  warmChunkMs: number;
  warmMinCalls: number;
  concurrency: number;
}

export const RANGE_FILTER_DEFAULTS: Record<'full' | 'quick' | 'smoke', RangeFilterOptions> = {
  full: { rows: 1_000_000, names: 100, limit: 50, windowMs: 5000, rounds: 3, warmMaxMs: 20_000, warmChunkMs: 1000, warmMinCalls: 2000, concurrency: 4 },
  quick: { rows: 100_000, names: 100, limit: 50, windowMs: 2000, rounds: 2, warmMaxMs: 8000, warmChunkMs: 1000, warmMinCalls: 1000, concurrency: 4 },
  smoke: { rows: 5_000, names: 100, limit: 20, windowMs: 300, rounds: 1, warmMaxMs: 500, warmChunkMs: 250, warmMinCalls: 10, concurrency: 2 },
};

export interface RangeFilterWindow {
  calls: number;
  errors: number;
  callsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  srvCpuUsPerCall: number;
  otherCores: number;
}

export interface RangeFilterResult {
  rows: number;
  /** rows per equality filter / all rows (a range spans ten prices: about the same) */
  selectivity: number;
  writeMs: number;
  /** from the first list calls to both indexes built */
  indexBuildMs: number;
  lists: { equality: RangeFilterWindow; range: RangeFilterWindow; rangeById: RangeFilterWindow };
}

const summary = (m: Measured): RangeFilterWindow => ({
  calls: m.load.calls,
  errors: m.load.errors,
  callsPerSec: m.load.callsPerSec,
  p50Ms: m.load.p50Ms,
  p99Ms: m.load.p99Ms,
  srvCpuUsPerCall: m.srvCpuMsPerCall * 1000,
  otherCores: m.otherCores,
});

const isPage = (status: number, body: string) => status === 200 && body.startsWith('{"items":[{') && !body.includes('"partial":true');

/** Ranges of ten prices, starting at 1 + 10k: about 1% of the rows each. */
const rangeQuery = (i: number, ordered: boolean) => {
  const low = 1 + 10 * (i % 99);
  return `price%5Bgte%5D=${low}&price%5Blt%5D=${low + 10}${ordered ? '&order=price' : ''}`;
};

export async function runRangeFilter(ctx: BenchContext, o: RangeFilterOptions): Promise<RangeFilterResult> {
  const dir = freshDataDir(ctx.dataRoot, 'range-filter');
  ctx.track(dir);
  ctx.phase(`range-filter: writing ${o.rows.toLocaleString('en-US')} products directly`);
  const written = await writeProducts(dir, o.rows, (i) => ({ name: `item-${i % o.names}`, price: 1 + (i % 997), currency: i % 2 ? 'USD' : 'EUR' }));
  const server = await startWo({ dir, readyTimeoutMs: 120_000 });
  try {
    const url = server.url;
    const list = (path: (i: number) => string) => ({
      url,
      concurrency: o.concurrency,
      makeRequest: (i: number): LoadRequest => ({ method: 'GET', path: path(i) }),
      check: isPage,
    });
    const lists = {
      equality: list((i) => `/api/products?name=item-${i % o.names}&limit=${o.limit}`),
      range: list((i) => `/api/products?${rangeQuery(i, true)}&limit=${o.limit}`),
      rangeById: list((i) => `/api/products?${rangeQuery(i, false)}&limit=${o.limit}`),
    };
    // Each index is built on first use (in the background; the ordered list waits for it): wait for full pages.
    ctx.phase('range-filter: building the indexes on name and price');
    const t0 = performance.now();
    const full = async (path: string) => {
      for (let started = performance.now(); performance.now() - started < 600_000; await new Promise((r) => setTimeout(r, 200))) {
        const res = await fetch(`${url}${path}`);
        if (isPage(res.status, await res.text())) return;
      }
      throw new Error(`range-filter: ${path} never served a full page`);
    };
    await Promise.all([full(lists.equality.makeRequest(o.names - 1).path), full(lists.range.makeRequest(0).path)]);
    await full(lists.rangeById.makeRequest(0).path);
    const indexBuildMs = performance.now() - t0;
    for (const [name, load] of Object.entries(lists)) {
      ctx.phase(`range-filter: warming the ${name} list`);
      const w = await warmUntilStable({ load, pid: server.pid, chunkMs: o.warmChunkMs, maxMs: o.warmMaxMs, minCalls: o.warmMinCalls });
      if (w.errors) ctx.warn(`range-filter warm-up ${name}: ${w.errors} errors, first: ${w.firstError}`);
    }
    const windows: Record<keyof typeof lists, Measured[]> = { equality: [], range: [], rangeById: [] };
    for (let round = 0; round < o.rounds; round++) {
      ctx.phase(`range-filter: round ${round + 1}/${o.rounds}`);
      for (const name of Object.keys(lists) as Array<keyof typeof lists>) windows[name].push(await measure(server, lists[name], o.windowMs));
    }
    return {
      rows: o.rows,
      selectivity: 1 / o.names,
      writeMs: written.ms,
      indexBuildMs,
      lists: {
        equality: summary(combine(windows.equality)),
        range: summary(combine(windows.range)),
        rangeById: summary(combine(windows.rangeById)),
      },
    };
  } finally {
    await server.stop();
  }
}

export const RANGE_FILTER_BUDGET = { rangeOverEquality: 1.5 } as const;

/** The budget (a range's first page costs at most 1.5x an equality's, in server CPU per call), judged on this run. */
export function rangeFilterBudgets(r: RangeFilterResult): Budget[] {
  const { equality, range } = r.lists;
  return [
    budget('rangeFilter.firstPageCpu', `range filter's first page / equality filter's, server CPU per call, ${r.rows.toLocaleString('en-US')} rows`, '<=',
      RANGE_FILTER_BUDGET.rangeOverEquality, range.srvCpuUsPerCall / equality.srvCpuUsPerCall,
      'x', `${range.srvCpuUsPerCall.toFixed(0)} against ${equality.srvCpuUsPerCall.toFixed(0)} µs/call`),
  ];
}

/** The section of the report. */
export function renderRangeFilter(r: RangeFilterResult): string {
  const f = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  const row = (name: string, query: string, w: RangeFilterWindow) =>
    `| ${name} | \`${query}\` | ${f(w.callsPerSec)} | ${f(w.p50Ms, 2)} | ${f(w.p99Ms, 2)} | ${f(w.srvCpuUsPerCall)} | ${f(w.srvCpuUsPerCall / r.lists.equality.srvCpuUsPerCall, 2)}x | ${w.errors} |`;
  return [
    '## Range filters (first page)',
    '',
    `${f(r.rows)} products written directly in ${f(r.writeMs / 1000, 1)} s; the indexes on name and price built in ${f(r.indexBuildMs / 1000, 1)} s. Each filter holds about ${f(r.selectivity * 100)}% of the rows; first pages only.`,
    '',
    '| list | query | calls/s | p50 ms | p99 ms | server CPU µs/call | / equality | errors |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
    row('equality', '?name=item-k', r.lists.equality),
    row('range, ordered by its field', '?price[gte]=p&price[lt]=p+10&order=price', r.lists.range),
    row('range, id order', '?price[gte]=p&price[lt]=p+10', r.lists.rangeById),
    '',
    ...budgetTable(rangeFilterBudgets(r)),
    '',
  ].join('\n');
}

// Run alone: a context of its own, the report on stdout (`--quick` or `--smoke`, `--rows N`).
if (isMain(import.meta.url)) {
  const mode = modeOfArgs();
  const rows = argOf('rows');
  const options = { ...RANGE_FILTER_DEFAULTS[mode], ...(rows !== undefined ? { rows: Number(rows) } : {}) };
  await runAlone('range-filter', mode, async (ctx) => renderRangeFilter(await runRangeFilter(ctx, options)));
}
