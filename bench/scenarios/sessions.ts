// Memory per idle legacy session: a fresh server (WO_MAX_SESSIONS=20000) is warmed with a few hundred
// sessions (left open), its RSS is sampled, `count` sessions are opened (initialize +
// notifications/initialized, 64 at a time) and left idle, and RSS is sampled again after a pause.
// RSS includes whatever the V8 heap has not collected yet and LevelDB's memtable (sessions are persisted),
// so the figure is an upper bound on what one idle session holds.
import { rssBytes } from '../lib/cpu.ts';
import { assertAlive } from '../lib/measure.ts';
import { openLegacySession, type LegacySession } from '../../testkit/mcp.ts';
import { freshDataDir, startWo } from '../lib/wo.ts';
import type { SpawnedServer } from '../lib/wo.ts';
import type { BenchContext } from './context.ts';

export interface SessionsOptions {
  count: number;
  warm: number;
  /** pause before each RSS sample */
  settleMs: number;
}

export interface SessionsResult {
  sessions: number;
  failed: number;
  openMs: number;
  sessionsPerSec: number;
  rssBeforeMb: number;
  rssAfterMb: number;
  /** (after - before) / sessions */
  bytesPerSession: number;
  firstError?: string;
}

/** initialize calls in flight: LevelDB merges concurrent synced writes, so this is much faster than 1 */
const PARALLEL = 64;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function openMany(url: string, n: number, parallel: number): Promise<{ sessions: LegacySession[]; failed: number; firstError?: string }> {
  const sessions: LegacySession[] = [];
  let failed = 0;
  let firstError: string | undefined;
  let next = 0;
  const deadline = performance.now() + 120_000;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < n && performance.now() < deadline && failed < 100) {
        next++;
        try {
          sessions.push(await openLegacySession(url));
        } catch (err) {
          failed++;
          firstError ??= String((err as Error).message ?? err);
        }
      }
    }),
  );
  return { sessions, failed, ...(firstError ? { firstError } : {}) };
}

/** The env a server needs for this scenario (when one is passed in instead of started here). */
export const SESSIONS_ENV = { WO_MAX_SESSIONS: '20000' };

export async function runSessions(ctx: BenchContext, opts: SessionsOptions, shared?: SpawnedServer): Promise<SessionsResult> {
  let server = shared;
  if (!server) {
    const dir = freshDataDir(ctx.dataRoot, 'sessions');
    ctx.track(dir);
    server = await startWo({ dir, env: SESSIONS_ENV });
  }
  try {
    // The warm-up sessions stay open: they are in the baseline, and only the next `count` are measured.
    ctx.phase(`sessions: warming with ${opts.warm} sessions`);
    await openMany(server.url, opts.warm, PARALLEL);
    await sleep(opts.settleMs / 2);
    const before = rssBytes(server.pid);
    ctx.phase(`sessions: opening ${opts.count} idle legacy sessions`);
    const t0 = performance.now();
    const opened = await openMany(server.url, opts.count, PARALLEL);
    const openMs = performance.now() - t0;
    assertAlive(server, 'opening sessions');
    await sleep(opts.settleMs);
    const after = rssBytes(server.pid);
    if (opened.failed) ctx.warn(`sessions: ${opened.failed} initialize calls failed, first: ${opened.firstError}`);
    const n = opened.sessions.length;
    return {
      sessions: n,
      failed: opened.failed,
      openMs,
      sessionsPerSec: n / (openMs / 1000),
      rssBeforeMb: before / 2 ** 20,
      rssAfterMb: after / 2 ** 20,
      bytesPerSession: n ? (after - before) / n : Number.NaN,
      ...(opened.firstError ? { firstError: opened.firstError } : {}),
    };
  } finally {
    if (!shared) await server.stop();
  }
}
