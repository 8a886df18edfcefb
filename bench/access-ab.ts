// What principals cost: server CPU per durable REST set_price and per cached REST GET, `wo run examples/pricing`
// with an access file of 100 principals (each request authenticated, its grant checked; the caller is the 50th
// principal, with `products:*`) against the same checkout without one (loopback, no credential). Each warmed
// until its CPU per call is stable, then measured in paired windows (ROUNDS, default 6, of WIN ms, default 3000,
// the order alternating) at C in flight (default 16). Prints the median of the per-round ratios (budget: 1.05x).
//   node --import tsx bench/access-ab.ts
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { measure, type Measured } from './lib/measure.ts';
import { warmUntilStable } from './lib/warmup.ts';
import { isRow, repoRoot, restGet, restSetPrice, seedProducts, startWo, type SpawnedServer } from './lib/wo.ts';
import type { LoadRequest } from './lib/load.ts';

const ROUNDS = Number(process.env.ROUNDS ?? 6);
const WIN = Number(process.env.WIN ?? 3000);
const C = Number(process.env.C ?? 16);
const dataRoot = process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-access-ab');
mkdirSync(dataRoot, { recursive: true });
const dir = (label: string) => mkdtempSync(join(dataRoot, `${label}-`));

const PRINCIPALS = 100;
const tokenOf = (i: number) => `bench-principal-${i}-token-0123456789`;
const CALLER = tokenOf(50);
const accessFile = join(dir('file'), 'access.json');
writeFileSync(accessFile, JSON.stringify({
  principals: Array.from({ length: PRINCIPALS }, (_, i) => ({
    name: `agent-${i}`,
    token: tokenOf(i),
    grants: i % 3 === 0 ? ['read'] : ['products:read', 'products:set_price', 'products:*'],
  })),
}));

type Name = 'without' | 'with';
const servers: Record<Name, SpawnedServer> = {
  without: await startWo({ dir: dir('without'), env: { WO_GROUP_COMMIT: 'on' } }),
  with: await startWo({ dir: dir('with'), env: { WO_GROUP_COMMIT: 'on', WO_ACCESS_FILE: accessFile } }),
};
const withToken = (k: Name, r: LoadRequest): LoadRequest =>
  k === 'with' ? { ...r, headers: { ...r.headers, authorization: `Bearer ${CALLER}` } } : r;

const scenarios = {
  get: (k: Name) => ({ url: servers[k].url, concurrency: C, makeRequest: (i: number) => withToken(k, restGet(1 + (i % 100))), check: (s: number, b: string) => isRow(s, b, 200) }),
  // Each in-flight caller on its own product: durable writes, grouped by the writer as usual.
  set_price: (k: Name) => ({ url: servers[k].url, concurrency: C, makeRequest: (i: number, w: number) => withToken(k, restSetPrice(1 + w, 1 + (i % 1000))), check: (s: number, b: string) => isRow(s, b, 200) }),
};

const median = (xs: Array<number>) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

try {
  // Seeded without a token on the open server, with the caller's on the other.
  await seedProducts(servers.without.url, 100);
  await seedProductsWith(servers.with.url, 100);
  for (const [name, load] of Object.entries(scenarios)) {
    for (const k of ['without', 'with'] as Array<Name>) await warmUntilStable({ load: load(k), pid: servers[k].pid, maxMs: 8000, minCalls: 3000 });
    const windows: Record<Name, Array<Measured>> = { without: [], with: [] };
    for (let r = 0; r < ROUNDS; r++) {
      const order: Array<Name> = r % 2 ? ['with', 'without'] : ['without', 'with'];
      for (const k of order) windows[k].push(await measure(servers[k], load(k), WIN));
    }
    const ratios = windows.with.map((w, i) => w.srvCpuMsPerCall / windows.without[i].srvCpuMsPerCall);
    const us = (k: Name) => median(windows[k].map((w) => w.srvCpuMsPerCall * 1000)).toFixed(1);
    console.log(`${name.padEnd(9)} server CPU/call: without ${us('without')} µs, with 100 principals ${us('with')} µs; ` +
      `median ratio ${median(ratios).toFixed(3)}x (per round ${ratios.map((x) => x.toFixed(2)).join(' ')}; budget 1.05x)`);
  }
} finally {
  for (const s of Object.values(servers)) await s.stop();
}

/** seedProducts with the caller's token (the server with an access file answers 401 without one). */
async function seedProductsWith(url: string, n: number) {
  for (let i = 1; i <= n; i++) {
    const res = await fetch(`${url}/api/products`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${CALLER}` },
      body: JSON.stringify({ name: `p${i}`, price: i, currency: 'USD' }),
    });
    if (res.status !== 201) throw new Error(`seeding: HTTP ${res.status} ${await res.text()}`);
  }
}
