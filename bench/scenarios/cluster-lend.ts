// Commands on several nodes: `lend` (examples/library: a book's check_out and a loan's create, one atomic command)
// through 3 `wo run --store` nodes against 1 node, on one PostgreSQL primary with two synchronous standbys.
//  - each setup has a database of its own on the same cluster, its nodes started once: the 1-node and 3-node
//    windows alternate (the order reversed every round), so that load from outside falls on both alike;
//  - the load is split evenly over a setup's nodes (one closed-loop generator per node), each lend on a book picked
//    round the seeded ones, to a member picked round the seeded ones (1,000: the sample's keyed view keeps an entry
//    per member, and a single member's entry would grow with every lend of the run): commands of different nodes
//    create loans of the same type, and touch the same books;
//  - lends/s, ack p50/p99, errors (any answer but 200: a 503 among them is a command refused without a conflict),
//    the wo CPU per lend summed over the nodes, and the cluster's PostgreSQL CPU per lend.
// Budget: 3 nodes >= 0.8x one node's lends/s. Three nodes on 2 shared cores cannot show more throughput; what the
// budget catches is the nodes refusing or retrying each other's commands.
//
// Alone: node --conditions=writeonce-source --import tsx bench/scenarios/cluster-lend.ts [--quick|--smoke]
import { join } from 'node:path';
import pg from 'pg';
import { cpuBetween, sampleCpu } from '../lib/cpu.ts';
import { LatencyHistogram } from '../lib/histogram.ts';
import { runLoad, type LoadResult } from '../lib/load.ts';
import { havePostgres, startBenchCluster, type BenchCluster } from '../lib/pg-bench-cluster.ts';
import { freshDataDir, type SpawnedServer } from '../lib/wo.ts';
import { budget, budgetTable, type Budget } from '../report.ts';
import { spawnWo } from '../../testkit/spawn.ts';
import type { BenchContext, Mode } from './context.ts';
import { isMain, modeOfArgs, runAlone } from '../lib/alone.ts';

export interface ClusterLendOptions {
  /** in-flight lends per setup (split over its nodes); one row per level */
  inFlight: number[];
  /** measured time per setup and level, split into `rounds` alternating windows */
  windowMs: number;
  rounds: number;
  /** an unmeasured window per setup before the first measured one */
  warmUpMs: number;
  /** books seeded per setup, each with copies to spare */
  books: number;
  /** members seeded per setup, lent to in turn */
  members: number;
}

export const CLUSTER_LEND_OPTIONS: Record<Mode, ClusterLendOptions> = {
  full: { inFlight: [32, 128], windowMs: 8000, rounds: 2, warmUpMs: 2000, books: 100, members: 1000 },
  quick: { inFlight: [32], windowMs: 3000, rounds: 2, warmUpMs: 1000, books: 100, members: 1000 },
  smoke: { inFlight: [8], windowMs: 400, rounds: 1, warmUpMs: 200, books: 10, members: 10 },
};

export type LendSetup = 'postgres x1' | 'postgres x3';

export interface ClusterLendRow {
  setup: LendSetup;
  inFlight: number;
  calls: number;
  errors: number;
  firstError?: string;
  lendsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** the writeonce processes' CPU per lend, summed over the setup's nodes */
  woCpuUsPerLend: number;
  /** the cluster's PostgreSQL CPU per lend */
  pgCpuUsPerLend: number;
}

export interface ClusterLendResult {
  skipped?: string;
  rows: ClusterLendRow[];
}

const json = { 'content-type': 'application/json' };
const post = async (url: string, path: string, body: unknown) => {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: json, body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as { id: string };
};

/**
 * `books` books with a million copies each and `members` members, through `url`. Lends go round the members: the
 * sample's keyed view `loans_by_member` keeps one entry per member, and with one member that entry would hold every
 * loan of the run (each batch then decodes, folds and encodes a list of thousands, on every node).
 */
export async function seedLibrary(url: string, books: number, members = 1): Promise<{ books: string[]; members: string[] }> {
  const ids: string[] = [];
  for (let i = 0; i < books; i++) {
    const { id } = await post(url, '/api/books', { title: `b${i}`, author: 'a' });
    await post(url, `/api/books/${id}/add_copies`, { n: 1_000_000 });
    ids.push(id);
  }
  const memberIds: string[] = [];
  for (let i = 0; i < members; i += 32) {
    const made = await Promise.all(Array.from({ length: Math.min(32, members - i) }, (_, k) => post(url, '/api/members', { name: `m${i + k}` })));
    memberIds.push(...made.map((m) => m.id));
  }
  return { books: ids, members: memberIds };
}

