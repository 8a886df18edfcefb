// Old against new on the row cache (src/projections/rows/row-cache.ts) in one process, under the patterns of a lend
// and of a set_price (lib/row-cache-patterns.ts): CPU µs per operation chunk by chunk, as the cache grows.
//   OLD_ROOT=/work/main node --import tsx bench/row-cache-ab.ts
// CHUNKS (default 20), BOUND (bytes, default 64 MB).
import { join } from 'node:path';
import { RowCache as NewCache } from '../src/projections/rows/row-cache.ts';
import { comparePatterns } from './lib/row-cache-patterns.ts';

const oldRoot = process.env.OLD_ROOT;
if (!oldRoot) throw new Error('set OLD_ROOT to a checkout of the old code');
const { RowCache: OldCache }: typeof import('../src/projections/rows/row-cache.ts') = await import(join(oldRoot, 'src/projections/rows/row-cache.ts'));

await comparePatterns({ name: 'old', make: (bound) => new OldCache(bound) }, { name: 'new', make: (bound) => new NewCache(bound) });
