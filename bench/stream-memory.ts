// What one open stream costs the server, after a forced full GC (testkit-like preload on SIGUSR2), for
// listen or legacy GET streams, against the SSE fan-out floor: RSS, V8 heap used, external, per stream; then the
// same `SETTLE_MS` (default 5000) after they all closed; `TRIM=1` then calls malloc_trim(0) in it through gdb (glibc free
// memory kept). `KIND=listen|get`, `N` (1000), `SERVER=wo|floor`, `NODE_ARGS` (node flags), `EXTRA_ENV` (`K=V K=V`),
// `HEAPSNAP=/tmp/x` (heap snapshots at 1 and N streams and after close: diff them by constructor).
// `COMMITS=k` sends k set_price one at a time while the N streams are open, each awaited until every stream got it
// (the traffic the notify scenario's fan-out phase makes); `RSS now` lines read /proc before any forced GC, as the
// bench row "server RSS after 1,000 listen streams closed / before they opened" does (SETTLE_MS=30000 is its wait).
// V8 experiments: NODE_ARGS='--max-semi-space-size=1' (young generation), SERVER=floor for the hand-written peer.
import { openLegacyGets, openListens, type Subscriber } from './lib/subscribers.ts';
import { freshDataDir, restSetPrice, seedProducts, spawnPeer, startWo, type SpawnedServer } from './lib/wo.ts';
import { NOTIFY_ENV } from './scenarios/notify.ts';
import { ROOT } from '../testkit/spawn.ts';
import { readFileSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';

const KIND = (process.env.KIND ?? 'listen') as 'listen' | 'get';
const N = Number(process.env.N ?? 1000);
const SERVER = process.env.SERVER ?? 'wo';
const SETTLE = Number(process.env.SETTLE_MS ?? 5000);
const PRELOAD = `${ROOT}/bench/lib/mem-on-signal.cjs`;
const nodeArgs = ['--expose-gc', '--require', PRELOAD, ...(process.env.NODE_ARGS ? process.env.NODE_ARGS.split(' ') : [])];
const URI = 'wo://products/1';
const COMMITS = Number(process.env.COMMITS ?? 0);

type Mem = { physical: number; peakMalloced: number; anon: number; fileRss: number; rss: number; heapUsed: number; heapTotal: number; external: number; arrayBuffers: number; malloced: number; spaces: Record<string, [used: number, physical: number]> };

/** The server's memory figures: after a forced full GC, or (`gc` false) as they are. */
async function mem(srv: SpawnedServer, gc = true): Promise<Mem> {
  const marker = gc ? 'MEM ' : 'NOGC ';
  const before = srv.output().split(marker).length;
  srv.child.kill(gc ? 'SIGUSR2' : 'SIGWINCH');
  for (let i = 0; i < 600; i++) {
    const parts = srv.output().split(marker);
    if (parts.length > before) return JSON.parse(parts[parts.length - 1].split('\n')[0]);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('no MEM line');
}

const dir = freshDataDir('.data/bench-streammem', 'mem');
const srv: SpawnedServer = SERVER === 'floor'
  ? await spawnPeer('bench/peers/sse-fanout.ts', { nodeArgs })
  : await startWo({ dir, env: { ...NOTIFY_ENV, ...(process.env.EXTRA_ENV ? Object.fromEntries(process.env.EXTRA_ENV.split(' ').map((kv) => kv.split('='))) : {}), ...(process.env.HEAPSNAP ? { HEAPSNAP: process.env.HEAPSNAP } : {}) }, nodeArgs });
try {
  if (SERVER !== 'floor') await seedProducts(srv.url, 1);
  const open = (n: number) => (KIND === 'get' ? openLegacyGets(srv.url, n, URI) : openListens(srv.url, n, URI));
  const warm = await open(50); // warm the code paths so that the 1-stream point is not the cold server
  for (const s of warm) s.close();
  await new Promise((r) => setTimeout(r, 500));
  const before = await mem(srv, false);
  const subs: Subscriber[] = await open(1);
  await new Promise((r) => setTimeout(r, 200));
  const m1 = await mem(srv);
  subs.push(...(await open(N - 1)));
  await new Promise((r) => setTimeout(r, 200));
  const mN = await mem(srv);
  for (let k = 0; k < COMMITS; k++) {
    const want = subs.map((s) => s.count + 1);
    const req = restSetPrice(1, 1 + (k % 1000));
    const res = await fetch(srv.url + req.path, { method: req.method, headers: req.headers, body: req.body });
    if (res.status !== 200) throw new Error(`set_price: HTTP ${res.status}`);
    await res.arrayBuffer();
    for (let t = 0; subs.some((s, i) => s.count < want[i]); t++) {
      if (t > 2000) throw new Error('a stream missed a notification');
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  const loaded = await mem(srv, false);
  for (const s of subs) s.close();
  await new Promise((r) => setTimeout(r, SETTLE));
  const closed = await mem(srv, false);
  const mC = await mem(srv);
  const kib = (a: number, b: number) => ((b - a) / 1024 / (N - 1)).toFixed(2);
  const mb = (x: number) => (x / 2 ** 20).toFixed(1);
  console.log(`${SERVER} ${KIND} N=${N} ${process.env.NODE_ARGS ?? ''} ${process.env.EXTRA_ENV ?? ''}`);
  const space = (m: Mem, name: string) => ((m.spaces[name]?.[1] ?? 0) / 1024).toFixed(1);
  const noGc = (m: Mem) => `rss ${mb(m.rss)} (anon ${mb(m.anon)}), V8 physical ${mb(m.physical)} (new space ${space(m, 'new_space')}, old ${space(m, 'old_space')}), heapUsed ${mb(m.heapUsed)}`;
  console.log(`  no forced GC, MB: before the streams opened: ${noGc(before)}`);
  console.log(`                    after ${COMMITS} commits at ${N} streams: ${noGc(loaded)}`);
  console.log(`                    ${SETTLE / 1000}s after close: ${noGc(closed)}`);
  console.log(`  RSS ${SETTLE / 1000}s after close / before the streams opened ${(closed.rss / before.rss).toFixed(2)}x; after a forced GC ${mb(mC.rss)} MB (${(mC.rss / before.rss).toFixed(2)}x)`);
  console.log(`  per stream (after full GC): rss ${kib(m1.rss, mN.rss)} KiB, heapUsed ${kib(m1.heapUsed, mN.heapUsed)} KiB, external ${kib(m1.external, mN.external)} KiB, malloced ${kib(m1.malloced, mN.malloced)} KiB`);
  console.log(`  MB at 1 / ${N} / ${SETTLE / 1000}s after close: rss ${mb(m1.rss)} / ${mb(mN.rss)} / ${mb(mC.rss)}; heapUsed ${mb(m1.heapUsed)} / ${mb(mN.heapUsed)} / ${mb(mC.heapUsed)}; heapTotal ${mb(m1.heapTotal)} / ${mb(mN.heapTotal)} / ${mb(mC.heapTotal)}; external ${mb(m1.external)} / ${mb(mN.external)} / ${mb(mC.external)}`);
  console.log(`  RssAnon MB ${mb(m1.anon)} / ${mb(mN.anon)} / ${mb(mC.anon)}; RssFile MB ${mb(m1.fileRss)} / ${mb(mN.fileRss)} / ${mb(mC.fileRss)}`);
  console.log(`  V8 physical MB ${mb(m1.physical)} / ${mb(mN.physical)} / ${mb(mC.physical)}; malloced MB ${mb(m1.malloced)} / ${mb(mN.malloced)} / ${mb(mC.malloced)}, peak ${mb(mC.peakMalloced)}`);
  if (process.env.TRIM) {
    // glibc's free memory the allocator kept (not returned to the kernel): malloc_trim(0) in the server, through gdb.
    const anon = () => Number(/^RssAnon:\s+(\d+)/m.exec(readFileSync(`/proc/${srv.pid}/status`, 'utf8'))![1]) / 1024;
    const before = anon();
    execFileSync('gdb', ['-p', String(srv.pid), '-batch', '-ex', 'call (int)malloc_trim(0)'], { stdio: 'ignore' });
    console.log(`  after close, malloc_trim(0): RssAnon ${before.toFixed(1)} -> ${anon().toFixed(1)} MB`);
  }
  console.log(`  spaces KiB at N: ${JSON.stringify(mN.spaces)}`);
  console.log(`  spaces KiB at 1: ${JSON.stringify(m1.spaces)}`);
} finally {
  await srv.stop();
  rmSync(dir, { recursive: true, force: true });
}
