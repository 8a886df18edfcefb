// Our row cache (src/projections/rows/row-cache.ts) against the `lru-cache` package bounded the same way (`maxSize`,
// `sizeCalculation: rowBytes`), in one process, under the patterns of a lend and of a set_price
// (lib/row-cache-patterns.ts): CPU µs per operation chunk by chunk, as the cache grows and evicts.
//   LRU_CACHE_DIR=/tmp/lru/node_modules/lru-cache node --import tsx bench/row-cache-lru-ab.ts
// LRU_CACHE_DIR: an installed lru-cache (writeonce does not depend on it). CHUNKS (default 20), BOUND (bytes, 64 MB).
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Row } from '../src/domain/catalog.ts';
import { RowCache, rowBytes } from '../src/projections/rows/row-cache.ts';
import { comparePatterns } from './lib/row-cache-patterns.ts';

const dir = process.env.LRU_CACHE_DIR;
if (!dir) throw new Error('set LRU_CACHE_DIR to an installed lru-cache package');
type Lru = { get(key: string): Row | undefined; set(key: string, row: Row): void; readonly size: number };
const { LRUCache } = createRequire(join(dir, 'package.json'))(dir) as { LRUCache: new (options: object) => Lru };

/** The package behind the row cache's interface, counting hits and misses as it does. */
class PackageCache {
  private readonly lru: Lru;
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

await comparePatterns({ name: 'ours', make: (bound) => new RowCache(bound) }, { name: 'lru-cache', make: (bound) => new PackageCache(bound) });
