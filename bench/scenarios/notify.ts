// Commit to notification, on one resource (wo://products/1) watched by 1, 100 and 1,000 modern
// `subscriptions/listen` streams opened over raw HTTP (WO_MAX_LISTENS_PER_CLIENT=5000).
//  - latency: one durable `POST /api/products/1/set_price` at a time; for each subscriber, the time from
//    just before the request is sent to its `notifications/resources/updated` arriving. This includes the
//    request, the decide, the fsync and the fan-out, so it is an upper bound on commit-to-notification.
//    Also reported from the response's arrival (the notification usually wins: it is written before the
//    response), and the spread between the first and the last subscriber of one commit.
//  - fan-out throughput: set_price calls back to back (never more than `window` commits ahead of the
//    slowest subscriber, so no stream buffer overflows); notifications delivered per second and the
//    server's CPU per notification.
import { Pool } from 'undici';
import { cpuBetween, rssBytes, sampleCpu } from '../lib/cpu.ts';
import { LatencyHistogram } from '../lib/histogram.ts';
import { assertAlive } from '../lib/measure.ts';
import { forceGc, GC_ARGS } from '../lib/force-gc.ts';
import { DeliveryTracker, openLegacyGets, openListens, type Subscriber } from '../lib/subscribers.ts';
import { freshDataDir, isRow, restSetPrice, seedProducts, startWo } from '../lib/wo.ts';
import { spawnPeer, type SpawnedServer } from '../lib/wo.ts';
import type { BenchContext } from './context.ts';

export interface NotifyOptions {
  subscriberCounts: number[];
  /** commits measured one at a time, per subscriber count (at least 3, fewer if `latencyBudgetMs` runs out) */
  repeats: number;
  /** wall-time bound on the warm-up plus latency commits, per subscriber count */
  latencyBudgetMs: number;
  /** fan-out throughput window per subscriber count (0: not measured) */
  fanoutMs: number;
  /** most commits the sender may be ahead of the slowest subscriber */
  window: number;
  /** after closing every stream, wait this long and measure RSS again (0: not measured) */
  afterCloseMs?: number;
}

export interface NotifyLatency {
  subscribers: number;
  repeats: number;
  /** subscriber x commit samples */
  samples: number;
  /** from just before the set_price request is sent */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** from the set_price response's arrival (negative: the notification arrived first) */
  fromResponseP50Ms: number;
  fromResponseP99Ms: number;
  /** the set_price round trip itself */
  setPriceP50Ms: number;
  /** last minus first subscriber, per commit */
  spreadP50Ms: number;
  spreadP99Ms: number;
  /** commits some subscriber did not see within the timeout */
  missed: number;
}

export interface FanOut {
  subscribers: number;
  setPrices: number;
  delivered: number;
  expected: number;
  ms: number;
  notificationsPerSec: number;
  setPricesPerSec: number;
  srvCpuUsPerNotification: number;
  srvCores: number;
  endedStreams: number;
}

export interface NotifyResult {
  /** which server: ours, or the plain node:http fan-out floor (bench/peers/sse-fanout.ts) */
  server: string;
  /** modern `subscriptions/listen` streams, or legacy sessions' GET streams (absent in older results: modern) */
  era?: 'modern' | 'legacy';
  /** fan-out: most commits ahead of the slowest subscriber */
  window: number;
  latency: NotifyLatency[];
  fanout: FanOut[];
  /** server RSS before any listen stream, and with each count open */
  rss: { subscribers: number; rssMb: number }[];
  /**
   * The same readings, each taken just after the plain one and a forced full GC: what the streams
   * retain, without the garbage V8 has not collected yet. Absent on a server not started here.
   */
  rssGc?: { subscribers: number; rssMb: number }[];
  /** server RSS before the streams opened, and `settleMs` after they all closed; `*GcMb` after a forced full GC */
  rssAfterClose?: { beforeMb: number; afterMb: number; settleMs: number; beforeGcMb?: number; afterGcMb?: number };
}

/** The server's RSS in MB after a forced full GC (lib/force-gc.ts), or undefined on a timeout. */
async function rssAfterGc(srv: SpawnedServer): Promise<number | undefined> {
  return (await forceGc(srv)) ? rssBytes(srv.pid) / 2 ** 20 : undefined;
}

