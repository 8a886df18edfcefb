// Where a durable REST create's CPU goes against a set_price's, stage by stage, in one process without I/O: the body
// parse (http/edge/json-body.ts), the decode into an intent (domain/decide/intent.ts), the writer's decision of a
// batch (commands/decide-batch.ts), the log's records (the event and row JSON, sealed: log/record.ts), the views'
// fold of the batch (projections/views/views.ts, `prepare` then `discard`), and the row cache's insert (a created
// row: a new key) or replace (a set_price: a key it holds). Batches of B (default 14, the pricing create's mean batch
// at 32 in flight: wo_batch_events), stages alternated round by round (R, default 9, of N, default 2000, batches).
// Prints CPU µs per call, medians, and create - set_price per stage: what a create costs beyond a set_price in each.
//   node --conditions=writeonce-source --import tsx bench/write-stages.ts
import { Effect, Either, Layer, Logger, LogLevel, ManagedRuntime, Schema } from 'effect';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { decideBatch } from '../src/commands/decide-batch.ts';
import type { Queued } from '../src/commands/submission.ts';
import { loadSettings } from '../src/support/config.ts';
import { Catalog } from '../src/domain/app-catalog.ts';
import { defineApp, entity, reject, view } from '../src/domain/catalog.ts';
import type { CompiledType } from '../src/domain/compile.ts';
import { toIntent } from '../src/domain/decide/intent.ts';
import { parseInputBody } from '../src/http/edge/json-body.ts';
import { rowPayload } from '../src/log/classic-level/level-records.ts';
import * as K from '../src/log/classic-level/log-keys.ts';
import { seal } from '../src/log/record.ts';
import { RowCache } from '../src/projections/rows/row-cache.ts';
import { Rows } from '../src/projections/rows/rows.ts';
import { Views } from '../src/projections/views/views.ts';
import { coreLayer } from '../src/runtime/runtime.ts';
import { repoRoot } from './lib/wo.ts';

const B = Number(process.env.B ?? 14);
const N = Number(process.env.N ?? 2000);
const R = Number(process.env.R ?? 9);

// The pricing example (examples/pricing/app.ts), its view included.
const Price = Schema.Number.pipe(Schema.positive({ message: () => 'price must be a positive number' }));
const app = defineApp({
  name: 'pricing',
  entities: {
    products: entity({
      fields: { name: Schema.String.pipe(Schema.minLength(1)), price: Price, currency: Schema.Literal('USD', 'EUR') },
      methods: {
        set_price: {
          params: { price: Schema.Number },
          apply: (_row, { price }) => (price > 0 ? { price } : reject('not_positive', 'price must be a positive number')),
        },
      },
      rest: ['list', 'get', 'create', 'set_price'],
    }),
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
      },
    }),
  },
});

