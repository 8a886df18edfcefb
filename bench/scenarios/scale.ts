// The budgets for data larger than memory. A store of N products written directly (bench/lib/row-writer.ts;
// 1,000,000 in a full run, 200,000 with --quick), served by `wo run` from the store through its row cache.
// Measured beside an empty dir in the same run: spawn to ready and RSS after start (the second start: the first
// one checks the rows against the schema and folds the pricing view from the log, once), a GET of rows read for
// the first time (cache cold) against GETs of rows just read (cached), a filtered first page against an
// unfiltered one (with the filter's index just built, and built before), and RSS after every row was read once.
// Indexes are on disk: the first filtered page starts its index's backfill (first use: the
// pricing sample declares none) and is answered by a bounded scan meanwhile; the "built" figure is taken once the
// index serves full pages; after a restart the index is still there. Their write cost: durable `set_price`
// server CPU side by side, bench/apps/pricing-plain against the same app with three indexes declared.
//
// Memory: the budget after every row was read once counts the server's private memory (RssAnon + RssShmem), not
// its mapped files (RssFile): LevelDB maps the table files it reads (the start's log audit reads the event tables,
// a walk the row tables), and those clean pages are the kernel's page cache, dropped under pressure, not memory the
// server holds. Total RSS and the mapped files are reported beside it. It is read after a forced full GC
// (lib/force-gc.ts): read without one, a run caught +373 MB of garbage not collected yet where the same section run
// again read +37 MB; the figure before the GC is printed beside it.
//
// Switches: WO_BENCH_SCALE_ROWS=<n> runs another size; WO_BENCH_SCALE_WALK=0 leaves out the walk over every row
// (about 4 minutes per 1,000,000 rows on loaded cores; its figures are then "not measured");
// WO_BENCH_SCALE_INDEX_COST=0 leaves out the set_price side by side (it does not depend on the rows), and
// WO_BENCH_SCALE_INDEX_ROUNDS=<n> takes that many paired rounds of it.
import { budget, type Budget } from '../report.ts';
import { renderSideBySide, runSideBySide, type SideBySideResult } from '../lib/side-by-side.ts';
import { privateRssBytes, rssBytes } from '../lib/cpu.ts';
import { writeProducts } from '../lib/row-writer.ts';
import { freshDataDir, startWo, type SpawnedServer } from '../lib/wo.ts';
import { forceGc, GC_ARGS } from '../lib/force-gc.ts';
import type { BenchContext } from './context.ts';

export interface ScaleOptions {
  rows: number;
  /** GETs per latency sample (each cold one reads a row not read before) */
  gets: number;
}

export interface ScaleResult {
  rows: number;
  cacheMb: number;
  writeMs: number;
  emptyStartMs: number;
  firstStartMs: number;
  startMs: number;
  /** Spawn to ready after one write and a stop (the start after the reads). */
  startAfterWriteMs: number;
  empty: Memory;
  afterStart: Memory;
  /** After every row was read once (NaN when the walk was left out). */
  afterRead: Memory;
  /** The same after a forced full GC: what the server holds, without garbage not collected yet (NaN: not measured). */
  afterReadGc: Memory;
  coldGetP99Ms: number;
  cachedGetP99Ms: number;
  unfilteredFirstPageMs: number;
  /** The slowest of the five unfiltered first pages before any filtered one (the first one, as a rule). */
  unfilteredSlowestMs: number;
  /**
   * The unfiltered first pages (ms) matched with the first five filtered ones: the first unfiltered page
   * (code not compiled yet, as for the first filtered one), then one taken just before each later filtered page
   * (while the index is built, as they are).
   */
  unfilteredAlongside: number[];
  /** The slowest of the first five filtered first pages. */
  filteredFirstPageJustBuiltMs: number;
  /** The rows of the first filtered first page (a scan while the index is built: maybe fewer than the limit). */
  filteredFirstPageJustBuiltItems: number;
  /** Each of those five: its time and its rows. */
  filteredWhileBuilding: Array<{ ms: number; items: number }>;
  /** From that first page until the index served a full first page. */
  indexBuildMs: number;
  filteredFirstPageMs: number;
  /** The same filtered first page after a restart: the index is read from the store, not built again. */
  filteredAfterRestartMs: number;
  /** An unfiltered first page on the same restarted server (its caches and code as cold as the filtered one's). */
  unfilteredAfterRestartMs: number;
  recovered: string;
  /** Durable set_price without / with three declared indexes (left out: WO_BENCH_SCALE_INDEX_COST=0). */
  indexCost?: SideBySideResult;
}

