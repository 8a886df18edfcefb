// Old against new on the row cache (src/projections/rows/row-cache.ts) in one process, alternated in chunks of 20,000
// operations: the pattern of a lend (read a hot book, write it back, cache the loan it creates: the cache grows
// by a row each time, and evicts once full) and of a set_price (read a hot product, write it back). Prints CPU µs
// per operation chunk by chunk, as the cache grows (the default bound, 64 MB, is full after about 160,000 loans).
//   OLD_ROOT=/work/main node --import tsx bench/row-cache-ab.ts
// CHUNKS (default 20), BOUND (bytes, default 64 MB).
import { join } from 'node:path';
import { RowCache as NewCache } from '../src/projections/rows/row-cache.ts';

const oldRoot = process.env.OLD_ROOT;
if (!oldRoot) throw new Error('set OLD_ROOT to a checkout of the old code');
const { RowCache: OldCache }: typeof import('../src/projections/rows/row-cache.ts') = await import(join(oldRoot, 'src/projections/rows/row-cache.ts'));

type Cache = { get(key: string): unknown; set(key: string, row: never): void; readonly size: number };
const STEP = 20_000;
const CHUNKS = Number(process.env.CHUNKS ?? 20);
const BOUND = Number(process.env.BOUND ?? 64 * 2 ** 20);
const hot = (k: number) => `r!books!${String(1 + (k % 100)).padStart(12, '0')}`;
const loan = (n: number) => ({ id: String(n), version: 1, book: String(n % 100), member: '1', status: 'out' });

const filled = (cache: Cache) => {
  for (let i = 0; i < 100; i++) cache.set(hot(i), { id: String(i + 1), version: 1, title: 'b', available: 5 } as never);
  return cache;
};
/** µs of CPU per operation over one chunk. */
const chunk = (cache: Cache, next: { n: number }, creates: boolean) => {
  const t0 = process.cpuUsage();
  for (let k = 0; k < STEP; k++) {
    const key = hot(k);
    const row = cache.get(key) as { version: number };
    cache.set(key, { ...row, version: row.version + 1 } as never);
    if (creates) {
      const n = next.n++;
      cache.set(`r!loans!${String(n).padStart(12, '0')}`, loan(n) as never);
    }
  }
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / STEP;
};

console.log(`load average ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
for (const creates of [false, true]) {
  const caches = { old: filled(new OldCache(BOUND)), new: filled(new NewCache(BOUND)) };
  const next = { old: { n: 1 }, new: { n: 1 } };
  const us: Record<'old' | 'new', number[]> = { old: [], new: [] };
  for (let i = 0; i < CHUNKS; i++) {
    for (const side of i % 2 === 0 ? (['old', 'new'] as const) : (['new', 'old'] as const)) us[side].push(chunk(caches[side], next[side], creates));
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  console.log(`${creates ? 'lend' : 'set_price'} pattern (${caches.new.size} rows cached at the end), µs per operation by chunk of ${STEP}:`);
  console.log(`  old ${us.old.map((x) => x.toFixed(2)).join(' ')}`);
  console.log(`  new ${us.new.map((x) => x.toFixed(2)).join(' ')}`);
  console.log(`  new/old over all chunks ${(sum(us.new) / sum(us.old)).toFixed(3)}`);
}
