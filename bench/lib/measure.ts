// One measured load window against a spawned server: the generator's figures (calls/s, latency) plus
// the server's CPU and RSS from /proc, the generator's own CPU, and how busy the rest of the machine was.
// Shared by bench/core.ts and bench/run.ts.
import { cpuBetween, cpuMsPerCall, rssBytes, sampleCpu, sampleSystemCpu } from './cpu.ts';
import { LatencyHistogram } from './histogram.ts';
import { runLoad, type LoadOptions, type LoadResult } from './load.ts';
import type { SpawnedServer } from './wo.ts';

export interface Measured {
  load: LoadResult;
  srvCpuMsPerCall: number;
  genCpuMsPerCall: number;
  /** Cores the server kept busy (1.0 = one core: its JS runs on one thread). */
  srvCores: number;
  /** Cores busy with anything but this server and this generator (a noisy neighbour shows here). */
  otherCores: number;
  srvRssMb: number;
}

export type Load = Omit<LoadOptions, 'durationMs' | 'totalRequests'>;

/** Fails loudly, with the child's stderr, when a server died under load. */
export function assertAlive(server: SpawnedServer, what: string): void {
  const report = server.exitReport();
  if (report !== undefined) throw new Error(`${what}: the server ${report}`);
}

/** Runs `f`; if the server died meanwhile, its exit and stderr replace whatever error `f` threw. */
export async function watched<A>(server: SpawnedServer, what: string, f: () => Promise<A>): Promise<A> {
  try {
    return await f();
  } finally {
    assertAlive(server, what);
  }
}

export async function measure(server: SpawnedServer, load: Load, durationMs: number): Promise<Measured> {
  assertAlive(server, `before measuring ${load.url}`);
  const srv0 = sampleCpu(server.pid);
  const gen0 = sampleCpu(process.pid);
  const sys0 = sampleSystemCpu();
  const r = await runLoad({ ...load, durationMs });
  assertAlive(server, `measuring ${load.url}`);
  const srv = cpuBetween(srv0, sampleCpu(server.pid));
  const gen = cpuBetween(gen0, sampleCpu(process.pid));
  const sys = cpuBetween(sys0, sampleSystemCpu());
  if (r.errors > 0) console.error(`  ${load.url}: ${r.errors} errors, first: ${r.firstError}`);
  return {
    load: r,
    srvCpuMsPerCall: cpuMsPerCall(srv, r.calls),
    genCpuMsPerCall: cpuMsPerCall(gen, r.calls),
    srvCores: srv.utilisation,
    otherCores: Math.max(0, sys.cpuMs - srv.cpuMs - gen.cpuMs) / sys.wallMs,
    srvRssMb: rssBytes(server.pid) / 2 ** 20,
  };
}

/** Sums several windows of one scenario into one (CPU per call over all calls). Percentiles come from the
 *  merged latency histograms when every window has one, else (as before) from the worst window. */
export function combine(ms: Measured[]): Measured {
  if (ms.length === 1) return ms[0];
  const calls = ms.reduce((a, m) => a + m.load.calls, 0);
  const wall = ms.reduce((a, m) => a + m.load.durationMs, 0);
  const weighted = (f: (m: Measured) => number) => ms.reduce((a, m) => a + f(m) * m.load.calls, 0) / calls;
  const worst = (f: (m: LoadResult) => number) => Math.max(...ms.map((m) => f(m.load)));
  const merged = ms.every((m) => m.load.histogram)
    ? ms.reduce((h, m) => h.merge(m.load.histogram!), new LatencyHistogram())
    : undefined;
  const pct = (p: number, f: (l: LoadResult) => number) => (merged ? merged.percentile(p) / 1000 : worst(f));
  return {
    load: {
      ...ms[0].load,
      calls,
      errors: ms.reduce((a, m) => a + m.load.errors, 0),
      durationMs: wall,
      callsPerSec: calls / (wall / 1000),
      p50Ms: pct(50, (l) => l.p50Ms),
      p99Ms: pct(99, (l) => l.p99Ms),
      p999Ms: pct(99.9, (l) => l.p999Ms),
      maxMs: worst((l) => l.maxMs),
      ...(merged ? { histogram: merged } : {}),
      meanMs: weighted((m) => m.load.meanMs),
      clientCpuMsPerCall: weighted((m) => m.load.clientCpuMsPerCall),
    },
    srvCpuMsPerCall: weighted((m) => m.srvCpuMsPerCall),
    genCpuMsPerCall: weighted((m) => m.genCpuMsPerCall),
    srvCores: ms.reduce((a, m) => a + m.srvCores * m.load.durationMs, 0) / wall,
    otherCores: ms.reduce((a, m) => a + m.otherCores * m.load.durationMs, 0) / wall,
    srvRssMb: Math.max(...ms.map((m) => m.srvRssMb)),
  };
}
