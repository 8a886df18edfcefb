// Closed-loop HTTP load generator on undici: `concurrency` workers, each with its own keep-alive
// connection (pipelining 1), each sending its next request as soon as the previous answer is read.
// Every run is bounded by both a request count and a wall-clock deadline.
import { Pool } from 'undici';
import { LatencyHistogram } from './histogram.ts';

export interface LoadRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export type ResponseHeaders = Record<string, string | string[] | undefined>;

export interface LoadOptions {
  /** Origin (or any URL on it) to send to; request paths come from makeRequest. */
  url: string;
  concurrency: number;
  durationMs?: number;
  totalRequests?: number;
  /** `i` is a run-wide sequence number (unique, so usable as a JSON-RPC id); `worker` is 0..concurrency-1. */
  makeRequest: (i: number, worker: number) => LoadRequest;
  /** Decides success; default is any status below 400. */
  check?: (status: number, body: string, headers: ResponseHeaders) => boolean;
  /** Per-request headers and body timeout (default 10 s). */
  requestTimeoutMs?: number;
  /** Stop early after this many failures, so a dead server does not spin the loop (default 10,000). */
  maxErrors?: number;
  /** Called for every answered request (passed or not) with its send and receive times (performance.now()). */
  onResponse?: (i: number, status: number, body: string, sentAt: number, receivedAt: number) => void;
}

export interface LoadResult {
  /** requests that passed `check` */
  calls: number;
  errors: number;
  durationMs: number;
  callsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  meanMs: number;
  /** CPU the load generator itself spent per call (it shares the cores with the server). */
  clientCpuMsPerCall: number;
  firstError?: string;
  /** The latencies themselves (µs), for merging windows exactly. */
  histogram?: LatencyHistogram;
}

const MAX_DURATION_MS = 10 * 60_000;
const MAX_REQUESTS = 100_000_000;

export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  if (!(opts.concurrency >= 1)) throw new Error('concurrency must be >= 1');
  const total = Math.min(opts.totalRequests ?? MAX_REQUESTS, MAX_REQUESTS);
  const durationMs = Math.min(opts.durationMs ?? (opts.totalRequests ? 120_000 : 10_000), MAX_DURATION_MS);
  const maxErrors = opts.maxErrors ?? 10_000;
  const timeout = opts.requestTimeoutMs ?? 10_000;
  const check = opts.check ?? ((status: number) => status < 400);

  const pool = new Pool(new URL(opts.url).origin, {
    connections: opts.concurrency,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    headersTimeout: timeout,
    bodyTimeout: timeout,
  });
  const hist = new LatencyHistogram();
  let next = 0;
  let errors = 0;
  let firstError: string | undefined;

  const started = performance.now();
  const deadline = started + durationMs;
  const cpuBefore = process.cpuUsage();

  const fail = (why: string): void => {
    errors++;
    firstError ??= why;
  };

  const worker = async (w: number): Promise<void> => {
    while (next < total && errors < maxErrors && performance.now() < deadline) {
      const i = next++;
      const req = opts.makeRequest(i, w);
      const t0 = performance.now();
      try {
        const res = await pool.request({ method: req.method, path: req.path, headers: req.headers, body: req.body });
        const body = await res.body.text();
        const t1 = performance.now();
        const elapsedUs = (t1 - t0) * 1000;
        opts.onResponse?.(i, res.statusCode, body, t0, t1);
        if (check(res.statusCode, body, res.headers)) hist.record(elapsedUs);
        else fail(`HTTP ${res.statusCode}: ${body.slice(0, 200)}`);
      } catch (err) {
        fail(String((err as Error).message ?? err));
      }
    }
  };

  try {
    await Promise.all(Array.from({ length: opts.concurrency }, (_, w) => worker(w)));
  } finally {
    await pool.close();
  }

  const elapsed = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  const calls = hist.count;
  return {
    calls,
    errors,
    durationMs: elapsed,
    callsPerSec: calls / (elapsed / 1000),
    p50Ms: hist.percentile(50) / 1000,
    p99Ms: hist.percentile(99) / 1000,
    p999Ms: hist.percentile(99.9) / 1000,
    maxMs: hist.max() / 1000,
    meanMs: hist.meanUs() / 1000,
    clientCpuMsPerCall: calls ? (cpu.user + cpu.system) / 1000 / calls : Number.NaN,
    ...(firstError === undefined ? {} : { firstError }),
    histogram: hist,
  };
}
