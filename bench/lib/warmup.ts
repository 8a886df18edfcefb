// Warm a server until its CPU per call stops falling. V8 tiers code up by call count, so a heavy
// server (the MCP SDKs take several seconds here) is still getting cheaper long after a fixed short
// warm-up; measuring before it settles would overstate its cost.
import { cpuBetween, sampleCpu } from './cpu.ts';
import { runLoad, type LoadOptions } from './load.ts';

export interface WarmupOptions {
  load: Omit<LoadOptions, 'durationMs' | 'totalRequests'>;
  pid: number;
  chunkMs?: number;
  /** Give up (and measure anyway) after this long. */
  maxMs?: number;
  /** Stable when consecutive chunks differ by less than this fraction. */
  tolerance?: number;
  /** Never call it stable before this many calls (default 5,000): two slow early chunks look alike. */
  minCalls?: number;
}

export interface WarmupResult {
  ms: number;
  calls: number;
  stable: boolean;
  lastCpuMsPerCall: number;
  errors: number;
  firstError?: string;
}

export async function warmUntilStable(opts: WarmupOptions): Promise<WarmupResult> {
  const chunkMs = opts.chunkMs ?? 1000;
  const maxMs = opts.maxMs ?? 10_000;
  const tolerance = opts.tolerance ?? 0.1;
  const minCalls = opts.minCalls ?? 5000;
  const started = performance.now();
  let prev = Number.NaN;
  let calls = 0;
  let errors = 0;
  let firstError: string | undefined;
  let stable = false;
  while (performance.now() - started < maxMs) {
    const before = sampleCpu(opts.pid);
    const r = await runLoad({ ...opts.load, durationMs: chunkMs });
    const perCall = cpuBetween(before, sampleCpu(opts.pid)).cpuMs / Math.max(1, r.calls);
    calls += r.calls;
    errors += r.errors;
    firstError ??= r.firstError;
    if (r.calls === 0) break; // nothing works; let the measured run report it
    stable = calls >= minCalls && Math.abs(perCall - prev) <= tolerance * prev;
    prev = perCall;
    if (stable) break;
  }
  return {
    ms: performance.now() - started,
    calls,
    stable,
    lastCpuMsPerCall: prev,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
  };
}
