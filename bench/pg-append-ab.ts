// The PostgreSQL append alone, old against new: this checkout's src/log/postgres/append.ts and schema.ts
// against OLD_ROOT's, each on a database of its own on one cluster (a primary and two synchronous standbys,
// scripts/pg-cluster.sh), driven in-process with no HTTP: 1,000 products created, then set_price batches (and
// create batches) of BATCH events (default 12,100) on random products, one batch at a time, in alternating rounds
// (ROUNDS, default 4, of N batches, default 150). Prints per event the cluster's CPU (its postgres processes only)
// and this process's CPU (planning the batch and the pg driver), and new/old. Load-insensitive: CPU time, not rates.
//   OLD_ROOT=/tmp/wo-old node --import tsx bench/pg-append-ab.ts
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Effect, ManagedRuntime } from 'effect';
import pg from 'pg';
import { startBenchCluster } from './lib/pg-bench-cluster.ts';
import { repoRoot } from './lib/wo.ts';

const OLD_ROOT = process.env.OLD_ROOT;
if (!OLD_ROOT) throw new Error('set OLD_ROOT to a checkout of the old code');
const ROUNDS = Number(process.env.ROUNDS ?? 4);
const N = Number(process.env.N ?? 150);
const SIZES = (process.env.BATCH ?? '12,100').split(',').map(Number);
const PRODUCTS = 1000;

type Side = { name: string; append: typeof import('../src/log/postgres/append.ts'); conn: typeof import('../src/log/postgres/connection.ts'); schema: typeof import('../src/log/postgres/schema.ts') };
const load = async (name: string, root: string): Promise<Side> => ({
  name,
  append: await import(join(root, 'src/log/postgres/append.ts')),
  conn: await import(join(root, 'src/log/postgres/connection.ts')),
  schema: await import(join(root, 'src/log/postgres/schema.ts')),
});
const sides = [await load('old', OLD_ROOT), await load('new', repoRoot)];

const cluster = startBenchCluster('wo-pg-append-ab-');
const { dir, urlOf, port: base } = cluster;
const pgCpuMs = cluster.cpuMs;
const selfCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

const runtimes: Array<ManagedRuntime.ManagedRuntime<any, any>> = [];
try {
  const admin = new pg.Client({ host: '127.0.0.1', port: base, user: 'postgres', database: 'postgres' });
  await admin.connect();
  for (const s of sides) await admin.query(`create database wo_${s.name}`);
  await admin.end();

  const state = await Promise.all(sides.map(async (s) => {
    const rt = ManagedRuntime.make(s.conn.pgConnectionLayer(urlOf(`wo_${s.name}`)));
    runtimes.push(rt);
    const conn = await rt.runPromise(s.conn.PgConnection as any) as any;
    await rt.runPromise(s.schema.ensureSchema(conn) as any);
    const picture = s.append.makeLogPicture(0, []);
    const versions = new Map<string, number>();
    let lastId = 0;
    let i = 0;
    const append = (entries: any[]) => rt.runPromise(s.append.appendPictured(conn, { entries, counters: new Map() }, picture, 'ab') as any) as Promise<any>;
    const creates = (n: number) => {
      const entries = [];
      for (let k = 0; k < n; k++) {
        const id = String(++lastId);
        const row = { id, version: 1, name: `p${id}`, price: 3, currency: 'USD' };
        entries.push({ event: { seq: 0, at: Date.now(), type: 'products', id, version: 1, schema: 1, kind: 'created', data: { name: row.name, price: 3, currency: 'USD' } }, row, rowJson: JSON.stringify(row) });
        versions.set(id, 1);
      }
      return entries;
    };
    const setPrices = (n: number) => {
      const entries = [];
      for (let k = 0; k < n; k++) {
        const id = String(1 + (Math.imul(i++, 2654435761) >>> 0) % PRODUCTS);
        const version = versions.get(id)! + 1;
        versions.set(id, version);
        const price = 1 + (i % 1000);
        const row = { id, version, name: `p${id}`, price, currency: 'USD' };
        entries.push({ event: { seq: 0, at: Date.now(), type: 'products', id, version, schema: 1, kind: 'invoked', method: 'set_price', params: { price }, data: { price } }, row, rowJson: JSON.stringify(row) });
      }
      return entries;
    };
    await append(creates(PRODUCTS));
    return { s, append, creates, setPrices };
  }));

  console.log(`loadavg before ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  for (const op of ['set_price', 'create'] as const) {
    for (const size of SIZES) {
      const sum = new Map<string, { pg: number; self: number; events: number; ms: number }>();
      for (const st of state) for (let b = 0; b < 20; b++) await st.append(op === 'create' ? st.creates(size) : st.setPrices(size)); // warm
      for (let r = 0; r < ROUNDS; r++) {
        for (const st of r % 2 ? [...state].reverse() : state) {
          const pg0 = pgCpuMs(), self0 = selfCpuMs(), t0 = performance.now();
          for (let b = 0; b < N; b++) {
            const result = await st.append(op === 'create' ? st.creates(size) : st.setPrices(size));
            if (result.result.outcomes.some((o: any) => o._tag !== undefined && o._tag !== 'AppendEntry' && typeof o.event !== 'object')) throw new Error('an entry was not written');
          }
          const t = sum.get(st.s.name) ?? { pg: 0, self: 0, events: 0, ms: 0 };
          t.pg += pgCpuMs() - pg0, t.self += selfCpuMs() - self0, t.events += N * size, t.ms += performance.now() - t0;
          sum.set(st.s.name, t);
        }
      }
      const per = (k: string) => {
        const t = sum.get(k)!;
        return { pg: (t.pg * 1000) / t.events, self: (t.self * 1000) / t.events, batchMs: t.ms / (t.events / size) };
      };
      const o = per('old'), n = per('new');
      for (const [k, v] of [['old', o], ['new', n]] as const) {
        console.log(`${op} batch ${size} ${k}: PostgreSQL ${v.pg.toFixed(1)} µs/event, node ${v.self.toFixed(1)} µs/event, ${v.batchMs.toFixed(2)} ms/batch`);
      }
      console.log(`${op} batch ${size} new/old: PostgreSQL CPU ${(n.pg / o.pg).toFixed(2)}x, node CPU ${(n.self / o.self).toFixed(2)}x, time per batch ${(n.batchMs / o.batchMs).toFixed(2)}x; loadavg ${loadavg()[0].toFixed(2)}`);
    }
  }
} finally {
  for (const rt of runtimes) await rt.dispose().catch(() => undefined);
  cluster.stop();
}
