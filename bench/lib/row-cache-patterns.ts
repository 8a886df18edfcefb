// The row cache's two patterns, run on two caches in one process, alternated in chunks of 20,000 operations: a lend
// (read a hot book, write it back, cache the loan it creates: the cache grows by a row each time, and evicts once
// full) and a set_price (read a hot product, write it back). Prints CPU µs per operation chunk by chunk, as the
// cache grows, and b's over a's over all chunks. Used by row-cache-ab.ts and row-cache-lru-ab.ts.
// CHUNKS (default 20), BOUND (bytes, default 64 MB: full after about 160,000 loans).

export type Cache = { get(key: string): unknown; set(key: string, row: never): void; readonly size: number };
export interface Side<N extends string> {
  readonly name: N;
  readonly make: (bound: number) => Cache;
}

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

export const comparePatterns = async <A extends string, B extends string>(a: Side<A>, b: Side<B>) => {
  console.log(`load average ${(await import('node:os')).loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const width = Math.max(a.name.length, b.name.length);
  for (const creates of [false, true]) {
    const caches = { a: filled(a.make(BOUND)), b: filled(b.make(BOUND)) };
    const next = { a: { n: 1 }, b: { n: 1 } };
    const us: Record<'a' | 'b', number[]> = { a: [], b: [] };
    for (let i = 0; i < CHUNKS; i++) {
      for (const side of i % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)) us[side].push(chunk(caches[side], next[side], creates));
    }
    const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0);
    const cached = caches.a.size === caches.b.size ? `${caches.b.size}` : `${a.name} ${caches.a.size}, ${b.name} ${caches.b.size}`;
    console.log(`${creates ? 'lend' : 'set_price'} pattern (${cached} rows cached at the end), µs per operation by chunk of ${STEP}:`);
    console.log(`  ${a.name.padEnd(width)} ${us.a.map((x) => x.toFixed(2)).join(' ')}`);
    console.log(`  ${b.name.padEnd(width)} ${us.b.map((x) => x.toFixed(2)).join(' ')}`);
    console.log(`  ${b.name}/${a.name} over all chunks ${(sum(us.b) / sum(us.a)).toFixed(3)}`);
  }
};
