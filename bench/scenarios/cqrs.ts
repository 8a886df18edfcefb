// CQRS depth, side by side on one server (`wo run examples/pricing`) over a table written directly
// (bench/lib/row-writer.ts: 100,000 products; names item-0 .. item-99, so one name is 1% of the rows):
//  - lists: an unfiltered first page (`GET /api/products`, 50 rows) against an equality filter of about 1%
//    selectivity (`GET /api/products?name=item-<k>`, its first page of 50 out of 1,000), and the same filter
//    ordered by price (`&order=-price`). Each warmed, then measured in alternating windows.
//  - commits: durable `POST /api/products/:id/set_price` at 16 in flight with no live query registered, against
//    one listen stream holding 1,000 live queries on the type that no commit touches (`wo://products?name=other-<k>`:
//    the cost of matching), and against 1,000 of which each commit touches exactly one (`wo://products?name=item-<k>`,
//    k = 0..999, item-0 .. item-99 existing: matching plus one notification per commit). Alternating windows, each
//    stream opened for its window and closed after it.
import { combine, measure, type Measured } from '../lib/measure.ts';
import { writeProducts } from '../lib/row-writer.ts';
import { openListen, type Subscriber } from '../lib/subscribers.ts';
import { warmUntilStable } from '../lib/warmup.ts';
import { freshDataDir, isRow, restSetPrice, startWo } from '../lib/wo.ts';
import type { LoadRequest } from '../lib/load.ts';
import type { BenchContext } from './context.ts';

export interface CqrsOptions {
  rows: number;
  /** distinct product names: 1/names of the rows share one */
  names: number;
  liveQueries: number;
  windowMs: number;
  rounds: number;
  warmMaxMs: number;
  warmChunkMs: number;
  warmMinCalls: number;
  listConcurrency: number;
  writeConcurrency: number;
}

export interface CqrsWindow {
  calls: number;
  errors: number;
  callsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  srvCpuUsPerCall: number;
  otherCores: number;
}

export interface CqrsResult {
  rows: number;
  names: number;
  /** rows per filtered list / all rows */
  selectivity: number;
  writeMs: number;
  /** `wo run` spawn to ready on the written dir (the pricing view is folded from the log on this first start) */
  startMs: number;
  lists: { unfiltered: CqrsWindow; filtered: CqrsWindow; filteredOrdered: CqrsWindow };
  commits: { none: CqrsWindow; untouched: CqrsWindow; live: CqrsWindow; liveQueries: number; notified: number };
}

const summary = (m: Measured): CqrsWindow => ({
  calls: m.load.calls,
  errors: m.load.errors,
  callsPerSec: m.load.callsPerSec,
  p50Ms: m.load.p50Ms,
  p99Ms: m.load.p99Ms,
  srvCpuUsPerCall: m.srvCpuMsPerCall * 1000,
  otherCores: m.otherCores,
});

/** Several windows as one: calls and CPU summed, percentiles from the merged latency histograms. */
const merged = (windows: Measured[]): CqrsWindow => summary(combine(windows));

const isPage = (status: number, body: string) => status === 200 && body.startsWith('{"items":[{');

