// The disk's raw durable-append rate: 100-byte append + fsync, one at a time, in the data dir.
// This is the baseline group commit is judged against (architecture.md, "Performance budgets").
// Synchronous on purpose: the thread-pool hop of async fs would understate the disk.
import { closeSync, fsyncSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export interface FsyncOptions {
  dir: string;
  durationMs: number;
  /** Upper bound on iterations, whatever the disk speed (default 1,000,000). */
  maxOps?: number;
}

export function measureFsyncRate({ dir, durationMs, maxOps = 1_000_000 }: FsyncOptions): number {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `fsync-probe-${process.pid}.bin`);
  const record = Buffer.alloc(100, 0x61);
  const fd = openSync(file, 'a');
  let ops = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  try {
    while (ops < maxOps && performance.now() < deadline) {
      writeSync(fd, record);
      fsyncSync(fd);
      ops++;
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  return ops / ((performance.now() - started) / 1000);
}
