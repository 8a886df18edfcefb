// Stall isolation (a slow reader stalls only its own stream). One fresh server, one hot row
// (wo://products/1) under durable set_price load (REST, `concurrency` in flight), one healthy legacy
// subscriber (a session GET stream, read promptly), measured twice:
//   without: nothing else;
//   with:    plus a second legacy session subscribed to the same row whose GET stream socket stops reading
//            right after the response head (a stalled client: the kernel buffers fill, then the server's
//            bounded per-stream buffer, then the server closes that stream).
// Reported per phase: the server's peak RSS (sampled every 50 ms), the healthy subscriber's notification
// latency (from just before the set_price request whose version it announces was sent, matched by log
// seq), and the set_price latency. For the stalled stream: whether the server ended it, and what it got.
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { Pool } from 'undici';
import { rssBytes } from '../lib/cpu.ts';
import { LatencyHistogram } from '../lib/histogram.ts';
import { runLoad } from '../lib/load.ts';
import { assertAlive } from '../lib/measure.ts';
import { closeLegacySession, legacyRpc, openLegacySession, type LegacySession } from '../../testkit/mcp.ts';
import { openGetStream, type Subscriber } from '../lib/subscribers.ts';
import { freshDataDir, isRow, restSetPrice, seedProducts, startWo } from '../lib/wo.ts';
import type { BenchContext } from './context.ts';
import type { SpawnedServer } from '../lib/wo.ts';

export interface StallOptions {
  durationMs: number;
  concurrency: number;
  /** With the stalled reader: keep the load on until enough commits were made to fill the loopback socket
   *  buffers (probed) plus the server's stream buffer, so the server must close that stream; capped. */
  untilOverflow?: { capMs: number; streamBuffer: number };
}

export interface StallPhase {
  stalledReader: boolean;
  setPrices: number;
  setPricesPerSec: number;
  setPriceP50Ms: number;
  setPriceP99Ms: number;
  healthyNotifications: number;
  healthyMissing: number;
  healthyP50Ms: number;
  healthyP99Ms: number;
  healthyMaxMs: number;
  rssBeforeMb: number;
  rssPeakMb: number;
  rssAfterMb: number;
  /** wall time of the load */
  ms: number;
  /** set_price calls aimed for (with untilOverflow): enough to fill the socket buffers and the stream buffer */
  targetCommits?: number;
  /** the stalled stream, read after the load: notifications that were buffered for it, and whether it had ended */
  stalled?: { bytesBuffered: number; notifications: number; endedByServer: boolean };
}

export interface StallResult {
  phases: StallPhase[];
  /** the data dir, left in place for the replay scenario to build on */
  dir: string;
}

const URI = 'wo://products/1';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const VERSION = /"version":(\d+)/;

async function subscribed(url: string, paused: boolean): Promise<{ session: LegacySession; stream: Subscriber }> {
  const session = await openLegacySession(url);
  await legacyRpc(session, 1, 'resources/subscribe', { uri: URI });
  const stream = await openGetStream(session, { paused });
  return { session, stream };
}

/** How many bytes a loopback TCP connection absorbs when its reader never reads (kernel send + receive buffers). */
export async function probeSocketCapacity(): Promise<number> {
  return new Promise((resolve, reject) => {
    const chunk = Buffer.alloc(4096, 0x61);
    let client: Socket | undefined;
    const srv = createServer((sock) => {
      let written = 0;
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        const bytes = written - sock.writableLength;
        sock.destroy();
        client?.destroy();
        srv.close();
        resolve(bytes);
      };
      const pump = () => {
        clearTimeout(timer);
        while (written < 256 * 2 ** 20 && sock.write(chunk)) written += chunk.length;
        written += chunk.length;
        timer = setTimeout(done, 300); // no drain for 300 ms: the kernel is full
      };
      sock.on('drain', pump);
      sock.on('error', () => undefined);
      pump();
    });
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      client = connect((srv.address() as AddressInfo).port, '127.0.0.1', () => client!.pause());
      client.on('error', () => undefined);
    });
  });
}

/** A legacy GET-stream frame for one notification, as the server writes it (chunk framing included). */
const FRAME_BYTES = Buffer.byteLength('id: get-1234567\nevent: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"wo://products/1"}}\n\n') + 8;