export async function runCqrs(ctx: BenchContext, o: CqrsOptions): Promise<CqrsResult> {
  const dir = freshDataDir(ctx.dataRoot, 'cqrs');
  ctx.track(dir);
  ctx.phase(`cqrs: writing ${o.rows.toLocaleString('en-US')} products directly (names item-0 .. item-${o.names - 1})`);
  const written = await writeProducts(dir, o.rows, (i) => ({ name: `item-${i % o.names}`, price: 1 + (i % 997), currency: i % 2 ? 'USD' : 'EUR' }));
  const t0 = performance.now();
  const server = await startWo({ dir, readyTimeoutMs: 120_000, env: { WO_MAX_SUBSCRIPTIONS: String(Math.max(1000, o.liveQueries)) } });
  const startMs = performance.now() - t0;
  try {
    const url = server.url;
    const list = (path: (i: number) => string) => ({ url, concurrency: o.listConcurrency, makeRequest: (i: number): LoadRequest => ({ method: 'GET', path: path(i) }), check: isPage });
    const lists = {
      unfiltered: list(() => '/api/products'),
      filtered: list((i) => `/api/products?name=item-${i % o.names}`),
      filteredOrdered: list((i) => `/api/products?name=item-${i % o.names}&order=-price`),
    };
    // The first filtered page starts the name index's build; until it is built pages are bounded scans, often empty
    // (`isPage` fails them). Measure the index: wait for a full page of the last name, then warm.
    ctx.phase('cqrs: waiting for the name index');
    const rowsPerName = Math.floor(o.rows / o.names);
    for (let t0 = performance.now(); performance.now() - t0 < 120_000; await new Promise((r) => setTimeout(r, 100))) {
      const page = await fetch(`${url}/api/products?name=item-${o.names - 1}&limit=${Math.min(50, rowsPerName)}`).then((r) => r.json()) as { items: unknown[] };
      if (page.items.length === Math.min(50, rowsPerName)) break;
    }
    for (const [name, load] of Object.entries(lists)) {
      ctx.phase(`cqrs: warming the ${name} list`);
      const w = await warmUntilStable({ load, pid: server.pid, chunkMs: o.warmChunkMs, maxMs: o.warmMaxMs, minCalls: o.warmMinCalls });
      if (w.errors) ctx.warn(`cqrs warm-up ${name}: ${w.errors} errors, first: ${w.firstError}`);
    }
    const listWindows: Record<keyof typeof lists, Measured[]> = { unfiltered: [], filtered: [], filteredOrdered: [] };
    for (let round = 0; round < o.rounds; round++) {
      ctx.phase(`cqrs: lists, round ${round + 1}/${o.rounds}`);
      for (const name of Object.keys(lists) as Array<keyof typeof lists>) listWindows[name].push(await measure(server, lists[name], o.windowMs));
    }

    const setPrice = { url, concurrency: o.writeConcurrency, makeRequest: (i: number) => restSetPrice(1 + ((i * 7919) % o.rows), 1 + (i % 500)), check: (s: number, b: string) => isRow(s, b, 200) };
    ctx.phase('cqrs: warming set_price');
    const w = await warmUntilStable({ load: setPrice, pid: server.pid, chunkMs: o.warmChunkMs, maxMs: o.warmMaxMs, minCalls: o.warmMinCalls });
    if (w.errors) ctx.warn(`cqrs warm-up set_price: ${w.errors} errors, first: ${w.firstError}`);
    const touched = Array.from({ length: o.liveQueries }, (_, k) => `wo://products?name=item-${k}`);
    const untouchedUris = Array.from({ length: o.liveQueries }, (_, k) => `wo://products?name=other-${k}`);
    const none: Measured[] = [];
    const untouched: Measured[] = [];
    const live: Measured[] = [];
    let notified = 0;
    const withListen = async (uris: string[], id: number, into: Measured[]) => {
      const listener: Subscriber = await openListen(url, id, uris);
      try {
        const before = listener.count;
        into.push(await measure(server, setPrice, o.windowMs));
        await new Promise((r) => setTimeout(r, 100));
        if (listener.ended) ctx.warn('cqrs: a live-query listen stream ended during its window (overflow?)');
        return listener.count - before;
      } finally {
        listener.close();
      }
    };
    for (let round = 0; round < o.rounds; round++) {
      ctx.phase(`cqrs: set_price without and with ${o.liveQueries} live queries, round ${round + 1}/${o.rounds}`);
      none.push(await measure(server, setPrice, o.windowMs));
      const stray = await withListen(untouchedUris, 9_000_000 + 2 * round, untouched);
      if (stray !== 0) ctx.warn(`cqrs: ${stray} notifications for live queries no commit touches`);
      notified += await withListen(touched, 9_000_001 + 2 * round, live);
    }
    const result: CqrsResult = {
      rows: o.rows,
      names: o.names,
      selectivity: 1 / o.names,
      writeMs: written.ms,
      startMs,
      lists: {
        unfiltered: merged(listWindows.unfiltered),
        filtered: merged(listWindows.filtered),
        filteredOrdered: merged(listWindows.filteredOrdered),
      },
      commits: { none: merged(none), untouched: merged(untouched), live: merged(live), liveQueries: o.liveQueries, notified },
    };
    if (result.commits.notified < result.commits.live.calls * 0.9) {
      ctx.warn(`cqrs: ${result.commits.notified} notifications for ${result.commits.live.calls} set_price calls with live queries (expected one each)`);
    }
    return result;
  } finally {
    await server.stop();
  }
}

/** The scenario's ratios, measured side by side in this run. */
export const cqrsRatios = (r: CqrsResult | null | undefined): Record<string, number> => ({
  filteredListP99OverUnfiltered: r ? r.lists.filtered.p99Ms / r.lists.unfiltered.p99Ms : Number.NaN,
  filteredListCpuOverUnfiltered: r ? r.lists.filtered.srvCpuUsPerCall / r.lists.unfiltered.srvCpuUsPerCall : Number.NaN,
  filteredOrderedListP99OverUnfiltered: r ? r.lists.filteredOrdered.p99Ms / r.lists.unfiltered.p99Ms : Number.NaN,
  commitCpuWithLiveQueriesOverNone: r ? r.commits.untouched.srvCpuUsPerCall / r.commits.none.srvCpuUsPerCall : Number.NaN,
  commitP99WithLiveQueriesOverNone: r ? r.commits.untouched.p99Ms / r.commits.none.p99Ms : Number.NaN,
  commitCpuWithNotifiedLiveQueriesOverNone: r ? r.commits.live.srvCpuUsPerCall / r.commits.none.srvCpuUsPerCall : Number.NaN,
});
