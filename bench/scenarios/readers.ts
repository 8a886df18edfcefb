// Readers cannot starve the server, on one `wo run examples/pricing`:
//  - writes with unread streams: durable set_price p99 at `concurrency` in flight, without any stream, then with
//    `streams` listen streams that never read past their ack, each subscribed to `subscriptions` rows that the
//    writes touch; the ratio of the two p99s. On loopback a paused client's socket takes about 4 MB before the
//    server's write returns false (measured here), and a phase sends each stream writes x ~170 B: the streams
//    never block, so this measures the fan-out to 1,000 streams per commit, not a blocked stream's cost (the
//    stall scenario and test/integration/stream-isolation.test.ts cover that). bench/readers-ab.ts runs this
//    phase old against new, with server CPU per set_price;
//  - reads while readers catch up: plain `GET /api/products/1` p99, one at a time, idle, then while `readers`
//    readers of `/api/_events?from=0` catch up on the log (the set_price phases above wrote it); the ratio.
// Then both phases again against their floors, in the same run: bench/peers/notify-floor.ts (the durable-write
// floor, group commit on classic-level, with the listen streams' fan-out written at once after each group) and
// bench/peers/catch-up-floor.ts (the readers' policy hand-written, the events served from memory).
import { Pool } from 'undici';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { LatencyHistogram } from '../lib/histogram.ts';
import { openListen, type Subscriber } from '../lib/subscribers.ts';
import { freshDataDir, isRow, restGet, restSetPrice, seedProducts, spawnPeer, startWo } from '../lib/wo.ts';
import type { BenchContext } from './context.ts';

export interface ReadersOptions {
  streams: number;
  subscriptions: number;
  /** set_price calls per phase */
  writes: number;
  concurrency: number;
  readers: number;
  /** GETs measured idle, and at most this many while the readers catch up */
  gets: number;
}

export interface ReadersResult {
  streams: number;
  subscriptions: number;
  setPriceP99MsWithout: number;
  setPriceP99MsWith: number;
  setPricesPerSecWithout: number;
  setPricesPerSecWith: number;
  events: number;
  readers: number;
  getP99MsIdle: number;
  getP99MsWhileCatchingUp: number;
  /** GETs answered while the readers were still catching up */
  getsWhileCatchingUp: number;
  /** every reader got the whole log */
  caughtUp: boolean;
  /**
   * The same phases against the floors, in the same run: bench/peers/notify-floor.ts (the durable-write floor with
   * the listen streams' fan-out) and bench/peers/catch-up-floor.ts (the readers' policy, events from memory).
   */
  floor?: {
    setPriceP99MsWithout: number;
    setPriceP99MsWith: number;
    setPricesPerSecWithout: number;
    setPricesPerSecWith: number;
    getP99MsIdle: number;
    getP99MsWhileCatchingUp: number;
    caughtUp: boolean;
  };
}

export const READERS_ENV = { WO_MAX_LISTENS_PER_CLIENT: '5000', WO_MAX_LISTEN_STREAMS: '10000', WO_MAX_EVENT_TAILS_PER_CLIENT: '64' };

/**
 * The readers' process (it says "connecting" as they start): `READERS` readers of `/api/_events?from=0` on HOST:PORT; prints "caught up" once each has
 * seen the id line of event LAST_ID (searched in the bytes, kept across chunk boundaries by `tail`).
 */
const READERS_CLIENT = `
const http = require('node:http');
const n = Number(process.env.READERS);
const last = Buffer.from('id: ' + process.env.LAST_ID + '\\n');
let done = 0;
process.stdout.write('connecting\\n');
for (let i = 0; i < n; i++) {
  let tail = Buffer.alloc(0);
  const req = http.get({ host: process.env.HOST, port: Number(process.env.PORT), path: '/api/_events?from=0', agent: false }, (res) => {
    if (res.statusCode !== 200) { console.error('/api/_events: HTTP ' + res.statusCode); process.exit(1); }
    res.on('data', (chunk) => {
      const found = chunk.includes(last) || Buffer.concat([tail, chunk.subarray(0, last.length - 1)]).includes(last);
      tail = Buffer.from(chunk.subarray(Math.max(0, chunk.length - last.length)));
      if (found) {
        req.destroy();
        if (++done === n) { process.stdout.write('caught up\\n'); setTimeout(() => process.exit(0), 100); }
      }
    });
    res.on('error', () => undefined);
  });
  req.on('error', () => undefined);
}
`;

