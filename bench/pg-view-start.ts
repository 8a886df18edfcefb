// Node start on a PostgreSQL store of many events (issue 22 item 6): how long a node takes from its runtime's build to
// serving HTTP, with its views recovered. Run it twice, with the code before and after a change, on the same store:
//
//   npx tsx bench/pg-view-start.ts --events 1000000          starts a cluster (scripts/pg-cluster.sh), writes the
//                                                             events, measures, and leaves the cluster running
//                                                             (run it first with the older code: a newer store
//                                                             format is refused by an older release)
//   npx tsx bench/pg-view-start.ts --store <url printed>      measures on that store only
//   bash scripts/pg-cluster.sh stop <dir printed>             when done
//
// The events: 4 products created, then set_price events round-robin over them, written through
// the store's own append (src/log/postgres/append.ts) in batches. Each start is measured --starts times (default 3),
// the node stopped in between (on a release that stores view snapshots, at shutdown), once every view is served.
//
// Measured Dec 3 on the shared 2-core machine, 1,000,000 events: before (views folded from the whole log at start)
// 127.5 s and 78.9 s; after (views loaded from the snapshot, 0 tail events) 24.8 s and 29.2 s: 0.31-0.37x. What is
// left is the rows, still folded from the whole log at start.
import { Effect, Layer, ManagedRuntime, Schema } from 'effect';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineApp, entity, view } from '../src/domain/catalog.ts';
import type { AppendEntry } from '../src/log/event-log.ts';
import { appendBatch } from '../src/log/postgres/append.ts';
import { pgConnectionLayer, PgConnection } from '../src/log/postgres/connection.ts';
import { ensureSchema } from '../src/log/postgres/schema.ts';
import { loadSettings } from '../src/config.ts';
import { HttpServer } from '../src/http/server.ts';
import { Views } from '../src/projections/views.ts';
import { writeOnceLayer } from '../src/runtime.ts';

/** The pricing sample's shape (examples/pricing), declared here so that this runs under tsx from any checkout. */
const pricing = defineApp({
  name: 'pricing',
  entities: {
    products: entity({
      fields: { name: Schema.String, price: Schema.Number, currency: Schema.Literal('USD', 'EUR') },
      methods: { set_price: { params: { price: Schema.Number }, apply: (_row, { price }) => ({ price }) } }
    })
  },
  views: {
    products_by_currency: view({
      schema: Schema.Struct({ USD: Schema.Int, EUR: Schema.Int }),
      initial: { USD: 0, EUR: 0 },
      on: { products: ['created', 'updated', 'deleted'] },
      evolve: (counts, { before, after }) => {
        const next = { ...counts };
        if (before !== null) next[before.currency as 'USD' | 'EUR'] -= 1;
        if (after !== null) next[after.currency as 'USD' | 'EUR'] += 1;
        return next;
      }
    })
  }
});
const tempDir = (prefix: string) => mkdtempSync(join(tmpdir(), prefix));

const option = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : process.argv[i + 1];
};
const events = Number(option('events') ?? 1_000_000);
const starts = Number(option('starts') ?? 3);
const BATCH = 5_000;

const startNode = async (store: string) => {
  const settings = await Effect.runPromise(loadSettings({ dataDir: tempDir('wo-pg-start-') }, { host: '127.0.0.1', port: 0, store }));
  const began = performance.now();
  const runtime = ManagedRuntime.make(writeOnceLayer(pricing, settings, { logger: false, signals: false }));
  const { url } = await runtime.runPromise(HttpServer);
  const ms = performance.now() - began;
  const views = runtime.runSync(Effect.map(Views, (v) => v.recovered));
  /** Waits until no view is being folded again in the background (a release that folds at start has none); ms since the build. */
  const allServed = async () => {
    while (runtime.runSync(Effect.map(Views, (v) => v.all().some((s) => (s as { refolding?: string }).refolding !== undefined)))) {
      await new Promise((r) => setTimeout(r, 50));
    }
    return performance.now() - began;
  };
  return { url, ms, views, allServed, stop: () => runtime.dispose() };
};

let store = option('store');
if (store === undefined) {
  const pgDir = tempDir('wo-pg-start-cluster-');
  const base = 20_000 + Math.floor(Math.random() * 12_000);
  store = execFileSync('bash', [join(import.meta.dirname, '../scripts/pg-cluster.sh'), 'start', pgDir, String(base)], { encoding: 'utf8' }).trim().split('\n').pop()!;
  console.log(`cluster: ${pgDir} (stop it with: bash scripts/pg-cluster.sh stop ${pgDir})`);
  const products: Array<Record<string, unknown>> = [];
  for (let i = 0; i < 4; i++) products.push({ id: String(i + 1), version: 1, name: `p${i}`, price: 1, currency: i % 2 === 0 ? 'USD' : 'EUR' });
  const creates: Array<AppendEntry> = products.map((row, i) => ({
    event: { seq: i + 1, at: Date.now(), type: 'products', id: String(row.id), version: 1, schema: 1, kind: 'created', data: { name: row.name, price: row.price, currency: row.currency } },
    row: { ...row } as AppendEntry['row']
  }));
  const began = performance.now();
  const runtime = ManagedRuntime.make(pgConnectionLayer(store) as Layer.Layer<PgConnection, unknown>);
  await runtime.runPromise(Effect.flatMap(PgConnection, (conn) =>
    Effect.zipRight(ensureSchema(conn), appendBatch(conn, { entries: creates, counters: new Map([['products', 4]]) }))));
  let seq = 4;
  for (let done = 0; done < events; done += BATCH) {
    const entries: Array<AppendEntry> = [];
    for (let j = 0; j < Math.min(BATCH, events - done); j++) {
      const row = products[seq % products.length];
      const price = 1 + (seq % 997);
      const version = (row.version as number) + 1;
      Object.assign(row, { price, version });
      entries.push({
        event: { seq: ++seq, at: Date.now(), type: 'products', id: String(row.id), version, schema: 1, kind: 'invoked', method: 'set_price', params: { price }, data: { price } },
        row: { ...row } as AppendEntry['row']
      });
    }
    await runtime.runPromise(Effect.flatMap(PgConnection, (conn) => appendBatch(conn, { entries, counters: new Map() })));
  }
  await runtime.dispose();
  console.log(`wrote ${events} set_price events in ${((performance.now() - began) / 1000).toFixed(1)} s`);
}
console.log(`store: ${store}`);
for (let i = 1; i <= starts; i++) {
  const node = await startNode(store);
  const served = await node.allServed();
  console.log(`start ${i}: ${(node.ms / 1000).toFixed(2)} s to serving, ${(served / 1000).toFixed(2)} s to every view served; views ${JSON.stringify(node.views)}`);
  await node.stop();
}