/** Waits until `url` serves the row (another node applies the seeding through its tailer). */
export async function served(url: string, path: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if ((await fetch(`${url}${path}`)).status === 200) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${url} never served ${path}`);
}

interface Setup {
  setup: LendSetup;
  nodes: SpawnedServer[];
  books: string[];
  members: string[];
}

interface Measured {
  r: LoadResult[];
  wo: number;
  pg: number;
}

/** One window: `inFlight` lends split over the setup's nodes, one generator each. */
async function window(s: Setup, cluster: BenchCluster, inFlight: number, ms: number): Promise<Measured> {
  const wo0 = s.nodes.map((n) => sampleCpu(n.pid));
  const pg0 = cluster.cpuMs();
  const r = await Promise.all(
    s.nodes.map((n, k) =>
      runLoad({
        url: n.loopbackUrl,
        concurrency: Math.max(1, Math.round(inFlight / s.nodes.length)),
        durationMs: ms,
        makeRequest: (i) => ({
          method: 'POST',
          path: '/api/_commands/lend',
          headers: json,
          body: JSON.stringify({ book: s.books[(i * s.nodes.length + k) % s.books.length], member: s.members[(i * s.nodes.length + k) % s.members.length] }),
        }),
        check: (status, body) => status === 200 && body.startsWith('{"command":"lend"'),
      }),
    ),
  );
  const wo = s.nodes.reduce((a, n, k) => a + cpuBetween(wo0[k], sampleCpu(n.pid)).cpuMs, 0);
  return { r, wo, pg: cluster.cpuMs() - pg0 };
}

/** A setup's windows at one level as one row: their lends over their summed wall time. */
function summarise(setup: LendSetup, inFlight: number, windows: ReadonlyArray<Measured>): ClusterLendRow {
  const all = windows.flatMap((w) => w.r);
  const h = all.reduce((acc, x) => (x.histogram ? acc.merge(x.histogram) : acc), new LatencyHistogram());
  const calls = all.reduce((a, x) => a + x.calls, 0);
  // The generators of one window run side by side (one per node); windows follow each other.
  const wall = windows.reduce((a, w) => a + Math.max(...w.r.map((x) => x.durationMs)), 0);
  const wo = windows.reduce((a, w) => a + w.wo, 0);
  const pg = windows.reduce((a, w) => a + w.pg, 0);
  const firstError = all.find((x) => x.firstError !== undefined)?.firstError;
  return {
    setup,
    inFlight,
    calls,
    errors: all.reduce((a, x) => a + x.errors, 0),
    ...(firstError === undefined ? {} : { firstError }),
    lendsPerSec: calls / (wall / 1000),
    p50Ms: h.percentile(50) / 1000,
    p99Ms: h.percentile(99) / 1000,
    woCpuUsPerLend: calls ? (wo * 1000) / calls : 0,
    pgCpuUsPerLend: calls ? (pg * 1000) / calls : 0,
  };
}

export async function runClusterLend(ctx: BenchContext, o: ClusterLendOptions): Promise<ClusterLendResult> {
  if (!havePostgres()) {
    ctx.warn('cluster-lend: skipped, PostgreSQL binaries not found (Debian: apt-get install postgresql-15)');
    return { skipped: 'no PostgreSQL binaries', rows: [] };
  }
  ctx.phase('cluster-lend: starting a PostgreSQL primary and two synchronous standbys');
  const cluster = startBenchCluster('wo-cluster-lend-');
  const started: SpawnedServer[] = [];
  const startNode = async (db: string, label: string) => {
    const data = freshDataDir(ctx.dataRoot, `cluster-lend-${label}`);
    ctx.track(data);
    const node = await spawnWo(['run', 'examples/library', '--data', data, '--listen', '127.0.0.1:0', '--store', cluster.urlOf(db)], {
      readyTimeoutMs: 60_000, stopTimeoutMs: 5000, outputLimit: 16_384, env: { WO_LOG_LEVEL: 'Info' },
    });
    started.push(node);
    return node;
  };
  try {
    const admin = new pg.Client({ host: '127.0.0.1', port: cluster.port, user: 'postgres', database: 'postgres' });
    await admin.connect();
    for (const db of ['wo_lend_one', 'wo_lend_three']) await admin.query(`create database ${db}`);
    await admin.end();
    // Each setup on a database of its own (a node makes the store on its first start): the first node alone, then
    // the others, which find the store made.
    const one = [await startNode('wo_lend_one', 'one')];
    const three = [await startNode('wo_lend_three', 'three-a')];
    three.push(...(await Promise.all([startNode('wo_lend_three', 'three-b'), startNode('wo_lend_three', 'three-c')])));
    const setups: Setup[] = [];
    for (const [setup, nodes] of [['postgres x1', one], ['postgres x3', three]] as const) {
      ctx.phase(`cluster-lend: ${setup}, seeding ${o.books} books and ${o.members} members`);
      const seeded = await seedLibrary(nodes[0].loopbackUrl, o.books, o.members);
      for (const n of nodes.slice(1)) {
        await served(n.loopbackUrl, `/api/books/${seeded.books[seeded.books.length - 1]}`);
        await served(n.loopbackUrl, `/api/members/${seeded.members[seeded.members.length - 1]}`);
      }
      setups.push({ setup, nodes, ...seeded });
    }
    for (const s of setups) {
      ctx.phase(`cluster-lend: ${s.setup}, warming up`);
      await window(s, cluster, o.inFlight[0], o.warmUpMs);
    }
    const rows: ClusterLendRow[] = [];
    for (const inFlight of o.inFlight) {
      const measured = new Map<LendSetup, Measured[]>(setups.map((s) => [s.setup, []]));
      for (let round = 0; round < o.rounds; round++) {
        for (const s of round % 2 === 0 ? setups : [...setups].reverse()) {
          ctx.phase(`cluster-lend: ${s.setup}, lend at ${inFlight} in flight (round ${round + 1} of ${o.rounds})`);
          measured.get(s.setup)!.push(await window(s, cluster, inFlight, o.windowMs / o.rounds));
        }
      }
      for (const s of setups) {
        const row = summarise(s.setup, inFlight, measured.get(s.setup)!);
        if (row.errors > 0) ctx.warn(`cluster-lend: ${s.setup} at ${inFlight} in flight: ${row.errors} lends not answered 200; first: ${row.firstError}`);
        rows.push(row);
      }
    }
    return { rows };
  } finally {
    await Promise.allSettled(started.map((n) => n.stop()));
    cluster.stop();
  }
}

export const CLUSTER_LEND_BUDGET = { threeOverOne: 0.8 } as const;

/** The budget, judged on this run's rows: PASS, MISS, or n/a when a side is missing. */
export function clusterLendBudgets(r: ClusterLendResult): Budget[] {
  const row = (setup: LendSetup, inFlight: number) => r.rows.find((x) => x.setup === setup && x.inFlight === inFlight);
  const f = (n: number) => n.toFixed(0);
  return [...new Set(r.rows.map((x) => x.inFlight))].map((inFlight) => {
    const one = row('postgres x1', inFlight);
    const three = row('postgres x3', inFlight);
    return budget(`clusterLend.threeOverOne.${inFlight}`, `lends/s, 3 nodes / 1 node on PostgreSQL, ${inFlight} in flight`, '>=', CLUSTER_LEND_BUDGET.threeOverOne,
      one && three ? three.lendsPerSec / one.lendsPerSec : Number.NaN, 'x',
      one && three
        ? `${f(three.lendsPerSec)} against ${f(one.lendsPerSec)}/s; wo CPU ${f(three.woCpuUsPerLend)} against ${f(one.woCpuUsPerLend)} µs/lend; errors ${three.errors} against ${one.errors}`
        : '');
  });
}

/** The section of the report. */
export function renderClusterLend(r: ClusterLendResult): string {
  if (r.skipped) return `## Commands on several nodes (PostgreSQL)\n\nskipped: ${r.skipped}\n`;
  const f = (n: number, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  return [
    '## Commands on several nodes (PostgreSQL)',
    '',
    '`lend` (examples/library: a book\'s check_out and a loan\'s create, one atomic command) through 1 and 3 `wo run --store` nodes on a primary and two synchronous standbys (ANY 1), each setup on a database of its own, in alternating windows; all on this machine.',
    '',
    '| setup | in flight | lends/s | ack p50 ms | ack p99 ms | wo CPU µs/lend | PostgreSQL CPU µs/lend | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...r.rows.map((w) => `| ${w.setup} | ${w.inFlight} | ${f(w.lendsPerSec)} | ${f(w.p50Ms, 1)} | ${f(w.p99Ms, 1)} | ${f(w.woCpuUsPerLend)} | ${f(w.pgCpuUsPerLend)} | ${w.errors} |`),
    '',
    ...budgetTable(clusterLendBudgets(r)),
    '',
  ].join('\n');
}

// Run alone: the section on stdout, progress on stderr (`--quick` or `--smoke` for shorter runs).
if (isMain(import.meta.url)) {
  const mode = modeOfArgs();
  await runAlone('cluster-lend', mode, async (ctx) => renderClusterLend(await runClusterLend(ctx, CLUSTER_LEND_OPTIONS[mode])));
}