/** A process's resident memory, MB: all of it, its private part (RssAnon + RssShmem) and its mapped files (RssFile). */
export interface Memory {
  rssMb: number;
  privateMb: number;
  filesMb: number;
}

const memoryOf = (pid: number): Memory => ({ rssMb: rssBytes(pid) / MB, privateMb: privateRssBytes(pid) / MB, filesMb: rssBytes(pid, 'RssFile') / MB });
/**
 * Memory once it stops falling (read every 250 ms, at most 5 s): V8 returns the pages a full GC freed on background
 * threads after the GC has ended, so a figure read at once still counts some of them (by how much depends on when
 * those threads ran: +37 to +141 MB over the cache in runs of the same code).
 */
async function settledMemory(pid: number): Promise<Memory> {
  let m = memoryOf(pid);
  for (let waited = 0; waited < 5000; waited += 250) {
    await new Promise((r) => setTimeout(r, 250));
    const next = memoryOf(pid);
    const falling = next.privateMb < m.privateMb - 0.5;
    m = next;
    if (!falling) break;
  }
  return m;
}
const NOT_MEASURED: Memory = { rssMb: Number.NaN, privateMb: Number.NaN, filesMb: Number.NaN };

/** Durable set_price server CPU with three indexes declared over none (budget: <= 1.1x). */
export const INDEX_COST_BUDGET = 1.1;

const MB = 1024 * 1024;
const CACHE = 64 * MB;
const RECOVERED = /recovered \d+ events \(\d+ rows, \d+ tail events\) in \d+ ms/;

const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(0.99 * xs.length))] ?? Number.NaN;

const timedGet = async (url: string) => {
  const t0 = performance.now();
  const res = await fetch(url);
  await res.text();
  if (res.status !== 200) throw new Error(`scale: GET ${url} answered ${res.status}`);
  return performance.now() - t0;
};

/** A few timings of one request, in the order taken (the first of a kind also pays for code not compiled yet). */
const timings = async (url: string, n = 5) => {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) xs.push(await timedGet(url));
  return xs;
};
const middle = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const median = async (url: string, n = 5) => middle(await timings(url, n));

async function timedStart(dir: string, nodeArgs?: string[]): Promise<{ server: SpawnedServer; ms: number }> {
  const t0 = performance.now();
  const server = await startWo({ dir, env: { WO_ROW_CACHE: String(CACHE) }, readyTimeoutMs: 600_000, ...(nodeArgs ? { nodeArgs } : {}) });
  return { server, ms: performance.now() - t0 };
}

