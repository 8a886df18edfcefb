// What a filtered page costs while its index is missing (store-table.ts), measured in-process on the store's row
// table (no HTTP), on stores of products written directly (lib/row-writer.ts):
//  - on N products, the backfill held at a gate so that the index stays building, a scan of at most
//    SCAN_BUDGET_ROWS rows until it holds `limit` matches, against an unfiltered first page of the same limit
//    (alternated rounds; the median and the slowest page of each kind):
//     - a filter no row matches: the whole budget is read (the most a page costs);
//     - one row in 1,000 (`name`): the whole budget too (fewer than 50 matches in it);
//     - one row in 3 (`currency`): about 150 rows read for 50 matches;
//  - on BUILD_FIRST_ROWS products, the first filtered page: the index built, then walked (each round a new store).
//   node --conditions=writeonce-source --import tsx bench/scan-budget.ts      BENCH_ROWS (default 200000), BENCH_ROUNDS (default 30), BENCH_SMALL_ROUNDS (default 7)
import { rmSync } from 'node:fs';
import { Effect, Either, Layer, ManagedRuntime } from 'effect';
import pricing from '../examples/pricing/app.ts';
import { compileApp } from '../src/domain/compile.ts';
import type { Filter } from '../src/domain/list-request.ts';
import { LevelDb, levelDbLayer, type LevelDbShape } from '../src/log/classic-level/level-db.ts';
import { storeIndexes } from '../src/log/classic-level/store-indexes.ts';
import { IndexBackfill } from '../src/projections/rows/index-backfill.ts';
import { RowCache } from '../src/projections/rows/row-cache.ts';
import { BUILD_FIRST_ROWS, SCAN_BUDGET_ROWS, servedFields, StoreTable } from '../src/projections/rows/store-table.ts';
import { tempDir } from '../testkit/server.ts';
import { writeProducts } from './lib/row-writer.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 200_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30);
const LIMIT = 50;

const SMALL_ROUNDS = Number(process.env.BENCH_SMALL_ROUNDS ?? 7);
const spec = (i: number) => ({ name: `item-${i % 1000}`, price: 1 + (i % 997), currency: (i % 3 === 0 ? 'EUR' : 'USD') as 'EUR' | 'USD' });
const catalog = Either.getOrThrow(compileApp(pricing));
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const order = { field: 'id', descending: false };

/** Runs `f` on a fresh store of `rows` products, then removes it. */
const onStore = async <A>(rows: number, f: (h: LevelDbShape) => Promise<A>): Promise<A> => {
  const dir = tempDir('wo-scan-budget-');
  await writeProducts(dir, rows, spec);
  const runtime = ManagedRuntime.make(levelDbLayer(dir) as Layer.Layer<LevelDb, unknown>);
  try {
    return await f(await runtime.runPromise(LevelDb));
  } finally {
    await runtime.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
};

const small: Array<number> = [];
for (let round = 0; round < SMALL_ROUNDS + 1; round++) {
  const ms = await onStore(BUILD_FIRST_ROWS, async (h) => {
    const indexes = new IndexBackfill({ store: h, registry: await Effect.runPromise(storeIndexes(h)), decode: (type, key, raw, fields) => servedFields(catalog, type, key, raw, fields), schemaOf: () => 'bench' });
    const table = new StoreTable('products', { db: () => h.current!()!, cache: new RowCache(64 * 1024 * 1024), catalog, indexes }, BUILD_FIRST_ROWS, BUILD_FIRST_ROWS);
    const t0 = performance.now();
    const page = await Effect.runPromise(table.read({ where: [{ field: 'name', value: 'item-7' }], order, limit: LIMIT }));
    if (page.rows.length !== 1 || !indexes.isReady('products', ['name'])) throw new Error('the small table did not build its index first');
    return performance.now() - t0;
  });
  // The first round warms the code up.
  if (round > 0) small.push(ms);
}
console.log(`${BUILD_FIRST_ROWS} products: first filtered page (index built, then walked) median ${median(small).toFixed(2)} ms, slowest ${Math.max(...small).toFixed(2)} ms (${SMALL_ROUNDS} stores)`);

await onStore(ROWS, async (h) => {
  // The backfill never gets its turn: every filtered page below is a scan.
  const held: LevelDbShape = { ...h, writeAlone: (what, f) => Effect.zipRight(Effect.promise(() => new Promise<void>(() => {})), h.writeAlone!(what, f)) };
  const indexes = new IndexBackfill({
    store: held,
    registry: await Effect.runPromise(storeIndexes(h)),
    decode: (type, key, raw, fields) => servedFields(catalog, type, key, raw, fields),
    schemaOf: () => 'bench'
  });
  // The server's default row cache (64 MiB): the unfiltered first page is served from it after its first read.
  const table = new StoreTable('products', { db: () => h.current!()!, cache: new RowCache(64 * 1024 * 1024), catalog, indexes }, ROWS, ROWS);
  const timed = async (where: ReadonlyArray<Filter>) => {
    const t0 = performance.now();
    const page = await Effect.runPromise(table.read({ where, order, limit: LIMIT }));
    return { ms: performance.now() - t0, items: page.rows.length, partial: page.partial === true };
  };
  const kinds: Array<[string, ReadonlyArray<Filter>]> = [
    ['unfiltered', []],
    ['no match', [{ field: 'name', value: 'none' }]],
    ['1 in 1,000', [{ field: 'name', value: 'item-7' }]],
    ['1 in 3', [{ field: 'currency', value: 'EUR' }]]
  ];
  const times = new Map<string, Array<number>>(kinds.map(([k]) => [k, []]));
  const shape = new Map<string, string>();
  for (let round = 0; round < ROUNDS + 3; round++) {
    for (const [kind, where] of kinds) {
      const { ms, items, partial } = await timed(where);
      // The first rounds warm the code up.
      if (round >= 3) times.get(kind)!.push(ms);
      shape.set(kind, `${items} rows${partial ? ', partial' : ''}`);
    }
  }
  const base = median(times.get('unfiltered')!);
  console.log(`${ROWS} products, limit ${LIMIT}, budget ${SCAN_BUDGET_ROWS} rows, ${ROUNDS} alternated rounds`);
  for (const [kind] of kinds) {
    const xs = times.get(kind)!;
    console.log(`${kind.padEnd(12)} median ${median(xs).toFixed(2)} ms (${(median(xs) / base).toFixed(1)}x unfiltered), slowest ${Math.max(...xs).toFixed(2)} ms; ${shape.get(kind)}`);
  }
});
