// A process's CPU to the nanosecond: the sum of its threads' time on a CPU (/proc/<pid>/task/*/schedstat, first
// field). /proc/<pid>/stat counts in 10 ms ticks, which for a window of a few hundred ms is a step of several
// percent; a per-lend comparison of two servers needs finer. Threads that ended before the sample are not counted
// (node's threads live as long as the process: the main thread, libuv's pool, V8's workers, LevelDB's own).
import { readdirSync, readFileSync } from 'node:fs';
import { sampleCpu, type CpuSample } from './cpu.ts';

/** CPU used so far by every thread of `pid` (ms, to the ns); the 10 ms ticks of /proc/<pid>/stat where schedstat is missing. */
export function sampleThreadCpu(pid: number): CpuSample {
  let ns = 0;
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread ended between the listing and the read
      }
    }
  } catch {
    return sampleCpu(pid);
  }
  return Number.isFinite(ns) && ns > 0 ? { cpuMs: ns / 1e6, atMs: performance.now() } : sampleCpu(pid);
}
