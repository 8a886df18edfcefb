// The backup budget: `wo backup` of a big log (1M events; 100k with --quick) while durable set_price
// writes run keeps the writes' p99 within 2x of the same load without a backup, and takes at most 2x the time
// `wo verify` takes on the same log.
// The log: products made by the real server's format writer (bench/lib/row-writer.ts), then set_price events
// appended directly (bench/lib/log-writer.ts). `wo verify` runs on it stopped; then the server starts on it, a
// closed-loop set_price load runs, and `wo backup` is taken in the middle of it. The writes' latencies are split
// by when they were sent: before the backup (the baseline, after a warm-up) and during the server's copy (the
// window the server reports, ending when `wo backup` got its answer).
import * as fs from 'node:fs';
import { join } from 'node:path';
import { writeProducts } from '../lib/row-writer.ts';
import { appendSetPriceEvents } from '../lib/log-writer.ts';
import { runLoad } from '../lib/load.ts';
import { freshDataDir, isRow, restSetPrice, startWo, woVerify } from '../lib/wo.ts';
import { runWo } from '../../testkit/spawn.ts';
import type { BenchContext } from './context.ts';

export interface BackupOptions {
  events: number;
  products: number;
  concurrency: number;
  /** load before the backup: the first warmMs are left out, the rest is the baseline */
  warmMs: number;
  baselineMs: number;
}

export interface BackupResult {
  events: number;
  /** as `wo verify` reports it, and its process's wall time */
  verifyMs: number;
  verifyWallMs: number;
  /** the server's copy as it reports it, and `wo backup`'s wall time */
  backupMs: number;
  backupWallMs: number;
  backupSeq: number;
  /** how long the server held its writes while it pinned the files */
  heldMs: number;
  backupVerifyOk: boolean;
  baseline: { calls: number; p50Ms: number; p99Ms: number };
  during: { calls: number; p50Ms: number; p99Ms: number };
  /** sent while the `wo backup` process ran (its start included: a wider window than the copy) */
  duringCommand: { calls: number; p50Ms: number; p99Ms: number };
  /** during/baseline p99, and backup/verify time (both budgets: <= 2) */
  p99Ratio: number;
  timeRatio: number;
  errors: number;
}

const VERIFIED = /verified (\d+) events and (\d+) rows in (\d+) ms/;
const BACKED_UP = /backed up seq (\d+) .* in (\d+) ms, .*writes held (\d+) ms/;

const summary = (latencies: number[]) => {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { calls: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99) };
};

