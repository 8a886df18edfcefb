// A PostgreSQL cluster of the old-against-new PG scripts (pg-ab.ts, pg-append-ab.ts): a primary and two synchronous
// standbys started by scripts/pg-cluster.sh in a temp dir, a URL per database, and the CPU of this cluster's
// processes alone (its three postmasters and their children, from /proc), so that other postgres servers on the
// machine do not count.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clockTicksPerSecond } from './cpu.ts';
import { repoRoot } from './wo.ts';

const SCRIPT = join(repoRoot, 'scripts/pg-cluster.sh');

export interface BenchCluster {
  /** the temp dir: the cluster's folders, and room for the nodes' data dirs */
  readonly dir: string;
  /** the primary's port */
  readonly port: number;
  /** the cluster's URL with another database name */
  readonly urlOf: (db: string) => string;
  /** CPU ms used so far by this cluster's servers and backends */
  readonly cpuMs: () => number;
  readonly stop: () => void;
}

/** Whether PostgreSQL's binaries are here: Debian's layout, else initdb on PATH (scripts/pg-cluster.sh's search). */
export const havePostgres = (): boolean => {
  try {
    if (readdirSync('/usr/lib/postgresql').some((v) => existsSync(`/usr/lib/postgresql/${v}/bin/initdb`))) return true;
  } catch {
    // not Debian's layout
  }
  return (process.env.PATH ?? '').split(':').some((d) => d !== '' && existsSync(join(d, 'initdb')));
};

/** Three consecutive free loopback ports, below Linux's ephemeral range (32768+: outgoing connections take those). */
export async function freeBasePort(): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
    });
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 12_000);
    if ((await free(base)) && (await free(base + 1)) && (await free(base + 2))) return base;
  }
}

export const startBenchCluster = (prefix: string): BenchCluster => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755); // the servers run as the postgres user
  const base = 20_000 + Math.floor(Math.random() * 12_000);
  const url = execFileSync('bash', [SCRIPT, 'start', join(dir, 'pg'), String(base)], { encoding: 'utf8' }).trim().split('\n').pop()!;
  const postmasters = () => ['primary', 's1', 's2'].map((n) => Number(readFileSync(join(dir, 'pg', n, 'postmaster.pid'), 'utf8').split('\n')[0]));
  const cpuMs = () => {
    const roots = new Set(postmasters());
    let ticks = 0;
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (!roots.has(Number(pid)) && !roots.has(Number(f[1]))) continue;
        ticks += Number(f[11]) + Number(f[12]);
      } catch {
        // gone meanwhile
      }
    }
    return (ticks * 1000) / clockTicksPerSecond();
  };
  return {
    dir,
    port: base,
    urlOf: (db) => url.replace(/\/[^/?]+(\?|$)/, `/${db}$1`),
    cpuMs,
    stop: () => {
      execFileSync('bash', [SCRIPT, 'stop', join(dir, 'pg')]);
      rmSync(dir, { recursive: true, force: true });
    }
  };
};