export async function runReaders(ctx: BenchContext, opts: ReadersOptions): Promise<ReadersResult> {
  const dir = freshDataDir(ctx.dataRoot, 'readers');
  ctx.track(dir);
  const server = await startWo({ dir, env: READERS_ENV });
  const products = Math.max(opts.subscriptions, 1);
  let ours: UnreadStreams;
  let catchUp: CatchUpGets;
  const events = opts.writes * 3 + products;
  try {
    ours = await writesWithUnreadStreams(ctx, server.url, opts, 'ours');
    await new Promise((r) => setTimeout(r, 500));
    const pool = new Pool(server.url, { connections: 1, pipelining: 1, keepAliveTimeout: 60_000 });
    try {
      catchUp = await getsWhileReadersCatchUp(ctx, server.url, pool, { readers: opts.readers, gets: opts.gets, events });
    } finally {
      await pool.close();
    }
  } finally {
    await server.stop();
  }
  // The floors, in the same run: the same phases against hand-written servers (bench/peers/notify-floor.ts,
  // catch-up-floor.ts), so that each ratio has the least a server pays for the same work beside it.
  const floorDir = freshDataDir(ctx.dataRoot, 'readers-floor');
  ctx.track(floorDir);
  const notifyFloor = await spawnPeer('bench/peers/notify-floor.ts', { env: { DATA_DIR: floorDir } });
  let floor: UnreadStreams;
  try {
    floor = await writesWithUnreadStreams(ctx, notifyFloor.url, opts, 'the floor');
  } finally {
    await notifyFloor.stop();
  }
  const catchUpFloor = await spawnPeer('bench/peers/catch-up-floor.ts', { env: { EVENTS: String(events) } });
  let floorCatchUp: CatchUpGets;
  const floorPool = new Pool(catchUpFloor.url, { connections: 1, pipelining: 1, keepAliveTimeout: 60_000 });
  try {
    floorCatchUp = await getsWhileReadersCatchUp(ctx, catchUpFloor.url, floorPool, { readers: opts.readers, gets: opts.gets, events });
  } finally {
    await floorPool.close();
    await catchUpFloor.stop();
  }
  return {
    streams: opts.streams,
    subscriptions: opts.subscriptions,
    setPriceP99MsWithout: ours.without.p99,
    setPriceP99MsWith: ours.with.p99,
    setPricesPerSecWithout: ours.without.perSec,
    setPricesPerSecWith: ours.with.perSec,
    events,
    readers: opts.readers,
    getP99MsIdle: catchUp.idleP99Ms,
    getP99MsWhileCatchingUp: catchUp.busyP99Ms,
    getsWhileCatchingUp: catchUp.busyGets,
    caughtUp: catchUp.caughtUp,
    floor: {
      setPriceP99MsWithout: floor.without.p99,
      setPriceP99MsWith: floor.with.p99,
      setPricesPerSecWithout: floor.without.perSec,
      setPricesPerSecWith: floor.with.perSec,
      getP99MsIdle: floorCatchUp.idleP99Ms,
      getP99MsWhileCatchingUp: floorCatchUp.busyP99Ms,
      caughtUp: floorCatchUp.caughtUp,
    },
  };
}

interface WritePhase {
  p99: number;
  perSec: number;
}

interface UnreadStreams {
  without: WritePhase;
  with: WritePhase;
}

/**
 * On a fresh server at `url` (ours, or the floor): `subscriptions` products seeded, set_price p99 without streams
 * (after a warm-up phase), then with `streams` listen streams that never read, each following every product.
 */