export async function runScale(ctx: BenchContext, options: ScaleOptions): Promise<ScaleResult> {
  const opts = { ...options, rows: Number(process.env.WO_BENCH_SCALE_ROWS ?? options.rows) };
  const emptyDir = freshDataDir(ctx.dataRoot, 'scale-empty');
  ctx.track(emptyDir);
  ctx.phase('scale: wo run on an empty dir');
  const empty = await timedStart(emptyDir);
  await new Promise((r) => setTimeout(r, 500));
  const emptyMemory = memoryOf(empty.server.pid);
  await empty.server.stop();

  const dir = freshDataDir(ctx.dataRoot, 'scale');
  ctx.track(dir);
  ctx.phase(`scale: writing ${opts.rows} products directly`);
  const spec = (i: number) => ({ name: `item-${i % 1000}`, price: 1 + (i % 997), currency: (i % 3 === 0 ? 'EUR' : 'USD') as 'EUR' | 'USD' });
  const written = await writeProducts(dir, opts.rows, spec);

  ctx.phase('scale: first start (schema check and the view folded from the log, both once)');
  const first = await timedStart(dir);
  await first.server.stop();

  ctx.phase('scale: second start, then reads');
  const { server, ms: startMs } = await timedStart(dir);
  try {
    await new Promise((r) => setTimeout(r, 500));
    const afterStart = memoryOf(server.pid);
    const recovered = RECOVERED.exec(server.stdout())?.[0] ?? '';
    const url = server.url;
    // A small set of rows read once (then cached), and distinct random ids each read for the first time (cold),
    // one of each in turn: both samples see the same moments (the startup log audit in the background, the
    // machine's other work).
    const hot = Array.from({ length: 100 }, (_, k) => 1 + ((k * 7_919) % opts.rows));
    for (const id of hot) await timedGet(`${url}/api/products/${id}`);
    const hotIds = new Set(hot);
    const coldIds = Array.from({ length: opts.gets + hot.length }, (_, k) => 1 + ((k * 104_729 + 17) % opts.rows)).filter((id) => !hotIds.has(id)).slice(0, opts.gets);
    const cold: number[] = [];
    const cached: number[] = [];
    for (let k = 0; k < opts.gets; k++) {
      cold.push(await timedGet(`${url}/api/products/${coldIds[k]}`));
      cached.push(await timedGet(`${url}/api/products/${hot[k % hot.length]}`));
    }

    const unfilteredTimes = await timings(`${url}/api/products?limit=50`);
    const unfiltered = middle(unfilteredTimes);
    const filteredUrl = `${url}/api/products?name=item-7&limit=50`;
    // The first five filtered pages, while the index is built (its first use starts the build), against five
    // unfiltered ones taken in the same conditions: the first one (the first request of a kind also pays for code
    // not compiled yet), then one just before each later filtered page (the backfill and the start's log audit run
    // meanwhile, and slow any request). The slowest of each: a list that waited for the backfill would show it.
    const building: Array<{ ms: number; items: number }> = [];
    const alongside = [unfilteredTimes[0]];
    for (let k = 0; k < 5; k++) {
      if (k > 0) alongside.push(await timedGet(`${url}/api/products?limit=50`));
      const t0 = performance.now();
      const page = (await (await fetch(filteredUrl)).json()) as { items: unknown[] };
      building.push({ ms: performance.now() - t0, items: page.items.length });
    }
    const justBuilt = Math.max(...building.map((b) => b.ms));
    // The index is ready once a first page is full (item-7 is one row in 1,000): until then pages are scans.
    const full = Math.min(50, Math.floor(opts.rows / 1000));
    const buildStarted = performance.now();
    while (((await (await fetch(filteredUrl)).json()) as { items: unknown[] }).items.length < full) await new Promise((r) => setTimeout(r, 100));
    const indexBuildMs = performance.now() - buildStarted;
    const filtered = await median(filteredUrl);

    // One write, then a start: the issue's "second start after one write".
    const written1 = await fetch(`${url}/api/products/1/set_price`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ price: 1234 }) });
    if (written1.status !== 200) throw new Error(`scale: set_price answered ${written1.status}: ${await written1.text()}`);
    await server.stop();
    ctx.phase('scale: a start after one write');
    // Started with the GC hook (lib/force-gc.ts: two flags and a 10-line preload), for the memory after the walk.
    const again = await timedStart(dir, GC_ARGS);
    let afterRead = NOT_MEASURED;
    let afterReadGc = NOT_MEASURED;
    let filteredAfterRestart = Number.NaN;
    let unfilteredAfterRestart = Number.NaN;
    try {
      unfilteredAfterRestart = await median(`${again.server.url}/api/products?limit=50`);
      filteredAfterRestart = await median(`${again.server.url}/api/products?name=item-7&limit=50`);
      if (process.env.WO_BENCH_SCALE_WALK !== '0') {
        ctx.phase(`scale: reading every row once (pages of 1000)`);
        let cursor: string | undefined;
        let n = 0;
        do {
          const res = await fetch(`${again.server.url}/api/products?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
          const page = (await res.json()) as { items: unknown[]; nextCursor?: string };
          n += page.items.length;
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        if (n !== opts.rows) ctx.warn(`scale: read ${n} rows, wrote ${opts.rows}`);
        afterRead = memoryOf(again.server.pid);
        if (await forceGc(again.server)) afterReadGc = await settledMemory(again.server.pid);
        else ctx.warn('scale: the server did not report a forced GC within 10 s');
      }
    } finally {
      await again.server.stop();
    }
    let indexCost: SideBySideResult | undefined;
    if (process.env.WO_BENCH_SCALE_INDEX_COST !== '0') {
      ctx.phase('scale: durable set_price without and with three indexes');
      const rounds = Number(process.env.WO_BENCH_SCALE_INDEX_ROUNDS ?? Number.NaN);
      indexCost = await runSideBySide(ctx, 'scale-index', [
        { app: 'pricing-plain', label: 'no index' },
        { app: 'pricing-indexed', label: 'three indexes' },
      ], undefined, Number.isInteger(rounds) && rounds > 0 ? { rounds } : {});
    }
    return {
      rows: opts.rows,
      cacheMb: CACHE / MB,
      writeMs: written.ms,
      emptyStartMs: empty.ms,
      firstStartMs: first.ms,
      startMs,
      startAfterWriteMs: again.ms,
      empty: emptyMemory,
      afterStart,
      afterRead,
      afterReadGc,
      coldGetP99Ms: p99(cold),
      cachedGetP99Ms: p99(cached),
      unfilteredFirstPageMs: unfiltered,
      unfilteredSlowestMs: Math.max(...unfilteredTimes),
      unfilteredAlongside: alongside,
      filteredFirstPageJustBuiltMs: justBuilt,
      filteredFirstPageJustBuiltItems: building[0].items,
      filteredWhileBuilding: building,
      indexBuildMs,
      filteredFirstPageMs: filtered,
      filteredAfterRestartMs: filteredAfterRestart,
      unfilteredAfterRestartMs: unfilteredAfterRestart,
      recovered,
      indexCost,
    };
  } finally {
    await server.stop();
  }
}

/** The issue's budgets, as ratios measured in this run. */
export const scaleBudgets = (r: ScaleResult): Budget[] => {
  const n = r.rows.toLocaleString('en-US');
  return [
    budget('scaleStart', `spawn to ready with ${n} rows / empty dir`, '<=', 1.5, r.startMs / r.emptyStartMs, 'x', `${r.startMs.toFixed(0)} against ${r.emptyStartMs.toFixed(0)} ms; see "Data larger than memory"`),
    budget('scaleRss', `RSS after start with ${n} rows - empty dir`, '<=', 100, r.afterStart.rssMb - r.empty.rssMb, ' MB', `${r.afterStart.rssMb.toFixed(0)} against ${r.empty.rssMb.toFixed(0)} MB (all of RSS)`),
    budget('scaleRssRead', `private memory (RssAnon + RssShmem) after every row was read once and a forced GC - empty dir - cache`, '<=', 100, r.afterReadGc.privateMb - r.empty.privateMb - r.cacheMb, ' MB',
      `${r.afterReadGc.privateMb.toFixed(0)} against ${r.empty.privateMb.toFixed(0)} MB, cache ${r.cacheMb} MB; before the GC ${r.afterRead.privateMb.toFixed(0)} MB (garbage not collected yet counts there). Counted without the mapped files (RssFile ${r.afterReadGc.filesMb.toFixed(0)} against ${r.empty.filesMb.toFixed(0)} MB: LevelDB's table files, clean page cache the kernel reclaims); all of RSS ${r.afterReadGc.rssMb.toFixed(0)} against ${r.empty.rssMb.toFixed(0)} MB`),
    budget('scaleColdGet', 'GET p99, cache cold / cached', '<=', 3, r.coldGetP99Ms / r.cachedGetP99Ms, 'x', `${r.coldGetP99Ms.toFixed(2)} against ${r.cachedGetP99Ms.toFixed(2)} ms`),
    budget('scaleFiltered', 'filtered first page (index built) / unfiltered first page', '<=', 1.5, r.filteredFirstPageMs / r.unfilteredFirstPageMs, 'x', `${r.filteredFirstPageMs.toFixed(2)} against ${r.unfilteredFirstPageMs.toFixed(2)} ms`),
    budget('scaleFilteredBuild', 'filtered first page (index just built) / unfiltered first page, the slowest of 5 each, taken alternately', '<=', 1.5, r.filteredFirstPageJustBuiltMs / Math.max(...r.unfilteredAlongside), 'x', `${r.filteredFirstPageJustBuiltMs.toFixed(2)} against ${Math.max(...r.unfilteredAlongside).toFixed(2)} ms (medians ${middle(r.filteredWhileBuilding.map((b) => b.ms)).toFixed(2)} against ${middle(r.unfilteredAlongside).toFixed(2)} ms; unfiltered before the build: slowest ${r.unfilteredSlowestMs.toFixed(2)} ms): while its index is built, a page is a bounded scan (${r.filteredWhileBuilding.map((b) => `${b.ms.toFixed(1)} ms ${b.items} rows`).join(', ')}; full pages from the index ${(r.indexBuildMs / 1000).toFixed(1)} s later)`),
    budget('scaleFilteredRestart', 'filtered first page after a restart (index on disk, not built again) / unfiltered first page', '<=', 1.5, r.filteredAfterRestartMs / r.unfilteredAfterRestartMs, 'x', `${r.filteredAfterRestartMs.toFixed(2)} against ${r.unfilteredAfterRestartMs.toFixed(2)} ms, both on the restarted server`),
    budget('scaleIndexCpu', 'durable set_price server CPU with three indexes / without (median of paired rounds)', '<=', INDEX_COST_BUDGET, r.indexCost?.medianRatio ?? Number.NaN, 'x',
      r.indexCost === undefined ? '' : `${r.indexCost.b.srvCpuUsPerCall.toFixed(0)} against ${r.indexCost.a.srvCpuUsPerCall.toFixed(0)} µs/call; rounds ${r.indexCost.roundRatios.map((x) => x.toFixed(2)).join(', ')}`),
  ];
};

export function renderScale(r: ScaleResult): string {
  const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  const mem = (m: Memory) => `${f(m.rssMb, 0)} / ${f(m.privateMb, 0)} / ${f(m.filesMb, 0)} MB`;
  return [
    '## Data larger than memory',
    '',
    `${r.rows.toLocaleString('en-US')} products written directly (${f(r.writeMs / 1000)} s), served from the store through a ${r.cacheMb} MiB row cache (\`WO_ROW_CACHE\`).`,
    '',
    '| figure | empty dir | with the rows |',
    '|---|---|---|',
    `| spawn to ready, first start (schema check and view fold, once) | ${f(r.emptyStartMs, 0)} ms | ${f(r.firstStartMs, 0)} ms |`,
    `| spawn to ready, second start, no write in between | ${f(r.emptyStartMs, 0)} ms | ${f(r.startMs, 0)} ms (${r.recovered}) |`,
    `| spawn to ready, a start after one write | ${f(r.emptyStartMs, 0)} ms | ${f(r.startAfterWriteMs, 0)} ms |`,
    `| RSS after start: all / private (RssAnon + RssShmem) / mapped files (RssFile) | ${mem(r.empty)} | ${mem(r.afterStart)} |`,
    `| RSS after every row was read once: all / private / mapped files (the node binary, LevelDB's tables) | ${mem(r.empty)} | ${mem(r.afterRead)} |`,
    `| the same after a forced full GC | ${mem(r.empty)} | ${mem(r.afterReadGc)} |`,
    `| GET p99, cache cold / cached | | ${f(r.coldGetP99Ms, 2)} / ${f(r.cachedGetP99Ms, 2)} ms |`,
    `| first page, median of 5: unfiltered / \`?name=item-7\`, its index built | | ${f(r.unfilteredFirstPageMs, 2)} / ${f(r.filteredFirstPageMs, 2)} ms |`,
    `| first filtered list \`?name=item-7&limit=50\` (its index not built yet: a bounded scan, ${r.filteredWhileBuilding[0].items} rows) | | ${f(r.filteredWhileBuilding[0].ms, 2)} ms |`,
    `| first page, the slowest of 5: unfiltered before the build / unfiltered alongside / \`?name=item-7\` while its index is built (bounded scans: ${r.filteredWhileBuilding.map((b) => b.items).join(", ")} of 50 rows) | | ${f(r.unfilteredSlowestMs, 2)} / ${f(Math.max(...r.unfilteredAlongside), 2)} / ${f(r.filteredFirstPageJustBuiltMs, 2)} ms |`,
    `| index on \`name\` built in the background, from the first filtered page | | ${f(r.indexBuildMs / 1000)} s |`,
    `| after a restart: unfiltered / \`?name=item-7\` (its index read from the store) | | ${f(r.unfilteredAfterRestartMs, 2)} / ${f(r.filteredAfterRestartMs, 2)} ms |`,
    '',
    'Durable `set_price`, side by side: the pricing sample without indexes and with three declared (`name`, `price`, `[currency, price]`; each `set_price` moves two of them).',
    '',
    ...(r.indexCost ? renderSideBySide(r.indexCost, 'with / without', INDEX_COST_BUDGET) : ['Not measured in this run (WO_BENCH_SCALE_INDEX_COST=0).']),
  ].join('\n');
}
