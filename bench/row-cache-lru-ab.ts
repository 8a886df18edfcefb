// Our row cache (src/projections/rows/row-cache.ts) against the `lru-cache` package bounded the same way (`maxSize`,
// `sizeCalculation: rowBytes`), in one process, alternated in chunks of 20,000 operations, under the patterns of
// row-cache-ab.ts: a lend (read a hot book, write it back, cache the loan it creates) and a set_price (read a hot
// product, write it back). Prints CPU µs per operation chunk by chunk, as the cache grows and evicts.
//   LRU_CACHE_DIR=/tmp/lru/node_modules/lru-cache node --import tsx bench/row-cache-lru-ab.ts
// LRU_CACHE_DIR: an installed lru-cache (writeonce does not depend on it). CHUNKS (default 20), BOUND (bytes, 64 MB).
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { RowCache, rowBytes } from '../src/projections/rows/row-cache.ts';
import type { Row } from '../src/domain/catalog.ts';

const dir = process.env.LRU_CACHE_DIR;
if (!dir) throw new Error('set LRU_CACHE_DIR to an installed lru-cache package');
const { LRUCache } = createRequire(join(dir, 'package.json'))(dir) as { LRUCache: new (o: object) => { get(k: string): Row | undefined; set(k: string, v: Row): void; readonly size: number } };

/** The package behind RowCache's interface, with its hit and miss counts. */
class PackageCache {
  private readonly lru;
  hits = 0;
  misses = 0;
  constructor(maxBytes: number) {
    this.lru = new LRUCache({ maxSize: maxBytes, sizeCalculation: rowBytes });
  }
  get size() {
    return this.lru.size;
  }
  get(key: string) {
    const row = this.lru.get(key);
    if (row === undefined) this.misses++;
    else this.hits++;
    return row;
  }
  set(key: string, row: Row) {
    this.lru.set(key, row);
  }
}

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
  const caches = { ours: filled(new RowCache(BOUND)), pkg: filled(new PackageCache(BOUND)) };
  const next = { ours: { n: 1 }, pkg: { n: 1 } };
  const us: Record<'ours' | 'pkg', number[]> = { ours: [], pkg: [] };
  for (let i = 0; i < CHUNKS; i++) {
    for (const side of i % 2 === 0 ? (['ours', 'pkg'] as const) : (['pkg', 'ours'] as const)) us[side].push(chunk(caches[side], next[side], creates));
  }
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log(`${creates ? 'lend' : 'set_price'} pattern (ours ${caches.ours.size}, lru-cache ${caches.pkg.size} rows cached at the end), µs per operation by chunk of ${STEP}:`);
  console.log(`  ours      ${us.ours.map((x) => x.toFixed(2)).join(' ')}`);
  console.log(`  lru-cache ${us.pkg.map((x) => x.toFixed(2)).join(' ')}`);
  console.log(`  lru-cache/ours over all chunks ${(sum(us.pkg) / sum(us.ours)).toFixed(3)}, medians ${median(us.ours).toFixed(2)} / ${median(us.pkg).toFixed(2)}`);
}
