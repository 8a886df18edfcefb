// Per-process CPU and memory from /proc, so server cost can be reported per call
// independently of how much CPU the load generator burns on the same cores.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let clockTicks: number | undefined;

/** USER_HZ, the unit of utime/stime in /proc/<pid>/stat; read once. */
export function clockTicksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

export interface CpuSample {
  /** user + system CPU consumed so far, in milliseconds (all threads). */
  cpuMs: number;
  /** wall clock at the sample, for utilisation. */
  atMs: number;
}

export function sampleCpu(pid: number): CpuSample {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // comm (field 2) may contain spaces and parentheses: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { cpuMs: (ticks * 1000) / clockTicksPerSecond(), atMs: performance.now() };
}

export interface CpuDelta {
  cpuMs: number;
  wallMs: number;
  /** cores busy on average over the window (1.0 = one core). */
  utilisation: number;
}

export function cpuBetween(before: CpuSample, after: CpuSample): CpuDelta {
  const cpuMs = after.cpuMs - before.cpuMs;
  const wallMs = after.atMs - before.atMs;
  return { cpuMs, wallMs, utilisation: wallMs > 0 ? cpuMs / wallMs : 0 };
}

/** CPU ms per call; NaN when no call completed. Resolution is one tick (10 ms) over the whole window. */
export function cpuMsPerCall(delta: CpuDelta, calls: number): number {
  return calls > 0 ? delta.cpuMs / calls : Number.NaN;
}

/**
 * Resident set size in bytes (VmRSS: all of it), or one of its parts: RssAnon (the heap and other private memory),
 * RssFile (mapped files: the node binary, LevelDB's table files; clean pages the kernel drops under pressure),
 * RssShmem. NaN if the process is gone.
 */
export function rssBytes(pid: number, part: 'VmRSS' | 'RssAnon' | 'RssFile' | 'RssShmem' = 'VmRSS'): number {
  try {
    const m = new RegExp(`^${part}:\\s+(\\d+)\\s+kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** The memory the process itself holds (RssAnon + RssShmem): resident memory but the mapped files the kernel can reclaim. */
export const privateRssBytes = (pid: number): number => rssBytes(pid, 'RssAnon') + rssBytes(pid, 'RssShmem');

/** Machine-wide busy CPU (all processes, all cores) in ms, from /proc/stat; for spotting noisy neighbours. */
export function sampleSystemCpu(): CpuSample {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal ...: busy = everything but idle and iowait
  const busyTicks = cpu.reduce((a, b) => a + b, 0) - cpu[3] - (cpu[4] ?? 0);
  return { cpuMs: (busyTicks * 1000) / clockTicksPerSecond(), atMs: performance.now() };
}
