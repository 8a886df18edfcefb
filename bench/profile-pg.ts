// Where one `wo run --store postgres://...` node's time and CPU go per durable write (issue 22): a PostgreSQL
// primary and two synchronous standbys (scripts/pg-cluster.sh), one node under --cpu-prof, creates at
// BENCH_IN_FLIGHT (default 32) in flight for one measured window after a warm-up. Prints writes/s, batches/s, events
// per batch, the mean append (commit) time and the round trips per batch (PostgreSQL's statement count for the
// window, from pg_stat_statements when loaded, else from pg_stat_database's transactions), then the node's CPU by
// function for the window (bench/lib/cpuprofile.ts). Profile: bench/results/pg-node.cpuprofile (git-ignored).
//   node --conditions=writeonce-source --import tsx bench/profile-pg.ts
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { monoUs, readWindow, renderSelfTimes } from './lib/cpuprofile.ts';
import { runLoad } from './lib/load.ts';
import { isRow, repoRoot, restCreate } from './lib/wo.ts';
import { spawnWo } from '../testkit/spawn.ts';

const IN_FLIGHT = Number(process.env.BENCH_IN_FLIGHT ?? 32);
const LOAD_MS = Number(process.env.BENCH_PROFILE_MS ?? 5000);
const SCRIPT = join(repoRoot, 'scripts/pg-cluster.sh');

const metric = (text: string, name: string) =>
  text.split('\n').filter((l) => l.startsWith(name)).reduce((a, l) => a + Number(l.split(' ').pop()), 0);

const dir = mkdtempSync(join(tmpdir(), 'wo-profile-pg-'));
chmodSync(dir, 0o755); // the servers run as the postgres user
const base = 20_000 + Math.floor(Math.random() * 12_000);
const url = execFileSync('bash', [SCRIPT, 'start', join(dir, 'pg'), String(base)], { encoding: 'utf8' }).trim().split('\n').pop()!;
const profDir = join(dir, 'prof');
const admin = new pg.Client({ host: '127.0.0.1', port: base, user: 'postgres', database: 'postgres' });
let node: Awaited<ReturnType<typeof spawnWo>> | undefined;
try {
  await admin.connect();
  const wo = await spawnWo(['run', 'examples/pricing', '--data', join(dir, 'node'), '--listen', '127.0.0.1:0', '--store', url], {
    readyTimeoutMs: 30_000,
    stopTimeoutMs: 10_000,
    env: { WO_LOG_LEVEL: 'Info' },
    nodeArgs: ['--cpu-prof', '--cpu-prof-dir', profDir],
  });
  node = wo;
  const load = (ms: number) =>
    runLoad({ url: wo.url, concurrency: IN_FLIGHT, durationMs: ms, makeRequest: restCreate, check: (s, b) => isRow(s, b, 201) });
  await load(2000);
  const scrape = async () => {
    const m = await (await fetch(`${wo.url}/metrics`)).text();
    const x = await admin.query<{ n: string }>('select sum(xact_commit + xact_rollback)::text as n from pg_stat_database');
    return { batches: metric(m, 'wo_batches_total'), events: metric(m, 'wo_batch_events_sum'), commitS: metric(m, 'wo_commit_duration_seconds_sum'), xacts: Number(x.rows[0].n) };
  };
  const before = await scrape();
  const from = monoUs();
  const r = await load(LOAD_MS);
  const to = monoUs();
  await new Promise((res) => setTimeout(res, 600)); // the statistics collector's flush
  const after = await scrape();
  const batches = after.batches - before.batches;
  console.log(`${IN_FLIGHT} in flight, ${(r.calls / (r.durationMs / 1000)).toFixed(0)} creates/s, ${r.errors} errors`);
  console.log(`batches ${batches} (${(batches / (r.durationMs / 1000)).toFixed(0)}/s), ${((after.events - before.events) / batches).toFixed(1)} events/batch, append ${(((after.commitS - before.commitS) / batches) * 1000).toFixed(2)} ms mean`);
  console.log(`PostgreSQL transactions per batch (every connection: appends, the tailer's reads, polls): ${((after.xacts - before.xacts) / batches).toFixed(2)}`);
  await wo.stop();
  const prof = await readWindow(profDir, from, to, join(repoRoot, 'bench', 'results', 'pg-node.cpuprofile'));
  console.log(renderSelfTimes(prof, r.calls, Number(process.env.BENCH_TOP ?? 25), 'create'));
} finally {
  await admin.end().catch(() => undefined);
  await node?.stop().catch(() => undefined);
  execFileSync('bash', [SCRIPT, 'stop', join(dir, 'pg')]);
  rmSync(dir, { recursive: true, force: true });
}