async function phase(server: SpawnedServer, opts: StallOptions, stalledReader: boolean): Promise<StallPhase> {
  const healthy = await subscribed(server.url, false);
  const stalled = stalledReader ? await subscribed(server.url, true) : undefined;
  await sleep(200); // let both GET streams attach

  // Calibrate seq <-> version on the hot row: only this row is written from here on.
  const pool = new Pool(server.url, { connections: 1 });
  const probe = restSetPrice(1, 1);
  const arrivals = new Map<number, number>();
  healthy.stream.onUpdated = (_s, at, seq) => {
    if (seq !== undefined) arrivals.set(seq, at);
  };
  const res = await pool.request({ method: probe.method, path: probe.path, headers: probe.headers, body: probe.body });
  const v0 = Number(VERSION.exec(await res.body.text())?.[1]);
  await pool.close();
  for (let i = 0; i < 100 && arrivals.size === 0; i++) await sleep(10);
  if (arrivals.size === 0) throw new Error('stall: the healthy subscriber got no notification for the probe');
  const offset = Math.max(...arrivals.keys()) - v0; // seq = version + offset

  const sentAtByVersion = new Map<number, number>();
  const rssBefore = rssBytes(server.pid);
  let rssPeak = rssBefore;
  const sampler = setInterval(() => {
    const r = rssBytes(server.pid);
    if (r > rssPeak) rssPeak = r;
  }, 50);
  let load;
  let target: number | undefined;
  if (stalledReader && opts.untilOverflow) {
    const capacity = await probeSocketCapacity();
    target = Math.ceil(1.25 * (capacity / FRAME_BYTES + opts.untilOverflow.streamBuffer));
  }
  try {
    load = await runLoad({
      url: server.url,
      concurrency: opts.concurrency,
      durationMs: target === undefined ? opts.durationMs : opts.untilOverflow!.capMs,
      ...(target === undefined ? {} : { totalRequests: target }),
      makeRequest: (i) => restSetPrice(1, 1 + (i % 1000)),
      check: (status, body) => isRow(status, body, 200),
      onResponse: (_i, status, body, sentAt) => {
        const m = status === 200 ? VERSION.exec(body) : null;
        if (m) sentAtByVersion.set(Number(m[1]), sentAt);
      },
    });
  } finally {
    clearInterval(sampler);
  }
  assertAlive(server, 'stall load');
  await sleep(300); // the healthy subscriber drains
  const rssAfter = rssBytes(server.pid);

  const hist = new LatencyHistogram();
  let missing = 0;
  for (const [version, sentAt] of sentAtByVersion) {
    const at = arrivals.get(version + offset);
    if (at === undefined) missing++;
    else hist.record(Math.max(0, at - sentAt) * 1000);
  }

  let stalledReport: StallPhase['stalled'];
  if (stalled) {
    // Now read what the stalled stream had buffered, and whether the server had already ended it.
    const before = stalled.stream.count;
    stalled.stream.resume();
    // until the server's end arrives, or nothing more comes for 200 ms (2 s at most)
    for (let i = 0, quiet = 0, seen = -1; i < 100 && quiet < 10 && !stalled.stream.ended; i++) {
      await sleep(20);
      quiet = stalled.stream.bytes === seen ? quiet + 1 : 0;
      seen = stalled.stream.bytes;
    }
    stalledReport = {
      bytesBuffered: stalled.stream.bytes,
      notifications: stalled.stream.count - before,
      endedByServer: stalled.stream.ended,
    };
    stalled.stream.close();
    await closeLegacySession(stalled.session).catch(() => undefined);
  }
  healthy.stream.close();
  await closeLegacySession(healthy.session).catch(() => undefined);
  await sleep(200);

  return {
    stalledReader,
    setPrices: load.calls,
    setPricesPerSec: load.callsPerSec,
    setPriceP50Ms: load.p50Ms,
    setPriceP99Ms: load.p99Ms,
    healthyNotifications: hist.count,
    healthyMissing: missing,
    healthyP50Ms: hist.percentile(50) / 1000,
    healthyP99Ms: hist.percentile(99) / 1000,
    healthyMaxMs: hist.max() / 1000,
    rssBeforeMb: rssBefore / 2 ** 20,
    rssPeakMb: rssPeak / 2 ** 20,
    rssAfterMb: rssAfter / 2 ** 20,
    ms: load.durationMs,
    ...(target === undefined ? {} : { targetCommits: target }),
    ...(stalledReport ? { stalled: stalledReport } : {}),
  };
}

export async function runStall(ctx: BenchContext, opts: StallOptions, shared?: { server: SpawnedServer; dir: string }): Promise<StallResult> {
  let dir = shared?.dir;
  let server = shared?.server;
  if (!server || !dir) {
    dir = freshDataDir(ctx.dataRoot, 'stall');
    ctx.track(dir);
    server = await startWo({ dir });
  }
  const phases: StallPhase[] = [];
  try {
    if (!shared) await seedProducts(server.url, 4);
    // Warm the write and notification paths before measuring anything.
    const srv = server;
    await runLoad({ url: srv.url, concurrency: opts.concurrency, durationMs: Math.min(1500, opts.durationMs / 2), makeRequest: (i) => restSetPrice(1, 1 + (i % 1000)) });
    ctx.phase(`stall isolation: hot row under set_price load, healthy subscriber only (${opts.durationMs} ms)`);
    phases.push(await phase(srv, opts, false));
    ctx.phase(`stall isolation: plus a stalled legacy GET stream on the same row (${opts.untilOverflow ? `until its buffers must overflow, at most ${opts.untilOverflow.capMs} ms` : `${opts.durationMs} ms`})`);
    phases.push(await phase(srv, opts, true));
  } finally {
    if (!shared) await server.stop();
  }
  return { phases, dir };
}