const dataDir = mkdtempSync(join(repoRoot, '.data', 'bench-write-stages-'));
const settings = await Effect.runPromise(loadSettings({ dataDir }));
const runtime = ManagedRuntime.make(coreLayer(app, settings).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))));
try {
  const [catalog, rows, views] = await runtime.runPromise(Effect.all([Catalog, Rows, Views]));
  const type = catalog.types.get('products')!;
  const setPrice = type.methods.get('set_price')!;
  // The 100 products set_price works on, as the rows hold them (decided against; never written).
  const cache = new RowCache(settings.rowCache);
  for (let i = 1; i <= 100; i++) cache.set(K.rowKey('products', String(i)), { id: String(i), version: 1, name: `p${i}`, price: 1, currency: 'USD' });
  const held = { ...rows, get: (t: string, id: string) => (t === 'products' ? cache.get(K.rowKey(t, id)) : undefined) };

  const createBody = (i: number) => Buffer.from(JSON.stringify({ name: `p${i}`, price: 1 + (i % 1000), currency: 'USD' }));
  const setPriceBody = (i: number) => Buffer.from(JSON.stringify({ price: 1 + (i % 1000) }));
  const bodies = { create: Array.from({ length: 1000 }, (_, i) => createBody(i)), set_price: Array.from({ length: 1000 }, (_, i) => setPriceBody(i)) };
  const inputs = { create: bodies.create.map((b) => JSON.parse(b.toString())), set_price: bodies.set_price.map((b) => JSON.parse(b.toString())) };
  const command = {
    create: (i: number) => ({ _tag: 'Create' as const, type: 'products', input: inputs.create[i % 1000] }),
    set_price: (i: number) => ({ _tag: 'Invoke' as const, type: 'products', id: String(1 + (i % 100)), method: 'set_price', input: inputs.set_price[i % 1000] }),
  };
  const intents = {
    create: Array.from({ length: 1000 }, (_, i) => Either.getOrThrow(toIntent(type, command.create(i)))),
    set_price: Array.from({ length: 1000 }, (_, i) => Either.getOrThrow(toIntent(type, command.set_price(i)))),
  };
  const queued = (kind: 'create' | 'set_price', k: number): Array<Queued> =>
    Array.from({ length: B }, (_, i) => ({
      type: type as CompiledType, id: kind === 'create' ? undefined : String(1 + ((k * B + i) % 100)), intent: intents[kind][(k * B + i) % 1000],
      expectedVersion: undefined, onStage: undefined, idempotency: undefined, resume: () => {}, cancelled: false, attempts: 0, recheck: false,
    }) as unknown as Queued);
  const start = { lastSeq: 1000, counters: new Map([['products', 100]]), at: Date.now(), shared: false };
  const decided = { create: decideBatch(queued('create', 0), held as never, start).changes, set_price: decideBatch(queued('set_price', 0), held as never, start).changes };
  let fresh = 1000;

  type Kind = 'create' | 'set_price';
  const stages: Record<string, (kind: Kind, k: number) => number> = {
    'body parse': (kind, k) => {
      let s = 0;
      const accepts = kind === 'create' ? type.decodeCreate.accepts : setPrice.decodeParams.accepts;
      for (let i = 0; i < B; i++) s += Either.isRight(parseInputBody(bodies[kind][(k * B + i) % 1000], settings.maxJsonDepth, accepts)) ? 1 : 0;
      return s;
    },
    'intent': (kind, k) => {
      let s = 0;
      for (let i = 0; i < B; i++) s += Either.isRight(toIntent(type, command[kind](k * B + i))) ? 1 : 0;
      return s;
    },
    'decide batch': (kind, k) => decideBatch(queued(kind, k), held as never, start).changes.length,
    'log records': (kind) => {
      let s = 0;
      for (const { event, row, rowJson } of decided[kind]) {
        const eventKey = K.eventKey(event.seq);
        s += seal(eventKey, JSON.stringify(event)).length;
        const rowKey = K.rowKey(event.type, event.id);
        s += seal(rowKey, rowPayload(event.schema ?? 1, rowJson ?? JSON.stringify(row))).length;
      }
      return s;
    },
    'views fold': (kind) => {
      const prepared = views.prepare(decided[kind]);
      prepared.discard();
      return prepared.records.length;
    },
    'row cache': (kind, k) => {
      for (let i = 0; i < B; i++) {
        const key = kind === 'create' ? K.rowKey('products', String(++fresh)) : K.rowKey('products', String(1 + ((k * B + i) % 100)));
        cache.set(key, decided[kind][i].row!);
      }
      return B;
    },
  };
  const time = (f: (kind: Kind, k: number) => number, kind: Kind) => {
    const t0 = process.cpuUsage();
    let s = 0;
    for (let k = 0; k < N; k++) s += f(kind, k);
    const d = process.cpuUsage(t0);
    if (s < 0) console.log(s);
    return (d.user + d.system) / (N * B);
  };
  for (const name in stages) for (const kind of ['create', 'set_price'] as const) time(stages[name], kind);
  const res: Record<string, Array<number>> = {};
  for (let r = 0; r < R; r++) {
    for (const name in stages) for (const kind of (r % 2 ? ['set_price', 'create'] : ['create', 'set_price']) as Array<Kind>) (res[`${name} ${kind}`] ??= []).push(time(stages[name], kind));
  }
  const med = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}; CPU µs per call, medians of ${R} rounds of ${N} batches of ${B}`);
  console.log(`${'stage'.padEnd(14)} ${'create'.padStart(7)} ${'set_price'.padStart(9)} ${'difference'.padStart(10)}`);
  let c = 0, p = 0;
  for (const name in stages) {
    const a = med(res[`${name} create`]), b = med(res[`${name} set_price`]);
    c += a;
    p += b;
    console.log(`${name.padEnd(14)} ${a.toFixed(2).padStart(7)} ${b.toFixed(2).padStart(9)} ${(a - b).toFixed(2).padStart(10)}`);
  }
  console.log(`${'all'.padEnd(14)} ${c.toFixed(2).padStart(7)} ${p.toFixed(2).padStart(9)} ${(c - p).toFixed(2).padStart(10)}`);
} finally {
  await runtime.dispose();
  rmSync(dataDir, { recursive: true, force: true });
}
