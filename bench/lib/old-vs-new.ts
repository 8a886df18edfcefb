// The setup shared by the old-against-new scripts (bench/get-ab.ts, mcp-get-ab.ts, write-ab.ts): the old checkout's
// bench/lib/wo.ts (OLD_ROOT), a data root for fresh dirs, and the rounds, window and in-flight count from the env.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './wo.ts';

export const oldVsNew = async (name: string, defaults: { rounds: number; inFlight: number }) => {
  const old = process.env.OLD_ROOT;
  if (!old) throw new Error('set OLD_ROOT to a checkout of the old code');
  const oldWo: typeof import('./wo.ts') = await import(join(old, 'bench/lib/wo.ts'));
  const dataRoot = process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', `bench-${name}`);
  mkdirSync(dataRoot, { recursive: true });
  return {
    oldWo,
    dir: (label: string) => mkdtempSync(join(dataRoot, `${label}-`)),
    ROUNDS: Number(process.env.ROUNDS ?? defaults.rounds),
    WIN: Number(process.env.WIN ?? 3000),
    C: Number(process.env.C ?? defaults.inFlight),
  };
};
