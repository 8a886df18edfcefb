// The readers budget's last phase (bench/scenarios/readers.ts: GET p99 while 50 readers catch up on /api/_events,
// against idle), old against new in one run: a server from each checkout given, in turn, on one data dir seeded
// once (50 products, WRITES set_prices), for ROUNDS rounds. Per round and checkout: the p99 ratio, and the
// server's CPU time for the whole catch-up (steadier than a p99 on shared cores).
//   git worktree add --detach /tmp/wo-old main && ln -s "$PWD/node_modules" /tmp/wo-old/node_modules
//   node --conditions=writeonce-source --import tsx bench/readers-alternated.ts /tmp/wo-old .
// Env: ROUNDS (5), READERS (50), GETS (150), WRITES (3000); FLOOR=1 adds the floor (bench/peers/catch-up-floor.ts: the
// same policy hand-written on node:http, serving the events from memory) to each round. Writes nothing but a temp
// data dir, removed at the end. NODE_ARGS (e.g. '--cpu-prof --cpu-prof-dir=/tmp/p') goes to every server.
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Pool } from 'undici';
import { getsWhileReadersCatchUp, READERS_ENV } from './scenarios/readers.ts';
import { restSetPrice, seedProducts, spawnPeer, startWo, type SpawnedServer } from './lib/wo.ts';

const FLOOR = 'floor (bench/peers/catch-up-floor.ts)';
const checkouts = process.argv.slice(2).map((c) => resolve(c));
if (checkouts.length === 0) throw new Error('usage: readers-alternated.ts CHECKOUT... (each with node_modules)');
if (process.env.FLOOR === '1') checkouts.push(FLOOR);
const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const [rounds, readers, gets, writes] = [env('ROUNDS', 5), env('READERS', 50), env('GETS', 150), env('WRITES', 3000)];
const PRODUCTS = 50;
const phase = () => undefined;
// Each checkout's own server: its bench/lib/wo.ts starts its bin/wo.mjs.
const nodeArgs = process.env.NODE_ARGS?.split(' ').filter(Boolean) ?? [];
const starters: Array<(opts: { dir: string; env: Record<string, string>; nodeArgs: string[] }) => Promise<SpawnedServer>> = await Promise.all(checkouts.map(async (c) =>
  c === FLOOR
    ? () => spawnPeer('bench/peers/catch-up-floor.ts', { env: { EVENTS: String(writes + PRODUCTS) }, nodeArgs })
    : ((await import(join(c, 'bench/lib/wo.ts'))) as { startWo: typeof startWo }).startWo));

const dir = mkdtempSync(join(tmpdir(), 'wo-readers-alternated-'));
try {
  const seeding = await startWo({ dir });
  const pool = new Pool(seeding.url, { connections: 16 });
  await seedProducts(seeding.url, PRODUCTS);
  let next = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (next < writes) {
      const i = next++;
      const req = restSetPrice(1 + (i % PRODUCTS), 1 + (i % 1000));
      const res = await pool.request({ method: req.method, path: req.path, headers: req.headers, body: req.body });
      await res.body.dump();
      if (res.statusCode !== 200) throw new Error(`set_price: HTTP ${res.statusCode}`);
    }
  }));
  await pool.close();
  await seeding.stop();

  const results = checkouts.map(() => ({ ratios: [] as number[], cpus: [] as number[], idle: [] as number[], busy: [] as number[] }));
  const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
  console.log(`load average before: ${load()}`);
  for (let round = 1; round <= rounds; round++) {
    for (const [k, checkout] of checkouts.entries()) {
      const server = await starters[k]({ dir, env: READERS_ENV, nodeArgs });
      const gets1 = new Pool(server.url, { connections: 1 });
      try {
        const r = await getsWhileReadersCatchUp({ phase }, server.url, gets1, { readers, gets, events: writes + PRODUCTS, serverPid: server.pid });
        if (!r.caughtUp) throw new Error(`${checkout}: the readers did not catch up`);
        results[k].ratios.push(r.busyP99Ms / r.idleP99Ms);
        results[k].cpus.push(r.serverCpuMs ?? Number.NaN);
        results[k].idle.push(r.idleP99Ms);
        results[k].busy.push(r.busyP99Ms);
        console.log(`round ${round} ${checkout}: GET p99 idle ${r.idleP99Ms.toFixed(2)} ms, while catching up ${r.busyP99Ms.toFixed(2)} ms (${r.busyGets} GETs): ${(r.busyP99Ms / r.idleP99Ms).toFixed(2)}x; server CPU for the catch-up ${r.serverCpuMs} ms`);
      } finally {
        await gets1.close();
        await server.stop();
      }
    }
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [k, checkout] of checkouts.entries()) {
    console.log(`${checkout}: p99 ratios ${results[k].ratios.map((x) => x.toFixed(2)).join(' ')} (median ${median(results[k].ratios).toFixed(2)}x); GET p99 median idle ${median(results[k].idle).toFixed(2)} ms, while catching up ${median(results[k].busy).toFixed(2)} ms; catch-up CPU ${results[k].cpus.join(' ')} ms (median ${median(results[k].cpus)})`);
  }
  console.log(`load average after: ${load()}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
