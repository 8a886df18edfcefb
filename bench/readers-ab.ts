// Old against new on the first phase of scenarios/readers.ts: durable set_price at C in flight over
// PRODUCTS products, without streams and with STREAMS listen streams that never read past their response head, each
// subscribed to every product (so each commit notifies every stream). `wo run examples/pricing` from this checkout
// and from OLD_ROOT; per round and checkout: WRITES set_price without streams, then STREAMS fresh unread streams,
// WRITES set_price with them, streams closed (fresh ones each round: a stream overflows past WO_STREAM_BUFFER
// frames, so a round stays below it). Prints server CPU per set_price, p99 and calls/s, and the with/without ratios.
// PROFILE=new|old runs that server under --cpu-prof (profile in .data/bench-readers-ab/prof-*).
//   OLD_ROOT=/work/main node --import tsx bench/readers-ab.ts
import { cpuBetween, cpuMsPerCall, sampleCpu, sampleSystemCpu } from './lib/cpu.ts';
import { runLoad } from './lib/load.ts';
import { openListen, type Subscriber } from './lib/subscribers.ts';
import { isRow, restSetPrice, seedProducts, startWo, type SpawnedServer } from './lib/wo.ts';
import { oldVsNew } from './lib/old-vs-new.ts';
import { READERS_ENV } from './scenarios/readers.ts';

const { oldWo, dir, ROUNDS, C } = await oldVsNew('readers-ab', { rounds: 3, inFlight: 16 });
const STREAMS = Number(process.env.STREAMS ?? 1000);
const PRODUCTS = Number(process.env.PRODUCTS ?? 50);
const WRITES = Number(process.env.WRITES ?? 1000);
const PROFILE = process.env.PROFILE;

type Name = 'old' | 'new';
const prof = (k: Name) => (PROFILE === k ? { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', dir(`prof-${k}`)], stopTimeoutMs: 20_000 } : {});
const servers: Record<Name, SpawnedServer> = {
  old: await oldWo.startWo({ dir: dir('old'), env: READERS_ENV, ...prof('old') }),
  new: await startWo({ dir: dir('new'), env: READERS_ENV, ...prof('new') }),
};

interface Win { cpuUs: number; p99: number; perSec: number; other: number }
let price = 1;
const writes = async (k: Name): Promise<Win> => {
  const s = servers[k];
  const srv0 = sampleCpu(s.pid);
  const gen0 = sampleCpu(process.pid);
  const sys0 = sampleSystemCpu();
  const r = await runLoad({
    url: s.url,
    concurrency: C,
    totalRequests: WRITES,
    makeRequest: (i) => restSetPrice(1 + (i % PRODUCTS), 1 + (price++ % 1000)),
    check: (st, b) => isRow(st, b, 200),
  });
  if (r.errors) console.error(`${k}: ${r.errors} errors, first ${r.firstError}`);
  const srv = cpuBetween(srv0, sampleCpu(s.pid));
  const gen = cpuBetween(gen0, sampleCpu(process.pid));
  const sys = cpuBetween(sys0, sampleSystemCpu());
  return { cpuUs: cpuMsPerCall(srv, r.calls) * 1000, p99: r.p99Ms, perSec: r.callsPerSec, other: Math.max(0, sys.cpuMs - srv.cpuMs - gen.cpuMs) / sys.wallMs };
};

const uris = Array.from({ length: PRODUCTS }, (_, i) => `wo://products/${i + 1}`);
let nextId = 2_000_000;
const withStreams = async (k: Name): Promise<Win> => {
  const subs: Subscriber[] = [];
  for (let i = 0; i < STREAMS; i += 50) {
    subs.push(...(await Promise.all(Array.from({ length: Math.min(50, STREAMS - i) }, () => openListen(servers[k].url, nextId++, uris, { paused: true })))));
  }
  try {
    return await writes(k);
  } finally {
    for (const s of subs) s.close();
    await new Promise((r) => setTimeout(r, 500));
  }
};

const fmt = (w: Win) => `${w.cpuUs.toFixed(0).padStart(6)} µs/call  p99 ${w.p99.toFixed(2).padStart(7)} ms  ${w.perSec.toFixed(0).padStart(5)}/s  other cores ${w.other.toFixed(2)}`;
try {
  for (const k of ['old', 'new'] as const) {
    await seedProducts(servers[k].url, PRODUCTS);
    await writes(k);
    await writes(k);
  }
  const res: Record<Name, { without: Win[]; with: Win[] }> = { old: { without: [], with: [] }, new: { without: [], with: [] } };
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of (r % 2 ? ['new', 'old'] : ['old', 'new']) as Name[]) {
      const a = await writes(k);
      const b = await withStreams(k);
      res[k].without.push(a);
      res[k].with.push(b);
      console.log(`round ${r} ${k}: without ${fmt(a)}\n            with    ${fmt(b)}  (p99 ${(b.p99 / a.p99).toFixed(2)}x, CPU ${(b.cpuUs / a.cpuUs).toFixed(2)}x)`);
    }
  }
  const mean = (ws: Win[], f: (w: Win) => number) => ws.reduce((a, w) => a + f(w), 0) / ws.length;
  for (const k of ['old', 'new'] as const) {
    const { without, with: w } = res[k];
    console.log(`${k}: CPU/set_price without ${mean(without, (x) => x.cpuUs).toFixed(0)} µs, with ${mean(w, (x) => x.cpuUs).toFixed(0)} µs; ` +
      `p99 without ${mean(without, (x) => x.p99).toFixed(2)} ms, with ${mean(w, (x) => x.p99).toFixed(2)} ms (ratio of means ${(mean(w, (x) => x.p99) / mean(without, (x) => x.p99)).toFixed(2)}x); ` +
      `${mean(without, (x) => x.perSec).toFixed(0)} / ${mean(w, (x) => x.perSec).toFixed(0)} set_price/s`);
  }
} finally {
  for (const s of Object.values(servers)) await s.stop();
}