const URI = 'wo://products/1';

function percentileOf(sorted: number[], p: number): number {
  if (!sorted.length) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** The env a server needs for this scenario (when one is passed in instead of started here). */
export const NOTIFY_ENV = { WO_MAX_LISTENS_PER_CLIENT: '5000', WO_MAX_LISTEN_STREAMS: '10000' };

/**
 * Runs the scenario against our server (a fresh one, or `shared`, which must have product 1), or against
 * the fan-out floor peer when `peer` is set (started here).
 */
export async function runNotify(ctx: BenchContext, opts: NotifyOptions, shared?: SpawnedServer, peer = false, era: 'modern' | 'legacy' = 'modern'): Promise<NotifyResult> {
  let server = shared;
  if (peer) server = await spawnPeer('bench/peers/sse-fanout.ts', { nodeArgs: GC_ARGS });
  if (!server) {
    const dir = freshDataDir(ctx.dataRoot, 'notify');
    ctx.track(dir);
    server = await startWo({ dir, env: NOTIFY_ENV, nodeArgs: GC_ARGS });
  }
  const gcHook = !shared || peer;
  const srv = server;
  const pool = new Pool(srv.url, { connections: 1, pipelining: 1, keepAliveTimeout: 60_000 });
  const subs: Subscriber[] = [];
  const result: NotifyResult = { server: peer ? 'plain node:http SSE fan-out (floor)' : 'wo', era, window: opts.window, latency: [], fanout: [], rss: [], ...(gcHook ? { rssGc: [] } : {}) };
  /** RSS now, then (on a server started here) after a forced full GC. */
  const readRss = async (subscribers: number) => {
    result.rss.push({ subscribers, rssMb: rssBytes(srv.pid) / 2 ** 20 });
    if (!gcHook) return;
    const rssMb = await rssAfterGc(srv);
    if (rssMb !== undefined) result.rssGc!.push({ subscribers, rssMb });
  };
  const open = (n: number) => (era === 'legacy' ? openLegacyGets(srv.url, n, URI) : openListens(srv.url, n, URI));
  let price = 1;
  const setPrice = async (): Promise<number> => {
    const req = restSetPrice(1, 1 + (price++ % 1000));
    const res = await pool.request({ method: req.method, path: req.path, headers: req.headers, body: req.body });
    const body = await res.body.text();
    const at = performance.now();
    if (!isRow(res.statusCode, body, 200)) throw new Error(`set_price: HTTP ${res.statusCode} ${body.slice(0, 200)}`);
    return at;
  };
  try {
    if (!shared && !peer) await seedProducts(srv.url, 1);
    await readRss(0);
    for (const n of [...opts.subscriberCounts].sort((a, b) => a - b)) {
      ctx.phase(`notifications${peer ? ' (plain node:http floor)' : ''}: ${n} ${era === 'legacy' ? 'legacy GET' : 'listen'} subscriber${n === 1 ? '' : 's'} on ${URI}`);
      if (subs.length < n) subs.push(...(await open(n - subs.length)));
      await readRss(n);
      const active = subs.slice(0, n);
      for (const s of subs.slice(n)) s.close();

      // Warm the fan-out path, one commit at a time (a fifth of the time budget at most).
      const phaseStart = performance.now();
      {
        const tracker = new DeliveryTracker(active);
        for (let k = 1; k <= Math.min(30, opts.repeats) && (k <= 1 || performance.now() - phaseStart < opts.latencyBudgetMs / 5); k++) {
          await setPrice();
          await tracker.waitFor(k, 3000);
        }
        tracker.detach();
      }

      // Latency: one commit at a time.
      let t0 = 0;
      let arrivals: number[] = [];
      let target = 0;
      const tracker = new DeliveryTracker(active, (_sub, at, level) => {
        if (level === target) arrivals.push(at);
      });
      const fromSend: number[] = [];
      const fromResponse: number[] = [];
      const spreads: number[] = [];
      const rtt = new LatencyHistogram();
      let missed = 0;
      let r = 0;
      for (; r < opts.repeats && (r < 3 || performance.now() - phaseStart < opts.latencyBudgetMs); r++) {
        assertAlive(srv, 'notification latency');
        arrivals = [];
        target = tracker.fullyDelivered + 1;
        t0 = performance.now();
        const responded = await setPrice();
        rtt.record((responded - t0) * 1000);
        const ok = await tracker.waitFor(target, 3000);
        if (!ok) {
          missed++;
          // resynchronise on whatever the slowest subscriber has
          target = 0;
          continue;
        }
        for (const a of arrivals) {
          fromSend.push(a - t0);
          fromResponse.push(a - responded);
        }
        spreads.push(Math.max(...arrivals) - Math.min(...arrivals));
        await new Promise((res) => setTimeout(res, 2)); // let the server settle between commits
      }
      tracker.detach();
      fromSend.sort((a, b) => a - b);
      fromResponse.sort((a, b) => a - b);
      spreads.sort((a, b) => a - b);
      result.latency.push({
        subscribers: n,
        repeats: r,
        samples: fromSend.length,
        p50Ms: percentileOf(fromSend, 50),
        p99Ms: percentileOf(fromSend, 99),
        maxMs: fromSend.length ? fromSend[fromSend.length - 1] : Number.NaN,
        fromResponseP50Ms: percentileOf(fromResponse, 50),
        fromResponseP99Ms: percentileOf(fromResponse, 99),
        setPriceP50Ms: rtt.percentile(50) / 1000,
        spreadP50Ms: percentileOf(spreads, 50),
        spreadP99Ms: percentileOf(spreads, 99),
        missed,
      });

      // Fan-out throughput: commits back to back, at most `window` ahead of the slowest subscriber.
      if (opts.fanoutMs > 0) {
        const ft = new DeliveryTracker(active);
        const base = 0;
        const before = active.reduce((a, s) => a + s.count, 0);
        const cpu0 = sampleCpu(srv.pid);
        const started = performance.now();
        const deadline = started + opts.fanoutMs;
        let k = 0;
        while (performance.now() < deadline && k < 1_000_000) {
          if (!(await ft.waitFor(base + k - opts.window, 5000))) break;
          await setPrice();
          k++;
        }
        await ft.waitFor(base + k, 5000);
        const lastAt = Math.max(...active.map((s) => s.lastAt));
        const cpu = cpuBetween(cpu0, sampleCpu(srv.pid));
        ft.detach();
        const delivered = active.reduce((a, s) => a + s.count, 0) - before;
        const ms = Math.max(1, lastAt - started);
        result.fanout.push({
          subscribers: n,
          setPrices: k,
          delivered,
          expected: k * n,
          ms,
          notificationsPerSec: delivered / (ms / 1000),
          setPricesPerSec: k / (ms / 1000),
          srvCpuUsPerNotification: delivered ? (cpu.cpuMs * 1000) / delivered : Number.NaN,
          srvCores: cpu.utilisation,
          endedStreams: active.filter((s) => s.ended).length,
        });
      }
    }
    if (opts.afterCloseMs) {
      // Memory comes back: RSS once every stream has closed, against before they opened.
      for (const s of subs) s.close();
      ctx.phase(`notifications: RSS ${opts.afterCloseMs / 1000} s after ${subs.length} streams closed`);
      await new Promise((r) => setTimeout(r, opts.afterCloseMs));
      result.rssAfterClose = { beforeMb: result.rss[0].rssMb, afterMb: rssBytes(srv.pid) / 2 ** 20, settleMs: opts.afterCloseMs };
      const afterGcMb = gcHook ? await rssAfterGc(srv) : undefined;
      const beforeGcMb = result.rssGc?.find((x) => x.subscribers === 0)?.rssMb;
      if (afterGcMb !== undefined && beforeGcMb !== undefined) Object.assign(result.rssAfterClose, { beforeGcMb, afterGcMb });
    }
  } finally {
    for (const s of subs) s.close();
    await pool.close();
    if (!shared || peer) await srv.stop();
  }
  // let the server notice the closed streams before the next scenario uses it
  if (shared) await new Promise((r) => setTimeout(r, 300));
  return result;
}
