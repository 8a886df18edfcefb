// The bad-bodies budget (bench/scenarios/amplify.ts: GET p99 while clients send 3.4 MB bodies of unknown keys /
// idle), old against new in one run: a server from each checkout given, in turn, each on a fresh data dir with
// one product, for ROUNDS rounds; FLOOR=1 adds the floor (bench/peers/bad-body-floor.ts) to each round, FLOOR=2 also the floor that only reads the bytes. Per round
// and server: the p99 ratio, the time a bad body takes and the server's CPU per bad body.
//   node --conditions=writeonce-source --import tsx bench/amplify-alternated.ts /work/main .
// Env: ROUNDS (3), SENDERS (4), KEYS (200000), GETS (150). Writes nothing but temp data dirs, removed at the end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { measureAmplify, type AmplifyMeasure } from './scenarios/amplify.ts';
import { seedProducts, spawnPeer, startWo, type SpawnedServer } from './lib/wo.ts';

const FLOOR = 'floor (bench/peers/bad-body-floor.ts)';
const checkouts = process.argv.slice(2).map((c) => resolve(c));
if (checkouts.length === 0) throw new Error('usage: amplify-alternated.ts CHECKOUT... (each with node_modules)');
const DISCARD = 'floor, DISCARD=1 (reads the bytes only)';
if (process.env.FLOOR === '1' || process.env.FLOOR === '2') checkouts.push(FLOOR);
if (process.env.FLOOR === '2') checkouts.push(DISCARD);
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const opts = { senders: env('SENDERS', 4), unknownKeys: env('KEYS', 200_000), gets: env('GETS', 150) };
const rounds = env('ROUNDS', 3);
const ctx = { phase: () => undefined, warn: (m: string) => console.warn(m) };
const starters: Array<(dir: string) => Promise<SpawnedServer>> = await Promise.all(checkouts.map(async (c) => {
  if (c === FLOOR) return () => spawnPeer('bench/peers/bad-body-floor.ts');
  if (c === DISCARD) return () => spawnPeer('bench/peers/bad-body-floor.ts', { env: { DISCARD: '1' } });
  const start = ((await import(join(c, 'bench/lib/wo.ts'))) as { startWo: typeof startWo }).startWo;
  return async (dir: string) => {
    const server = await start({ dir, env: {}, readyTimeoutMs: 60_000 });
    await seedProducts(server.url, 1);
    return server;
  };
}));

const root = mkdtempSync(join(tmpdir(), 'wo-amplify-alternated-'));
const results = checkouts.map(() => [] as AmplifyMeasure[]);
try {
  for (let round = 1; round <= rounds; round++) {
    for (const [k, checkout] of checkouts.entries()) {
      const server = await starters[k](mkdtempSync(join(root, 'r-')));
      try {
        const r = await measureAmplify(ctx, server.url, opts, server.pid);
        results[k].push(r);
        console.log(`round ${round} ${checkout}: GET p99 idle ${r.getP99MsIdle.toFixed(2)} ms, with bad bodies ${r.getP99MsWithBadBodies.toFixed(2)} ms ` +
          `(${r.getsWithBadBodies} GETs): ${(r.getP99MsWithBadBodies / r.getP99MsIdle).toFixed(2)}x; ${r.badBodiesAnswered} bad bodies, ` +
          `${r.badBodyMsMean.toFixed(1)} ms each, server CPU ${r.serverCpuMsPerBadBody?.toFixed(1)} ms each`);
      } finally {
        await server.stop();
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [k, checkout] of checkouts.entries()) {
    const rs = results[k];
    console.log(`${checkout}: p99 ratios ${rs.map((r) => (r.getP99MsWithBadBodies / r.getP99MsIdle).toFixed(2)).join(' ')} ` +
      `(median ${median(rs.map((r) => r.getP99MsWithBadBodies / r.getP99MsIdle)).toFixed(2)}x); ` +
      `busy p99 median ${median(rs.map((r) => r.getP99MsWithBadBodies)).toFixed(2)} ms; ` +
      `CPU per bad body median ${median(rs.map((r) => r.serverCpuMsPerBadBody ?? Number.NaN)).toFixed(1)} ms`);
  }
} finally {
  rmSync(root, { recursive: true, force: true });
}
