// Restart recovery and the full `wo replay` rate on a big log (1M events; 100k with --quick).
// The data dir is made by the real server (products created over REST, a few real set_price calls), then
// the bulk of the log is appended directly in the same format (bench/lib/log-writer.ts), and `wo replay`
// must say OK. Restart: `wo run` on that dir, timed from spawn to its ready line, beside the same start on an
// empty dir; recovery reads the stored rows plus the log past the checkpoint (none: every batch stores its
// rows), so it should not grow with the log. `wo verify` then checks the whole store (checksums, continuity).
import { rssBytes } from '../lib/cpu.ts';
import { appendSetPriceEvents, lastSeqOf } from '../lib/log-writer.ts';
import { runLoad } from '../lib/load.ts';
import { freshDataDir, isRow, restSetPrice, seedProducts, startWo, woReplay, woVerify } from '../lib/wo.ts';
import type { BenchContext } from './context.ts';

export interface ReplayOptions {
  /** total events in the log */
  events: number;
  /** products created through the real server (when no baseDir is given) */
  products: number;
  /** a data dir the real server made and has stopped using (e.g. the stall scenario's): built upon */
  baseDir?: string;
  /** spawn-to-ready of `wo run` on an empty dir, when already measured elsewhere in this run */
  emptyStartMs?: number;
  /** how that figure was taken, when it was not measured here */
  emptyStartNote?: string;
}

export interface ReplayResult {
  events: number;
  products: number;
  /** writing the log directly */
  buildMs: number;
  logMb: number;
  /** `wo replay` said OK (rebuilt digest equals stored digest) */
  ok: boolean;
  replayedEvents: number;
  /** as `wo replay` reports it (the fold and both digests), and the whole process's wall time */
  replayMs: number;
  replayWallMs: number;
  replayEventsPerSec: number;
  /** `wo run` spawn-to-ready on this dir, and on an empty dir for comparison */
  restartMs: number;
  emptyStartMs: number;
  emptyStartNote?: string;
  /** as the server logs it: `recovered N events (R rows, T tail events) in X ms` */
  recoveredMs: number;
  recoveredEvents: number;
  tailEvents: number;
  srvRssMbAfterRestart: number;
  replayOutput: string;
  /** `wo verify` said OK (checksums, continuity, counters, checkpoint), and its rate as it reports it */
  verifyOk: boolean;
  verifyMs: number;
  verifyEventsPerSec: number;
  verifyOutput: string;
}

const REPLAYED = /replayed (\d+) events into (\d+) rows in (\d+) ms/;
const VERIFIED = /verified (\d+) events and (\d+) rows in (\d+) ms/;
const RECOVERED = /recovered (\d+) events \((\d+) rows, (\d+) tail events\) in (\d+) ms/;

async function timedStart(dir: string) {
  const t0 = performance.now();
  const server = await startWo({ dir, readyTimeoutMs: 120_000 });
  const ms = performance.now() - t0;
  // The recovery line follows the ready line; give it a moment to arrive.
  for (let i = 0; i < 50 && !RECOVERED.test(server.stdout()); i++) await new Promise((r) => setTimeout(r, 20));
  return { server, ms, recovered: RECOVERED.exec(server.stdout()) };
}

export async function runReplay(ctx: BenchContext, opts: ReplayOptions): Promise<ReplayResult> {
  let dir = opts.baseDir;
  let existing = 0;
  if (dir === undefined) {
    dir = freshDataDir(ctx.dataRoot, 'replay');
    ctx.track(dir);
    ctx.phase(`replay: ${opts.products} products and a few set_price calls through the real server`);
    const seedServer = await startWo({ dir });
    try {
      await seedProducts(seedServer.url, opts.products);
      const r = await runLoad({
        url: seedServer.url,
        concurrency: 4,
        totalRequests: 200,
        makeRequest: (i) => restSetPrice(1 + (i % opts.products), 1 + i),
        check: (status, body) => isRow(status, body, 200),
      });
      if (r.errors) throw new Error(`replay seed: ${r.errors} set_price errors, first: ${r.firstError}`);
    } finally {
      await seedServer.stop();
    }
    existing = opts.products + 200;
  } else {
    existing = await lastSeqOf(dir);
  }

  const bulk = Math.max(0, opts.events - existing);
  ctx.phase(`replay: appending ${bulk} set_price events directly (classic-level, the server's key layout)`);
  const built = await appendSetPriceEvents(dir, bulk);

  ctx.phase(`replay: wo replay on ${built.lastSeq} events`);
  const rep = await woReplay(dir);
  const replayed = REPLAYED.exec(rep.stdout);
  const ok = rep.code === 0 && /^OK:/m.test(rep.stdout);
  if (!ok) ctx.warn(`wo replay did not say OK (exit ${rep.code}): ${(rep.stdout + rep.stderr).trim().slice(0, 400)}`);

  ctx.phase(`replay: wo verify on ${built.lastSeq} events`);
  const ver = await woVerify(dir);
  const verified = VERIFIED.exec(ver.stdout);
  const verifyOk = ver.code === 0 && /^OK:/m.test(ver.stdout);
  if (!verifyOk) ctx.warn(`wo verify did not say OK (exit ${ver.code}): ${(ver.stdout + ver.stderr).trim().slice(0, 400)}`);

  let emptyStartMs = opts.emptyStartMs;
  if (emptyStartMs === undefined) {
    ctx.phase('replay: wo run on an empty dir, for comparison');
    const emptyDir = freshDataDir(ctx.dataRoot, 'empty');
    ctx.track(emptyDir);
    const empty = await timedStart(emptyDir);
    await empty.server.stop();
    emptyStartMs = empty.ms;
  }
  ctx.phase(`replay: restart recovery (wo run on the ${built.lastSeq}-event dir)`);
  const big = await timedStart(dir);
  const rss = rssBytes(big.server.pid) / 2 ** 20;
  await big.server.stop();
  if (!big.recovered) ctx.warn('restart: the server did not log its recovery line');

  const replayMs = replayed ? Number(replayed[3]) : Number.NaN;
  const replayedEvents = replayed ? Number(replayed[1]) : 0;
  return {
    events: built.lastSeq,
    products: built.products,
    buildMs: built.ms,
    logMb: built.bytes / 2 ** 20,
    ok,
    replayedEvents,
    replayMs,
    replayWallMs: rep.wallMs,
    replayEventsPerSec: replayedEvents / (replayMs / 1000),
    restartMs: big.ms,
    emptyStartMs,
    ...(opts.emptyStartNote ? { emptyStartNote: opts.emptyStartNote } : {}),
    recoveredMs: big.recovered ? Number(big.recovered[4]) : Number.NaN,
    recoveredEvents: big.recovered ? Number(big.recovered[1]) : 0,
    tailEvents: big.recovered ? Number(big.recovered[3]) : 0,
    srvRssMbAfterRestart: rss,
    replayOutput: rep.stdout.trim(),
    verifyOk,
    verifyMs: verified ? Number(verified[3]) : Number.NaN,
    verifyEventsPerSec: verified ? Number(verified[1]) / (Number(verified[3]) / 1000) : Number.NaN,
    verifyOutput: ver.stdout.trim(),
  };
}