export async function runBackup(ctx: BenchContext, opts: BackupOptions): Promise<BackupResult> {
  const dir = freshDataDir(ctx.dataRoot, 'backup');
  ctx.track(dir);
  ctx.phase(`backup: building a ${opts.events}-event log`);
  await writeProducts(dir, opts.products, (i) => ({ name: `p${i}`, price: i, currency: 'USD' }));
  await appendSetPriceEvents(dir, opts.events - opts.products);

  ctx.phase(`backup: wo verify on ${opts.events} events`);
  const ver = await woVerify(dir);
  const verified = VERIFIED.exec(ver.stdout);
  if (ver.code !== 0 || !verified) ctx.warn(`backup: wo verify did not say OK: ${(ver.stdout + ver.stderr).trim().slice(0, 300)}`);

  const destRoot = freshDataDir(ctx.dataRoot, 'backup-dest');
  ctx.track(destRoot);
  const dest = join(destRoot, 'copy');
  const server = await startWo({ dir, readyTimeoutMs: 180_000 });
  const sent: Array<{ at: number; ms: number }> = [];
  let stop = false;
  let errors = 0;
  let backup: { stdout: string; stderr: string; code: number | null; endAt: number; wallMs: number } | undefined;
  try {
    ctx.phase(`backup: set_price load (${opts.concurrency} in flight), then wo backup in the middle of it`);
    const loadStart = performance.now();
    const load = (async () => {
      for (let round = 0; !stop; round++) {
        const r = await runLoad({
          url: server.url,
          concurrency: opts.concurrency,
          durationMs: 500,
          makeRequest: (i) => restSetPrice(1 + ((i * 7919 + round) % opts.products), 1 + (i % 997)),
          check: (status, body) => isRow(status, body, 200),
          onResponse: (_i, status, _body, sentAt, receivedAt) => {
            if (status === 200) sent.push({ at: sentAt, ms: receivedAt - sentAt });
          },
        });
        errors += r.errors;
      }
    })();
    await new Promise((r) => setTimeout(r, opts.warmMs + opts.baselineMs));
    const t0 = performance.now();
    const result = await runWo(['backup', dir, dest], { timeoutMs: 10 * 60_000 });
    backup = { ...result, endAt: performance.now(), wallMs: performance.now() - t0 };
    // A little load after it, so the window's last writes are answered.
    await new Promise((r) => setTimeout(r, 300));
    stop = true;
    await load;
    const taken = BACKED_UP.exec(backup.stdout);
    if (backup.code !== 0 || !taken) throw new Error(`wo backup failed: ${(backup.stdout + backup.stderr).trim().slice(0, 300)}`);
    const backupMs = Number(taken[2]);
    const windowStart = backup.endAt - backupMs;
    const baseline = summary(sent.filter((s) => s.at >= loadStart + opts.warmMs && s.at < t0).map((s) => s.ms));
    const during = summary(sent.filter((s) => s.at >= windowStart && s.at <= backup!.endAt).map((s) => s.ms));
    const duringCommand = summary(sent.filter((s) => s.at >= t0 && s.at <= backup!.endAt).map((s) => s.ms));
    await server.stop();
    ctx.phase('backup: wo verify on the backup');
    const check = await woVerify(dest);
    const verifyMs = verified ? Number(verified[3]) : Number.NaN;
    return {
      events: opts.events,
      verifyMs,
      verifyWallMs: ver.wallMs,
      backupMs,
      backupWallMs: backup.wallMs,
      backupSeq: Number(taken[1]),
      heldMs: Number(taken[3]),
      backupVerifyOk: check.code === 0,
      baseline,
      during,
      duringCommand,
      p99Ratio: during.p99Ms / baseline.p99Ms,
      timeRatio: backupMs / verifyMs,
      errors,
    };
  } finally {
    stop = true;
    await server.stop();
    fs.rmSync(destRoot, { recursive: true, force: true });
  }
}

export function renderBackup(r: BackupResult): string {
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : 'n/a');
  return [
    '## Online backup',
    '',
    `\`wo backup\` of a ${r.events}-event log while durable set_price writes run; budgets: writes' p99 <= 2x, time <= 2x \`wo verify\`.`,
    '',
    '| | value |',
    '|---|---|',
    `| wo verify (as reported / wall) | ${r.verifyMs} ms / ${f(r.verifyWallMs)} ms |`,
    `| wo backup (server's copy / wall) | ${r.backupMs} ms / ${f(r.backupWallMs)} ms, seq ${r.backupSeq}, writes held ${r.heldMs} ms, verifies: ${r.backupVerifyOk ? 'yes' : 'NO'} |`,
    `| time ratio backup/verify | ${f(r.timeRatio)}x ${r.timeRatio <= 2 ? '(within 2x)' : '(OVER 2x)'} |`,
    `| set_price p50 / p99 without backup | ${f(r.baseline.p50Ms)} / ${f(r.baseline.p99Ms)} ms (${r.baseline.calls} calls) |`,
    `| set_price p50 / p99 during the copy | ${f(r.during.p50Ms)} / ${f(r.during.p99Ms)} ms (${r.during.calls} calls) |`,
    `| set_price p50 / p99 while \`wo backup\` ran (its start included) | ${f(r.duringCommand.p50Ms)} / ${f(r.duringCommand.p99Ms)} ms (${r.duringCommand.calls} calls) |`,
    `| p99 ratio (during the copy) | ${f(r.p99Ratio)}x ${r.p99Ratio <= 2 ? '(within 2x)' : '(OVER 2x)'} |`,
    `| failed writes | ${r.errors} |`,
  ].join('\n');
}
