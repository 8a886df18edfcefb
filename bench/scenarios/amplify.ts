// Bad bodies cannot starve the server, on one `wo run examples/pricing`: plain
// `GET /api/products/1` p99, one at a time, idle, then while `senders` clients each send 3 MB bodies of 200,000
// unknown keys to `POST /api/products` back to back; the ratio of the two p99s. Also each bad answer's size
// (bounded: at most 20 issues and a count), the time one takes and the server's CPU per bad body. The same, in
// the same run, against the floor (bench/peers/bad-body-floor.ts: plain node:http that JSON.parses the body).
import { Pool } from 'undici';
import { sampleCpu } from '../lib/cpu.ts';
import { LatencyHistogram } from '../lib/histogram.ts';
import { freshDataDir, restGet, seedProducts, spawnPeer, startWo } from '../lib/wo.ts';
import type { BenchContext } from './context.ts';

export interface AmplifyOptions {
  /** clients sending bad bodies at once */
  senders: number;
  /** unknown keys per bad body (17 bytes each: 200,000 make 3.4 MB) */
  unknownKeys: number;
  /** GETs measured idle, and as many while the bad bodies are answered */
  gets: number;
}

export interface AmplifyMeasure {
  senders: number;
  badBodyBytes: number;
  /** the largest 400 answered to a bad body */
  errorBodyBytesMax: number;
  badBodiesAnswered: number;
  /** bad bodies whose connection failed instead of being answered */
  badBodyResets: number;
  /** GETs retried because their kept-alive connection was reset (their time counts from the first try) */
  getResets: number;
  badBodyMsMean: number;
  getP99MsIdle: number;
  getP99MsWithBadBodies: number;
  getsWithBadBodies: number;
  /** the server's CPU (all threads) per bad body answered, over the busy phase */
  serverCpuMsPerBadBody?: number;
}

export interface AmplifyResult extends AmplifyMeasure {
  /** the floor's figures, measured in the same run (undefined when it was not) */
  floor?: AmplifyMeasure;
}

/** A products create with `n` keys no product has. */
export const badBody = (n: number) =>
  `{"name":"x","price":1,"currency":"EUR",${Array.from({ length: n }, (_, i) => `"x${String(i).padStart(11, '0')}":0`).join(',')}}`;

export async function runAmplify(ctx: BenchContext, opts: AmplifyOptions): Promise<AmplifyResult> {
  const dir = freshDataDir(ctx.dataRoot, 'amplify');
  ctx.track(dir);
  const server = await startWo({ dir, env: {}, readyTimeoutMs: 60_000 });
  let ours: AmplifyMeasure;
  try {
    await seedProducts(server.url, 1);
    ours = await measureAmplify(ctx, server.url, opts, server.pid);
  } finally {
    await server.stop();
  }
  const peer = await spawnPeer('bench/peers/bad-body-floor.ts');
  try {
    return { ...ours, floor: await measureAmplify(ctx, peer.url, opts, peer.pid) };
  } finally {
    await peer.stop();
  }
}

/** The scenario against a server (ours or the floor) that has product 1. */
export async function measureAmplify(ctx: Pick<BenchContext, 'phase' | 'warn'>, url: string, opts: AmplifyOptions, serverPid?: number): Promise<AmplifyMeasure> {
  const gets = new Pool(url, { connections: 1, pipelining: 1, keepAliveTimeout: 60_000 });
  const senders = new Pool(url, { connections: opts.senders, pipelining: 1, keepAliveTimeout: 60_000, bodyTimeout: 120_000, headersTimeout: 120_000 });
  try {
    const body = badBody(opts.unknownKeys);
    let getResets = 0;
    const get = async () => {
      const req = restGet(1);
      const s = performance.now();
      for (let attempt = 1; ; attempt++) {
        try {
          const res = await gets.request({ method: req.method, path: req.path });
          await res.body.dump();
          if (res.statusCode !== 200) throw new Error(`GET: HTTP ${res.statusCode}`);
          return (performance.now() - s) * 1000;
        } catch (e) {
          // A kept-alive connection the server closed while its event loop was busy: retried, its time counted.
          if ((e as { code?: string }).code !== 'ECONNRESET' || attempt > 3) throw e;
          getResets++;
        }
      }
    };
    ctx.phase(`amplify: GET idle (${opts.gets})`);
    for (let i = 0; i < 100; i++) await get();
    const idle = new LatencyHistogram();
    for (let i = 0; i < opts.gets; i++) idle.record(await get());

    ctx.phase(`amplify: GET while ${opts.senders} clients send ${(body.length / 1e6).toFixed(1)} MB bad bodies`);
    let sending = true;
    let answered = 0;
    let errorBodyBytesMax = 0;
    let badMs = 0;
    let failure: unknown;
    let resets = 0;
    const send = async () => {
      while (sending && failure === undefined) {
        const s = performance.now();
        let res;
        let text;
        try {
          res = await senders.request({ method: 'POST', path: '/api/products', headers: { 'content-type': 'application/json' }, body });
          text = await res.body.text();
        } catch (e) {
          // The server's slowloris guard (WO_REQUEST_TIMEOUT_MS) closes a connection whose body waited too long
          // to be read: counted, not fatal (it happens when the machine is far busier than the bench).
          if (!sending) return;
          resets++;
          ctx.warn(`amplify: a bad body's connection failed: ${(e as Error).message}`);
          continue;
        }
        if (res.statusCode !== 400) throw new Error(`bad body: HTTP ${res.statusCode} ${text.slice(0, 200)}`);
        badMs += performance.now() - s;
        answered++;
        errorBodyBytesMax = Math.max(errorBodyBytesMax, Buffer.byteLength(text));
      }
    };
    // A sender's failure is kept and rethrown below, after every sender has stopped.
    const running = Array.from({ length: opts.senders }, () => send().catch((e) => void (failure ??= e)));
    await new Promise((r) => setTimeout(r, 200)); // the bodies are on their way
    const busy = new LatencyHistogram();
    let busyGets = 0;
    const cpuBefore = serverPid === undefined ? undefined : sampleCpu(serverPid).cpuMs;
    const answeredBefore = answered;
    try {
      while (busyGets < opts.gets && failure === undefined) {
        busy.record(await get());
        busyGets++;
      }
    } finally {
      sending = false;
      await Promise.all(running);
    }
    const cpuMs = serverPid === undefined || cpuBefore === undefined ? undefined : sampleCpu(serverPid).cpuMs - cpuBefore;
    if (failure !== undefined) throw failure;
    return {
      senders: opts.senders,
      badBodyBytes: body.length,
      errorBodyBytesMax,
      badBodiesAnswered: answered,
      badBodyResets: resets,
      getResets,
      badBodyMsMean: answered ? badMs / answered : Number.NaN,
      getP99MsIdle: idle.percentile(99) / 1000,
      getP99MsWithBadBodies: busy.percentile(99) / 1000,
      getsWithBadBodies: busyGets,
      ...(cpuMs !== undefined && answered > answeredBefore ? { serverCpuMsPerBadBody: cpuMs / (answered - answeredBefore) } : {}),
    };
  } finally {
    await gets.close();
    await senders.close();
  }
}
