// Old against new on the notification fan-out (scenarios/notify.ts), beside the floor
// (peers/sse-fanout.ts), in one run: SUBS modern listen streams on wo://products/1 per server, then per round and
// server a window of WIN ms of set_price on that row, one at a time, each sent once every stream has the one before
// (so it measures one commit's whole fan-out), in alternating order. Prints server CPU per notification,
// commit-to-notification p99 (from just before the request is sent, every stream x commit) and the ratios.
//   OLD_ROOT=/path/to/old/checkout node --import tsx bench/notify-ab.ts
import { Pool } from 'undici';
import { cpuBetween, sampleCpu, sampleSystemCpu } from './lib/cpu.ts';
import { LatencyHistogram } from './lib/histogram.ts';
import { DeliveryTracker, openListens, type Subscriber } from './lib/subscribers.ts';
import { restSetPrice, seedProducts, spawnPeer, startWo, type SpawnedServer } from './lib/wo.ts';
import { oldVsNew } from './lib/old-vs-new.ts';

const { oldWo, dir, ROUNDS, WIN } = await oldVsNew('notify-ab', { rounds: 4, inFlight: 1 });
const SUBS = Number(process.env.SUBS ?? 1000);
const ENV = { WO_MAX_LISTENS_PER_CLIENT: '5000', WO_MAX_LISTEN_STREAMS: '10000' };

type Name = 'old' | 'new' | 'floor';
const names: Name[] = ['old', 'new', 'floor'];
const servers: Record<Name, SpawnedServer> = {
  old: await oldWo.startWo({ dir: dir('old'), env: ENV }),
  new: await startWo({ dir: dir('new'), env: ENV }),
  floor: await spawnPeer('bench/peers/sse-fanout.ts'),
};
const subs = {} as Record<Name, Subscriber[]>;
const pools = {} as Record<Name, Pool>;

interface Win { cpuUs: number; notes: number; hist: LatencyHistogram; other: number }
let price = 1;
const window = async (k: Name, ms: number): Promise<Win> => {
  const s = subs[k];
  const sentAt: number[] = [];
  const hist = new LatencyHistogram();
  const tracker = new DeliveryTracker(s, (_sub, at, level) => hist.record((at - sentAt[level - 1]) * 1000));
  const cpu0 = sampleCpu(servers[k].pid);
  const sys0 = sampleSystemCpu();
  const gen0 = sampleCpu(process.pid);
  const t0 = performance.now();
  let n = 0;
  while (performance.now() - t0 < ms) {
    const req = restSetPrice(1, 1 + (price++ % 1000));
    sentAt.push(performance.now());
    const res = await pools[k].request({ method: req.method, path: req.path, headers: req.headers, body: req.body });
    await res.body.dump();
    n++;
    if (!(await tracker.waitFor(n, 10_000))) throw new Error(`${k}: notification ${n} not delivered to every stream`);
  }
  const cpu = cpuBetween(cpu0, sampleCpu(servers[k].pid));
  const sys = cpuBetween(sys0, sampleSystemCpu());
  const gen = cpuBetween(gen0, sampleCpu(process.pid));
  tracker.detach();
  const notes = n * s.length;
  return { cpuUs: (cpu.cpuMs * 1000) / notes, notes, hist, other: Math.max(0, sys.cpuMs - cpu.cpuMs - gen.cpuMs) / sys.wallMs };
};

try {
  for (const k of names) {
    if (k !== 'floor') await seedProducts(servers[k].url, 1); // the floor has every row
    subs[k] = await openListens(servers[k].url, SUBS, 'wo://products/1');
    pools[k] = new Pool(servers[k].url, { connections: 1 });
    await window(k, 1500); // warm
  }
  const res: Record<Name, Win[]> = { old: [], new: [], floor: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of r % 2 ? [...names].reverse() : names) {
      const w = await window(k, WIN);
      res[k].push(w);
      console.log(`round ${r} ${k.padEnd(5)} ${w.cpuUs.toFixed(2).padStart(6)} µs CPU/notification  p99 ${(w.hist.percentile(99) / 1000).toFixed(2).padStart(6)} ms  ${w.notes} notifications  other cores ${w.other.toFixed(2)}`);
    }
  }
  const cpu = (k: Name) => res[k].reduce((a, w) => a + w.cpuUs * w.notes, 0) / res[k].reduce((a, w) => a + w.notes, 0);
  const p99 = (k: Name) => {
    const h = new LatencyHistogram();
    for (const w of res[k]) h.merge(w.hist);
    return h.percentile(99) / 1000;
  };
  for (const k of names) console.log(`${k.padEnd(5)} CPU ${cpu(k).toFixed(2)} µs/notification (${(cpu(k) / cpu('floor')).toFixed(2)}x floor), p99 ${p99(k).toFixed(2)} ms (${(p99(k) / p99('floor')).toFixed(2)}x floor)`);
  console.log(`new/old: CPU ${(cpu('new') / cpu('old')).toFixed(2)}, p99 ${(p99('new') / p99('old')).toFixed(2)}`);
} finally {
  for (const k of names) {
    for (const s of subs[k] ?? []) s.close();
    await pools[k]?.close();
    await servers[k].stop();
  }
}
