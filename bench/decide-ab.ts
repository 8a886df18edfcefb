// Old against new on the writer's decision of the `commands` section's loads (bench/scenarios/commands.ts), in one
// process without I/O: decideBatch (src/commands/decide-batch.ts) over batches of 16 `lend`s (the app command: its
// decide run isolated, its two changes decoded and decided) and of 16 `set_price`s, the two checkouts' code
// alternated round by round (R, default 9, rounds of N, default 3000, batches). Both are bundled by esbuild as
// `wo run` serves src/ (bin/built-sources.mjs): through tsx, every closure pays a `__name` call and the
// comparison is of those. Prints CPU µs per command, medians, and new/old.
//   OLD_ROOT=/work/main node --import tsx bench/decide-ab.ts
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './lib/wo.ts';

const oldRoot = process.env.OLD_ROOT?.replace(/\/$/, '');
if (!oldRoot) throw new Error('set OLD_ROOT to a checkout of the old code');
const newRoot = repoRoot.replace(/\/$/, '');
const dir = join(repoRoot, '.data', 'bench-decide-ab');
mkdirSync(dir, { recursive: true });

const entry = (old: string, now: string) => `import { Either, Schema } from 'effect';
import * as oldCatalog from '${old}/src/domain/catalog.ts';
import * as oldCompile from '${old}/src/domain/compile.ts';
import * as oldBatch from '${old}/src/commands/decide-batch.ts';
import * as oldIntent from '${old}/src/domain/intent.ts';
import * as oldRows from '${old}/src/projections/rows.ts';
import * as oldTable from '${old}/src/projections/row-table.ts';
import * as newCatalog from '${now}/src/domain/catalog.ts';
import * as newCompile from '${now}/src/domain/compile.ts';
import * as newBatch from '${now}/src/commands/decide-batch.ts';
import * as newIntent from '${now}/src/domain/intent.ts';
import * as newRows from '${now}/src/projections/rows.ts';
import * as newTable from '${now}/src/projections/row-table.ts';
const setup = (cat: any, comp: any, batchMod: any, intentMod: any, rowsMod: any, tableMod: any) => {
  const { defineApp, entity, reject } = cat;
  const app = Either.getOrThrow(comp.compileApp(defineApp({
    name: 'lending',
    entities: {
      products: entity({ fields: { name: Schema.String, price: Schema.Number, currency: Schema.Literal('USD', 'EUR') },
        methods: { set_price: { params: { price: Schema.Number }, apply: (_p: any, { price }: any) => (price > 0 ? { price } : reject('not_positive', 'price must be positive')) } } }),
      books: entity({ fields: { title: Schema.String, available: Schema.Int },
        methods: { check_out: { params: {}, apply: (b: any) => (b.available === 0 ? reject('no_copies', 'no copies available') : { available: b.available - 1 }) } } }),
      members: entity({ fields: { name: Schema.String } }),
      loans: entity({ fields: { book: Schema.String, member: Schema.String, status: Schema.Literal('out', 'returned') } }),
    },
    commands: { lend: { params: { book: Schema.String, member: Schema.String },
      decide: (ctx: any, p: any) => [ctx.invoke('books', p.book, 'check_out'), ctx.create('loans', { book: p.book, member: p.member, status: 'out' })] } },
  } as any))) as any;
  const products = app.types.get('products');
  const tables = new Map<string, any>();
  for (const t of ['products', 'books', 'members', 'loans']) tables.set(t, new tableMod.RowTable());
  for (let i = 1; i <= 100; i++) {
    tables.get('products').set({ id: String(i), version: 1, name: \`p\${i}\`, price: 1, currency: 'USD' });
    tables.get('books').set({ id: String(i), version: 1, title: \`b\${i}\`, available: 1_000_000_000 });
  }
  tables.get('members').set({ id: '1', version: 1, name: 'm' });
  const rows = rowsMod.makeRows(tables, 1, { rows: 1, events: 1, tailEvents: 0, millis: 0 });
  const lend = app.commands.get('lend');
  const start = { lastSeq: 1000, counters: new Map([['products', 100], ['books', 100], ['members', 1], ['loans', 0]]), at: 1000, shared: false };
  const B = 16;
  const intents = Array.from({ length: 500 }, (_, i) => Either.getOrThrow(intentMod.toIntent(products, { _tag: 'Invoke', type: 'products', id: '1', method: 'set_price', input: { price: 1 + i } })));
  const params = Array.from({ length: 100 }, (_, i) => Either.getOrThrow(lend.decodeParams({ book: String(1 + i), member: '1' })));
  const setBatch = (k: number) => Array.from({ length: B }, (_, i) => ({ type: products, id: String(1 + ((k * B + i) % 100)), intent: intents[(k + i) % 500], resume: () => {}, cancelled: false, attempts: 0, recheck: false }));
  const lendBatch = (k: number) => Array.from({ length: B }, (_, i) => ({ kind: 'command', app, command: lend, params: params[(k * B + i) % 100], correlation: 'c0a8012e-7f3b-4d1e-9a6c-2b5e8f9d1a3c', resume: () => {}, cancelled: false, attempts: 0, recheck: false }));
  return {
    set_price: (k: number) => batchMod.decideBatch(setBatch(k), rows, start).changes.length,
    lend: (k: number) => batchMod.decideBatch(lendBatch(k), rows, start).changes.length,
  };
};
const sides = {
  old: setup(oldCatalog, oldCompile, oldBatch, oldIntent, oldRows, oldTable),
  new: setup(newCatalog, newCompile, newBatch, newIntent, newRows, newTable),
};
const N = Number(process.env.N ?? 3000);
const time = (f: (k: number) => number) => { const t0 = process.cpuUsage(); let s = 0; for (let k = 0; k < N; k++) s += f(k); const d = process.cpuUsage(t0); return (d.user + d.system) / (N * 16); };
for (const side of ['old', 'new'] as const) for (const l of ['set_price', 'lend'] as const) for (let k = 0; k < 3000; k++) sides[side][l](k);
const res: Record<string, number[]> = {};
const R = Number(process.env.R ?? 9);
for (let r = 0; r < R; r++) for (const l of ['set_price', 'lend'] as const) for (const side of (r % 2 ? ['new', 'old'] : ['old', 'new']) as Array<'old' | 'new'>) (res[\`\${l} \${side}\`] ??= []).push(time(sides[side][l]));
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const l of ['set_price', 'lend']) {
  const ratios = res[\`\${l} new\`].map((v, i) => v / res[\`\${l} old\`][i]);
  console.log(\`\${l}: old \${med(res[\`\${l} old\`]).toFixed(2)} µs, new \${med(res[\`\${l} new\`]).toFixed(2)} µs per command (medians of \${R}); new/old median \${med(ratios).toFixed(3)}\`);
}
`;

writeFileSync(join(dir, 'entry.ts'), entry(oldRoot, newRoot));
const { buildSync } = (await import('esbuild')) as unknown as { buildSync: (o: Record<string, unknown>) => unknown };
buildSync({
  entryPoints: [join(dir, 'entry.ts')], outfile: join(dir, 'entry.mjs'), bundle: true, format: 'esm', platform: 'node',
  target: `node${process.versions.node}`, packages: 'external', logLevel: 'error',
});
console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
// From the checkout's root, so that the bundle's `effect` resolves from its node_modules.
process.stdout.write(execFileSync(process.execPath, [join(dir, 'entry.mjs')], { cwd: repoRoot, encoding: 'utf8', env: process.env }));
