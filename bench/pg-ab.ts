// Old against new on one PostgreSQL cluster, in one run: a primary and two synchronous standbys
// (scripts/pg-cluster.sh), one `wo run --store` node from this checkout and one from OLD_ROOT, each on a database of
// its own on that cluster, and the plain pg floor (bench/peers/pg-floor.ts) on a third; durable creates and
// set_price (on 1,000 seeded products) at each C in flight (default 32,256), in alternating windows (ROUNDS, default
// 3, of WIN ms, default 3000), the order turned every round. Prints per setup writes/s, wo CPU per write (the node's
// process, all threads, from /proc) and PostgreSQL CPU per write (this cluster's servers and backends only), and the
// ratios new/old and against the floor. KIND=create|set_price limits it to one op.
//   OLD_ROOT=/tmp/wo-old node --import tsx bench/pg-ab.ts
import { loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startBenchCluster } from './lib/pg-bench-cluster.ts';
import { cpuBetween, sampleCpu } from './lib/cpu.ts';
import { runLoad } from './lib/load.ts';
import { isRow, restCreate, restSetPrice, seedProducts, spawnPeer, type SpawnedServer } from './lib/wo.ts';
import { spawnWo } from '../testkit/spawn.ts';

const OLD_ROOT = process.env.OLD_ROOT;
if (!OLD_ROOT) throw new Error('set OLD_ROOT to a checkout of the old code');
const oldSpawn: typeof import('../testkit/spawn.ts') = await import(join(OLD_ROOT, 'testkit/spawn.ts'));
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const WIN = Number(process.env.WIN ?? 3000);
const LEVELS = (process.env.C ?? '32,256').split(',').map(Number);
const KINDS = process.env.KIND ? [process.env.KIND as 'create' | 'set_price'] : (['create', 'set_price'] as const);
const PRODUCTS = 1000;

const cluster = startBenchCluster('wo-pg-ab-');
const { dir, urlOf, port: base } = cluster;
const samplePg = cluster.cpuMs;

const servers: Record<string, SpawnedServer> = {};
try {
  const admin = new pg.Client({ host: '127.0.0.1', port: base, user: 'postgres', database: 'postgres' });
  await admin.connect();
  for (const db of ['wo_old', 'wo_new', 'floor']) await admin.query(`create database ${db}`);
  await admin.end();
  const node = (spawn: typeof spawnWo, db: string) =>
    spawn(['run', 'examples/pricing', '--data', join(dir, db), '--listen', '127.0.0.1:0', '--store', urlOf(db)], { readyTimeoutMs: 60_000, stopTimeoutMs: 10_000, env: { WO_LOG_LEVEL: 'Info' } });
  servers.old = await node(oldSpawn.spawnWo, 'wo_old');
  servers.new = await node(spawnWo, 'wo_new');
  servers.floor = await spawnPeer('bench/peers/pg-floor.ts', { env: { STORE_URL: urlOf('floor') } });
  for (const s of Object.values(servers)) await seedProducts(s.url, PRODUCTS);
  // An experiment on the new side's database alone (e.g. a schema change tried by hand before it is coded).
  if (process.env.NEW_SQL) {
    const c = new pg.Client({ host: '127.0.0.1', port: base, user: 'postgres', database: 'wo_new' });
    await c.connect();
    for (const stmt of process.env.NEW_SQL.split(';').filter((x) => x.trim())) await c.query(stmt);
    await c.end();
  }

  const window = async (s: SpawnedServer, kind: 'create' | 'set_price', c: number, ms: number) => {
    const make = kind === 'create' ? restCreate : (i: number) => restSetPrice(1 + (Math.imul(i, 2654435761) >>> 0) % PRODUCTS, 1 + (i % 1000));
    const wo0 = sampleCpu(s.pid);
    const pg0 = samplePg();
    const r = await runLoad({ url: s.url, concurrency: c, durationMs: ms, makeRequest: make, check: (status, body) => isRow(status, body, kind === 'create' ? 201 : 200) });
    return { calls: r.calls, errors: r.errors, ms: r.durationMs, wo: cpuBetween(wo0, sampleCpu(s.pid)).cpuMs, pg: samplePg() - pg0 };
  };
  console.log(`loadavg before ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  for (const kind of KINDS) {
    for (const c of LEVELS) {
      for (const s of Object.values(servers)) await window(s, kind, c, 1500); // warm
      const sum: Record<string, { calls: number; errors: number; ms: number; wo: number; pg: number }> = {};
      for (let r = 0; r < ROUNDS; r++) {
        const order = r % 2 ? ['new', 'floor', 'old'] : ['old', 'floor', 'new'];
        for (const k of order) {
          const w = await window(servers[k], kind, c, WIN);
          const t = (sum[k] ??= { calls: 0, errors: 0, ms: 0, wo: 0, pg: 0 });
          t.calls += w.calls, t.errors += w.errors, t.ms += w.ms, t.wo += w.wo, t.pg += w.pg;
        }
      }
      const f = (k: string) => {
        const t = sum[k];
        return { rate: t.calls / (t.ms / 1000), wo: (t.wo * 1000) / t.calls, pg: (t.pg * 1000) / t.calls, errors: t.errors };
      };
      for (const k of ['old', 'new', 'floor']) {
        const v = f(k);
        console.log(`${kind} C=${c} ${k.padEnd(5)} ${v.rate.toFixed(0).padStart(6)}/s  wo CPU ${v.wo.toFixed(0).padStart(4)} µs/write  PG CPU ${v.pg.toFixed(0).padStart(4)} µs/write  errors ${v.errors}`);
      }
      const o = f('old'), n = f('new'), fl = f('floor');
      console.log(`${kind} C=${c} new/old: wo CPU ${(n.wo / o.wo).toFixed(2)}x, PG CPU ${(n.pg / o.pg).toFixed(2)}x, rate ${(n.rate / o.rate).toFixed(2)}x; ` +
        `rate/floor old ${(o.rate / fl.rate).toFixed(2)}x new ${(n.rate / fl.rate).toFixed(2)}x; loadavg ${loadavg()[0].toFixed(2)}`);
    }
  }
  // Where the writes went in each database (HOT updates, dead rows), for a look at the DB side.
  if (process.env.STATS) {
    for (const db of ['wo_old', 'wo_new', 'floor']) {
      const c = new pg.Client({ host: '127.0.0.1', port: base, user: 'postgres', database: db });
      await c.connect();
      const r = await c.query(`select relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_dead_tup, pg_relation_size(relid) as bytes from pg_stat_user_tables order by relname`);
      const i = await c.query(`select indexrelname, pg_relation_size(indexrelid) as bytes from pg_stat_user_indexes order by indexrelname`);
      console.log(db, JSON.stringify(r.rows), JSON.stringify(i.rows));
      await c.end();
    }
  }
} finally {
  await Promise.allSettled(Object.values(servers).map((s) => s.stop()));
  cluster.stop();
}
