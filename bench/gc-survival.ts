// How much of a request's garbage outlives the young generation, ours against the durable-write floor: each server
// runs under --trace-gc-nvp, is warmed, then loaded for WIN ms (default 5000) at C in flight (default 32) with KIND
// requests; V8's scavenges in that window give the scavenge time and the bytes that survived and were promoted
// per call. KIND: set_price (default), create, get, reject (set_price refused by the app's rule, in the writer),
// notfound (set_price of a missing product), bad (a body the edge refuses). NODE_ARGS go to both servers.
// Why: a durable write's scavenges cost ours several times the floor's per call, and V8 promoted about 3.5-5 KB per
// write (even at 1 in flight, and for a write the writer refuses) where a GET or a refused body promotes ~0.
//   KIND=reject C=1 node --conditions=writeonce-source --import tsx bench/gc-survival.ts
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLoad, type LoadRequest } from './lib/load.ts';
import { restCreate, restGet, restSetPrice, seedProducts, spawnPeer, startWo, type SpawnedServer } from './lib/wo.ts';

const KIND = process.env.KIND ?? 'set_price';
const C = Number(process.env.C ?? 32);
const WIN = Number(process.env.WIN ?? 5000);
const nodeArgs = ['--trace-gc-nvp', ...(process.env.NODE_ARGS?.split(' ').filter(Boolean) ?? [])];
// The whole of the servers' output is kept (the nvp lines are parsed from it).
const outputLimit = 1e9;

const setPrice = (i: number, price: unknown, id = 1 + (i % 100)): LoadRequest => ({
  method: 'POST',
  path: `/api/products/${id}/set_price`,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ price }),
});
const requests: Record<string, (i: number) => LoadRequest> = {
  set_price: (i) => restSetPrice(1 + (i % 100), 1 + (i % 1000)),
  create: restCreate,
  get: (i) => restGet(1 + (i % 100)),
  reject: (i) => setPrice(i, -1),
  notfound: (i) => setPrice(i, 5, 999_999),
  bad: (i) => setPrice(i, 'x'),
};
const request = requests[KIND];
if (request === undefined) throw new Error(`KIND: one of ${Object.keys(requests).join(', ')}`);

interface Survival {
  calls: number;
  scavenges: number;
  scavengeUsPerCall: number;
  survivedBytesPerCall: number;
  promotedBytesPerCall: number;
  markCompacts: number;
}

async function measure(server: SpawnedServer): Promise<Survival> {
  await seedProducts(server.url, 100);
  await runLoad({ url: server.url, concurrency: C, durationMs: 3000, makeRequest: request, check: () => true });
  const mark = server.output().length;
  const r = await runLoad({ url: server.url, concurrency: C, durationMs: WIN, makeRequest: request, check: () => true });
  const lines = server.output().slice(mark).split('\n').filter((l) => l.includes(' gc='));
  const fields = lines.map((l) => Object.fromEntries(l.trim().split(/\s+/).map((kv) => kv.split('='))) as Record<string, string>);
  const scavenges = fields.filter((f) => f.gc === 's');
  const sum = (k: string) => scavenges.reduce((a, f) => a + Number(f[k] ?? 0), 0);
  const calls = r.calls + r.errors;
  return {
    calls,
    scavenges: scavenges.length,
    scavengeUsPerCall: (1000 * sum('pause')) / calls,
    survivedBytesPerCall: sum('new_space_survived') / calls,
    promotedBytesPerCall: sum('promoted') / calls,
    markCompacts: fields.filter((f) => f.gc === 'mc' || f.gc === 'mmc').length,
  };
}

const dir = mkdtempSync(join(tmpdir(), 'wo-gc-survival-'));
try {
  const rows: Array<[string, Survival]> = [];
  for (const who of ['ours', 'floor'] as const) {
    if (who === 'floor' && !['set_price', 'create', 'bad'].includes(KIND)) continue; // the floor serves only these
    const server = who === 'ours'
      ? await startWo({ dir: join(dir, who), env: { WO_GROUP_COMMIT: 'on' }, nodeArgs, outputLimit })
      : await spawnPeer('bench/peers/durable-floor.ts', { env: { DATA_DIR: join(dir, who) }, nodeArgs, outputLimit });
    try {
      rows.push([who, await measure(server)]);
    } finally {
      await server.stop();
    }
  }
  console.log(`KIND=${KIND} C=${C}, ${WIN} ms`);
  for (const [who, s] of rows) {
    console.log(`${who.padEnd(6)} ${s.calls} calls, ${s.scavenges} scavenges (${s.markCompacts} mark-compacts): scavenge ${s.scavengeUsPerCall.toFixed(2)} µs/call, ` +
      `survived ${s.survivedBytesPerCall.toFixed(0)} B/call, promoted ${s.promotedBytesPerCall.toFixed(0)} B/call`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
