/**
 * A scenario run on its own (`node --conditions=writeonce-source --import tsx bench/scenarios/<name>.ts`): the
 * context `npm run bench` would give it, progress and warnings on stderr, its section on stdout, and its data under
 * a directory of its own, removed when it ends whatever happens (kept with `--keep`).
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BenchContext, Mode } from '../scenarios/context.ts';

/** Whether the module at `url` is the script node was asked to run (and not a module `npm run bench` imports). */
export const isMain = (url: string) => process.argv[1] !== undefined && url === pathToFileURL(process.argv[1]).href;

/** The mode the command line asks for: `--smoke`, `--quick`, else a full run. */
export const modeOfArgs = (): Mode => (process.argv.includes('--smoke') ? 'smoke' : process.argv.includes('--quick') ? 'quick' : 'full');

/** The value after `--<name>` on the command line, if any. */
export const argOf = (name: string): string | undefined => {
  const at = process.argv.indexOf(`--${name}`);
  return at < 0 ? undefined : process.argv[at + 1];
};

export async function runAlone(name: string, mode: Mode, section: (ctx: BenchContext) => Promise<string>): Promise<void> {
  // On BENCH_DATA_DIR's disk when set, as `npm run bench`; readable by the postgres user, whose servers the
  // PostgreSQL scenarios start with their folders under it.
  const parent = process.env.BENCH_DATA_DIR ?? tmpdir();
  mkdirSync(parent, { recursive: true });
  const dataRoot = mkdtempSync(join(parent, `wo-bench-${name}-`));
  chmodSync(dataRoot, 0o755);
  const started = performance.now();
  const ctx: BenchContext = {
    mode,
    dataRoot,
    phase: (what) => process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(1)} s] ${what}\n`),
    warn: (what) => process.stderr.write(`warning: ${what}\n`),
    // Every data dir is under dataRoot, removed as a whole.
    track: () => undefined,
  };
  try {
    process.stdout.write(`${await section(ctx)}\n`);
  } finally {
    if (process.argv.includes('--keep')) process.stderr.write(`kept ${dataRoot}\n`);
    else rmSync(dataRoot, { recursive: true, force: true });
  }
}