async function writesWithUnreadStreams(ctx: Pick<BenchContext, 'phase'>, url: string, opts: ReadersOptions, who: string): Promise<UnreadStreams> {
  const pool = new Pool(url, { connections: opts.concurrency, pipelining: 1, keepAliveTimeout: 60_000 });
  const subs: Subscriber[] = [];
  const products = Math.max(opts.subscriptions, 1);
  try {
    await seedProducts(url, products);
    let price = 1;
    const writes = async (): Promise<WritePhase> => {
      const h = new LatencyHistogram();
      let next = 0;
      const t0 = performance.now();
      await Promise.all(Array.from({ length: opts.concurrency }, async () => {
        while (next < opts.writes) {
          const i = next++;
          const req = restSetPrice(1 + (i % products), 1 + (price++ % 1000));
          const s = performance.now();
          const res = await pool.request({ method: req.method, path: req.path, headers: req.headers, body: req.body });
          const body = await res.body.text();
          if (!isRow(res.statusCode, body, 200)) throw new Error(`set_price (${who}): HTTP ${res.statusCode} ${body.slice(0, 200)}`);
          h.record((performance.now() - s) * 1000);
        }
      }));
      return { p99: h.percentile(99) / 1000, perSec: opts.writes / ((performance.now() - t0) / 1000) };
    };
    ctx.phase(`readers (${who}): set_price without streams (${opts.writes} at ${opts.concurrency} in flight)`);
    await writes(); // warm
    const without = await writes();
    ctx.phase(`readers (${who}): opening ${opts.streams} unread listen streams x ${opts.subscriptions} subscriptions`);
    const uris = Array.from({ length: opts.subscriptions }, (_, i) => `wo://products/${i + 1}`);
    for (let i = 0; i < opts.streams; i += 50) {
      subs.push(...(await Promise.all(Array.from({ length: Math.min(50, opts.streams - i) }, (_, j) => openListen(url, 2_000_000 + i + j, uris, { paused: true })))));
    }
    ctx.phase(`readers (${who}): set_price with the unread streams open`);
    return { without, with: await writes() };
  } finally {
    for (const s of subs) s.close();
    await pool.close();
  }
}

export interface CatchUpGets {
  idleP99Ms: number;
  busyP99Ms: number;
  /** GETs answered while the readers were still catching up */
  busyGets: number;
  caughtUp: boolean;
  /** The server's CPU time (user + system) from the readers' start until they caught up, when its pid was given. */
  serverCpuMs?: number;
}

/** A process's CPU time so far (user + system), in ms (clock ticks of 10 ms). */
const cpuMs = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

/**
 * `GET /api/products/1` one at a time on `pool`: `gets` idle (after 100 to warm up), then, at most `gets`, while
 * `readers` readers of `/api/_events?from=0` catch up on the `events` events of the log.
 */
export async function getsWhileReadersCatchUp(
  ctx: Pick<BenchContext, 'phase'>,
  url: string,
  pool: Pool,
  opts: { readers: number; gets: number; events: number; serverPid?: number },
): Promise<CatchUpGets> {
  const get = async () => {
    const req = restGet(1);
    const s = performance.now();
    const res = await pool.request({ method: req.method, path: req.path });
    await res.body.dump();
    if (res.statusCode !== 200) throw new Error(`GET: HTTP ${res.statusCode}`);
    return (performance.now() - s) * 1000;
  };
  ctx.phase(`readers: GET idle (${opts.gets})`);
  for (let i = 0; i < 100; i++) await get();
  const idle = new LatencyHistogram();
  for (let i = 0; i < opts.gets; i++) idle.record(await get());

  ctx.phase(`readers: GET while ${opts.readers} readers catch up on /api/_events?from=0 (${opts.events} events)`);
  // The readers run in a process of their own: in this one, 50 sockets' megabytes arriving at once would stall
  // the event loop that times the GETs, and the client's delay would be counted as the server's.
  const { hostname, port } = new URL(url);
  const readersProcess = spawn(process.execPath, ['-e', READERS_CLIENT], {
    env: { ...process.env, HOST: hostname, PORT: port, READERS: String(opts.readers), LAST_ID: String(opts.events) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let finished = false;
  let connecting: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (connecting = resolve));
  let cpuAtEnd: number | undefined;
  const readers = new Promise<boolean>((resolve) => {
    readersProcess.stdout.on('data', (d: Buffer) => {
      if (String(d).includes('connecting')) connecting();
      if (String(d).includes('caught up')) {
        if (opts.serverPid !== undefined) cpuAtEnd = cpuMs(opts.serverPid);
        resolve((finished = true));
      }
    });
    readersProcess.on('exit', () => { connecting(); resolve(finished); });
  });
  await started;
  const cpuAtStart = opts.serverPid === undefined ? undefined : cpuMs(opts.serverPid);
  const busy = new LatencyHistogram();
  let busyGets = 0;
  while (!finished && busyGets < opts.gets) {
    busy.record(await get());
    busyGets++;
  }
  const caughtUp = await Promise.race([readers, new Promise<boolean>((r) => setTimeout(() => r(false), 60_000))]);
  readersProcess.kill();
  return {
    idleP99Ms: idle.percentile(99) / 1000,
    busyP99Ms: busyGets ? busy.percentile(99) / 1000 : Number.NaN,
    busyGets,
    caughtUp,
    ...(cpuAtStart !== undefined && cpuAtEnd !== undefined ? { serverCpuMs: cpuAtEnd - cpuAtStart } : {}),
  };
}
