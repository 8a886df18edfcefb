// App commands: the server CPU of one two-entity `lend` (a method on a book and a loan's create,
// written atomically as one command) against one `set_price` (a method on one row), side by side on one server,
// in alternating windows at the same concurrency. Budget: a lend costs at most 1.5x a set_price.
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, spawnWo } from '../../testkit/spawn.ts';
import { combine, measure, type Measured } from '../lib/measure.ts';
import { warmUntilStable } from '../lib/warmup.ts';
import { freshDataDir } from '../lib/wo.ts';
import type { MeasureOptions } from '../lib/side-by-side.ts';
import type { BenchContext } from './context.ts';

export interface CommandsOptions extends MeasureOptions {
  books: number;
}

export interface CommandsResult {
  lend: { calls: number; errors: number; callsPerSec: number; p99Ms: number; srvCpuUsPerCall: number };
  setPrice: { calls: number; errors: number; callsPerSec: number; p99Ms: number; srvCpuUsPerCall: number };
  /** server CPU per lend / server CPU per set_price */
  ratio: number;
  budget: number;
}

const BUDGET = 1.5;

/** The app both sides of the comparison run (bench/commands-ab.ts runs it too). */
export const LENDING_APP = `import { Schema } from "effect"
import { defineApp, entity, reject } from "writeonce"
export default defineApp({
  name: "lending",
  entities: {
    products: entity({
      fields: { name: Schema.String, price: Schema.Number, currency: Schema.Literal("USD", "EUR") },
      methods: { set_price: { params: { price: Schema.Number }, apply: (_p, { price }) => (price > 0 ? { price } : reject("not_positive", "price must be positive")) } }
    }),
    books: entity({
      fields: { title: Schema.String, available: Schema.Int },
      methods: { check_out: { params: {}, apply: (b) => (b.available === 0 ? reject("no_copies", "no copies available") : { available: b.available - 1 }) } }
    }),
    members: entity({ fields: { name: Schema.String } }),
    loans: entity({ fields: { book: Schema.String, member: Schema.String, status: Schema.Literal("out", "returned") } })
  },
  commands: {
    lend: {
      params: { book: Schema.String, member: Schema.String },
      decide: (ctx, p) => [ctx.invoke("books", p.book, "check_out"), ctx.create("loans", { book: p.book, member: p.member, status: "out" })]
    }
  }
})
`;

/** Writes the lending app into `appDir`, its `writeonce` the checkout at `root`. */
export const writeLendingApp = (appDir: string, root: string): void => {
  mkdirSync(join(appDir, 'node_modules'));
  symlinkSync(root, join(appDir, 'node_modules', 'writeonce'), 'dir');
  symlinkSync(join(root, 'node_modules', 'effect'), join(appDir, 'node_modules', 'effect'), 'dir');
  writeFileSync(join(appDir, 'package.json'), JSON.stringify({ type: 'module' }));
  writeFileSync(join(appDir, 'app.ts'), LENDING_APP);
};

const json = { 'content-type': 'application/json' };
const post = async (url: string, path: string, body: unknown) => {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: json, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
};

/** `books` books with copies to spare, `products` products and one member. */
export const seedLending = async (url: string, books: number, products: number): Promise<void> => {
  for (let i = 0; i < books; i++) await post(url, '/api/books', { title: `b${i}`, available: 1_000_000_000 });
  for (let i = 0; i < products; i++) await post(url, '/api/products', { name: `p${i}`, price: 1, currency: 'USD' });
  await post(url, '/api/members', { name: 'm' });
};

/** The two loads compared: `lend` round the books, `set_price` round the products. */
export const lendingLoads = (url: string, concurrency: number, books: number, products: number) => ({
  lend: {
    url, concurrency,
    makeRequest: (i: number) => ({ method: 'POST' as const, path: '/api/_commands/lend', headers: json, body: JSON.stringify({ book: String(1 + (i % books)), member: '1' }) }),
    check: (s: number, b: string) => s === 200 && b.startsWith('{"command":"lend"'),
  },
  setPrice: {
    url, concurrency,
    makeRequest: (i: number) => ({ method: 'POST' as const, path: `/api/products/${1 + (i % products)}/set_price`, headers: json, body: JSON.stringify({ price: 1 + (i % 500) }) }),
    check: (s: number, b: string) => s === 200 && b.startsWith('{"id":"'),
  },
});

const summary = (m: Measured) => ({
  calls: m.load.calls,
  errors: m.load.errors,
  callsPerSec: m.load.callsPerSec,
  p99Ms: m.load.p99Ms,
  srvCpuUsPerCall: m.srvCpuMsPerCall * 1000,
});

export async function runCommands(ctx: BenchContext, o: CommandsOptions): Promise<CommandsResult> {
  const appDir = freshDataDir(ctx.dataRoot, 'commands-app');
  const dir = freshDataDir(ctx.dataRoot, 'commands');
  ctx.track(appDir);
  ctx.track(dir);
  writeLendingApp(appDir, ROOT);
  const server = await spawnWo(['run', appDir, '--data', dir, '--listen', '127.0.0.1:0'], {
    readyTimeoutMs: 30_000, stopTimeoutMs: 3000, outputLimit: 16_384, env: { WO_LOG_LEVEL: 'Info' },
  });
  try {
    const url = server.loopbackUrl;
    ctx.phase(`commands: seeding ${o.books} books and ${o.products} products`);
    await seedLending(url, o.books, o.products);
    const { lend, setPrice } = lendingLoads(url, o.concurrency, o.books, o.products);
    for (const [name, load] of Object.entries({ lend, setPrice })) {
      ctx.phase(`commands: warming ${name}`);
      const w = await warmUntilStable({ load, pid: server.pid, chunkMs: o.warmChunkMs, maxMs: o.warmMaxMs, minCalls: o.warmMinCalls });
      if (w.errors) ctx.warn(`commands warm-up ${name}: ${w.errors} errors, first: ${w.firstError}`);
    }
    const lends: Measured[] = [];
    const prices: Measured[] = [];
    for (let round = 0; round < o.rounds; round++) {
      ctx.phase(`commands: lend against set_price, round ${round + 1}/${o.rounds}`);
      lends.push(await measure(server, lend, o.windowMs));
      prices.push(await measure(server, setPrice, o.windowMs));
    }
    const l = summary(combine(lends));
    const p = summary(combine(prices));
    const ratio = l.srvCpuUsPerCall / p.srvCpuUsPerCall;
    if (ratio > BUDGET) ctx.warn(`commands: a lend costs ${ratio.toFixed(2)}x a set_price in server CPU (budget ${BUDGET}x)`);
    return { lend: l, setPrice: p, ratio, budget: BUDGET };
  } finally {
    await server.stop();
  }
}

export const renderCommands = (r: CommandsResult): string =>
  `commands: server CPU per lend (2 entities, one atomic command) ${r.lend.srvCpuUsPerCall.toFixed(0)} us, ` +
  `per set_price ${r.setPrice.srvCpuUsPerCall.toFixed(0)} us: ${r.ratio.toFixed(2)}x (budget <= ${r.budget}x); ` +
  `${r.lend.callsPerSec.toFixed(0)} lends/s against ${r.setPrice.callsPerSec.toFixed(0)} set_price/s, p99 ${r.lend.p99Ms.toFixed(1)} / ${r.setPrice.p99Ms.toFixed(1)} ms`;
