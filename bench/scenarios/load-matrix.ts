// The request/response scenarios, ours and the peers', under the same closed-loop undici generator
// (bench/lib/load.ts) at fixed concurrency levels. Every server is started up front and stays up, each
// scenario is warmed until its CPU per call is stable (bench/lib/warmup.ts), then the windows are measured
// level by level, all scenarios at one level back to back, for `rounds` rounds: drift on the shared cores
// hits both sides of each ratio alike. Server CPU per call comes from /proc (bench/lib/measure.ts).
import { closeLegacySession, openLegacySession, toolCallSucceeded, legacyToolCall, modernToolCall, type LegacySession } from '../../testkit/mcp.ts';
import type { LoadRequest, ResponseHeaders } from '../lib/load.ts';
import { runLoad } from '../lib/load.ts';
import { combine, measure, watched, type Load, type Measured } from '../lib/measure.ts';
import { spawnPeer, type SpawnedServer } from '../lib/wo.ts';
import { warmUntilStable, type WarmupResult } from '../lib/warmup.ts';
import { freshDataDir, isRow, mcpCall, plainEcho, restCreate, restGet, restSetPrice, seedProducts, startWo } from '../lib/wo.ts';
import type { BenchContext } from './context.ts';

export type ServerKey = 'plain' | 'floor' | 'sdk-v2' | 'sdk-v1' | 'wo-on' | 'wo-off' | 'wo-create';

export interface ScenarioDef {
  id: string;
  label: string;
  server: ServerKey;
  /** a reference implementation, not ours */
  peer: boolean;
  kind: 'echo' | 'set_price' | 'get' | 'create';
  wire: 'rest' | 'modern' | 'legacy' | 'plain';
  /** durable writes */
  durable: boolean;
  groupCommit?: 'on' | 'off';
  /** all callers on one product */
  hotRow?: boolean;
  levels: number[];
  prepare(url: string): Promise<{ makeRequest: (i: number, worker: number) => LoadRequest; done?: () => Promise<void> }>;
  check(status: number, body: string, headers: ResponseHeaders): boolean;
}

export interface LevelResult {
  concurrency: number;
  callsPerSec: number;
  calls: number;
  errors: number;
  firstError?: string;
  p50Ms: number;
  p99Ms: number;
  p999Ms: number;
  maxMs: number;
  srvCpuUsPerCall: number;
  genCpuUsPerCall: number;
  srvCores: number;
  otherCores: number;
  srvRssMb: number;
  windows: number;
}

export interface ScenarioResult {
  id: string;
  label: string;
  server: ServerKey;
  peer: boolean;
  kind: ScenarioDef['kind'];
  wire: ScenarioDef['wire'];
  durable: boolean;
  groupCommit?: 'on' | 'off';
  hotRow?: boolean;
  warmup?: { ms: number; calls: number; stable: boolean };
  levels: LevelResult[];
}

export interface MatrixTimings {
  windowMs: number;
  rounds: number;
  warmMaxMs: number;
  /** the SDK peers take many more calls (and seconds) than ours for V8 to settle */
  peerWarmMaxMs: number;
  warmChunkMs: number;
  /** never call a warm-up stable before this many calls */
  warmMinCalls: number;
  /** before each window, unreported: opens the scenario's connections at that level */
  preMs: number;
}

/** Products seeded on each wo server: one per in-flight caller at the highest level. */
export const SEEDED = 64;

const plainOk = (status: number, body: string) => status === 200 && body.startsWith('{"ok":true');
const priceOf = (i: number) => 1 + (i % 1000);

function sdkSetPrice(label: string, server: ServerKey, wire: 'modern' | 'legacy', levels: number[]): ScenarioDef {
  return {
    id: `${server}.set_price.${wire}`,
    label,
    server,
    peer: true,
    kind: 'set_price',
    wire,
    durable: false,
    levels,
    prepare: async (url) => {
      if (wire === 'modern') {
        return { makeRequest: (i, w) => modernToolCall({ id: i + 1, name: 'set_price', arguments: { id: `p${w}`, price: priceOf(i) } }) };
      }
      const session = await openLegacySession(url);
      return {
        makeRequest: (i, w) => legacyToolCall(session, { id: i + 1, name: 'set_price', arguments: { id: `p${w}`, price: priceOf(i) } }),
        done: () => closeLegacySession(session),
      };
    },
    check: toolCallSucceeded,
  };
}

async function sessionFor(url: string, wire: 'modern' | 'legacy'): Promise<{ session: LegacySession | 'modern'; done?: () => Promise<void> }> {
  if (wire === 'modern') return { session: 'modern' };
  const session = await openLegacySession(url);
  return { session, done: () => closeLegacySession(session) };
}

function woTool(
  id: string,
  label: string,
  server: ServerKey,
  wire: 'modern' | 'legacy',
  tool: 'products_set_price' | 'products_get',
  levels: number[],
  extra: Partial<ScenarioDef> = {},
): ScenarioDef {
  const setter = tool === 'products_set_price';
  return {
    id,
    label,
    server,
    peer: false,
    kind: setter ? 'set_price' : 'get',
    wire,
    durable: setter,
    ...(setter ? { groupCommit: server === 'wo-off' ? 'off' : 'on' } : {}),
    levels,
    prepare: async (url) => {
      const { session, done } = await sessionFor(url, wire);
      const hot = extra.hotRow === true;
      return {
        makeRequest: (i, w) =>
          mcpCall(session, i + 1, tool, setter ? { id: String(hot ? 1 : w + 1), price: priceOf(i) } : { id: String(w + 1) }),
        ...(done ? { done } : {}),
      };
    },
    check: toolCallSucceeded,
    ...extra,
  };
}

/** A durable REST write (create or set_price) on `server`: a peer when it is the floor. */
function durableRest(id: string, label: string, server: ServerKey, kind: 'create' | 'set_price', levels: number[], make: (i: number, worker: number) => LoadRequest, groupCommit: 'on' | 'off' = 'on'): ScenarioDef {
  const status = kind === 'create' ? 201 : 200;
  return {
    id, label, server, peer: server === 'floor', kind, wire: 'rest', durable: true, groupCommit, levels,
    prepare: async () => ({ makeRequest: make }),
    check: (s, b) => isRow(s, b, status),
  };
}

/** The concurrency levels per group of scenarios, per mode. */
interface Plan {
  main: number[];
  getLegacy: number[];
  sdkV1: number[];
  hot: number[];
  gcOff: number[];
  create: number[];
  createOff: number[];
}
const PLANS: Record<BenchContext['mode'], Plan> = {
  full: { main: [1, 16, 64], getLegacy: [1, 16, 64], sdkV1: [1, 16, 64], hot: [64], gcOff: [1, 16, 64], create: [1, 16, 32, 64], createOff: [32] },
  // --quick keeps every budget's level and drops the rest, to stay under a minute.
  quick: { main: [16, 64], getLegacy: [16], sdkV1: [64], hot: [64], gcOff: [64], create: [32], createOff: [32] },
  smoke: { main: [4], getLegacy: [4], sdkV1: [4], hot: [4], gcOff: [4], create: [4], createOff: [4] },
};

/** Every request/response scenario of the harness, with its levels for the mode (smoke runs a subset). */
export function scenarioDefs(mode: BenchContext['mode']): ScenarioDef[] {
  const p = PLANS[mode];
  // Creates get a server of their own in full runs (their rows would otherwise grow the set_price server's).
  const createServer: ServerKey = mode === 'full' ? 'wo-create' : 'wo-on';
  const defs: ScenarioDef[] = [
    {
      id: 'plain.echo',
      label: 'plain node:http JSON echo',
      server: 'plain',
      peer: true,
      kind: 'echo',
      wire: 'plain',
      durable: false,
      levels: p.main,
      prepare: async () => ({ makeRequest: (i) => plainEcho(i) }),
      check: plainOk,
    },
    {
      id: 'wo.rest.get',
      label: 'wo REST GET /api/products/:id',
      server: 'wo-on',
      peer: false,
      kind: 'get',
      wire: 'rest',
      durable: false,
      levels: p.main,
      prepare: async () => ({ makeRequest: (_i, w) => restGet(1 + (w % SEEDED)) }),
      check: (s, b) => isRow(s, b, 200),
    },
    woTool('wo.mcp.get.modern', 'wo MCP products_get, modern', 'wo-on', 'modern', 'products_get', p.main),
    woTool('wo.mcp.get.legacy', 'wo MCP products_get, legacy', 'wo-on', 'legacy', 'products_get', p.getLegacy),
    sdkSetPrice('SDK v2 set_price (in memory), modern', 'sdk-v2', 'modern', p.main),
    woTool('wo.mcp.set_price.modern.on', 'wo MCP set_price, modern, durable, GC on', 'wo-on', 'modern', 'products_set_price', p.main),
    sdkSetPrice('SDK v2 set_price (in memory), legacy sessions', 'sdk-v2', 'legacy', p.main),
    woTool('wo.mcp.set_price.legacy.on', 'wo MCP set_price, legacy, durable, GC on', 'wo-on', 'legacy', 'products_set_price', p.main),
    sdkSetPrice('SDK v1 set_price (in memory), legacy', 'sdk-v1', 'legacy', p.sdkV1),
    woTool('wo.mcp.set_price.modern.hot', 'wo MCP set_price, modern, GC on, hot row', 'wo-on', 'modern', 'products_set_price', p.hot, { hotRow: true }),
    woTool('wo.mcp.set_price.legacy.hot', 'wo MCP set_price, legacy, GC on, hot row', 'wo-on', 'legacy', 'products_set_price', p.hot, { hotRow: true }),
    woTool('wo.mcp.set_price.modern.off', 'wo MCP set_price, modern, durable, GC off', 'wo-off', 'modern', 'products_set_price', p.gcOff),
    woTool('wo.mcp.set_price.legacy.off', 'wo MCP set_price, legacy, durable, GC off', 'wo-off', 'legacy', 'products_set_price', p.gcOff),
    durableRest('wo.rest.create.on', 'wo REST create, durable, GC on', createServer, 'create', p.create, (i) => restCreate(i)),
    durableRest('wo.rest.create.off', 'wo REST create, durable, GC off', 'wo-off', 'create', p.createOff, (i) => restCreate(1_000_000 + i), 'off'),
    // The durable-write floor (bench/peers/durable-floor.ts) and ours on the same requests.
    durableRest('floor.rest.create', 'floor: node:http + classic-level group commit, create', 'floor', 'create', p.create, (i) => restCreate(1_000_000 + i)),
    durableRest('floor.rest.set_price', 'floor: node:http + classic-level group commit, set_price', 'floor', 'set_price', p.create, (i, w) => restSetPrice(1 + (w % SEEDED), 1 + (i % 500))),
    durableRest('wo.rest.set_price.on', 'wo REST set_price, durable, GC on', 'wo-on', 'set_price', p.create, (i, w) => restSetPrice(1 + (w % SEEDED), 1 + (i % 500))),
  ];
  return narrowed(modeDefs(mode, defs));
}

function modeDefs(mode: BenchContext['mode'], defs: ScenarioDef[]): ScenarioDef[] {
  // --quick: group commit off once (modern), not per era and for creates too.
  if (mode === 'quick') return defs.filter((d) => d.id !== 'wo.mcp.set_price.legacy.off' && d.id !== 'wo.rest.create.off');
  if (mode !== 'smoke') return defs;
  const smoke = new Set(['plain.echo', 'wo.rest.get', 'wo.mcp.get.modern', 'wo.mcp.get.legacy', 'wo.mcp.set_price.modern.on', 'wo.mcp.set_price.legacy.on', 'wo.rest.create.on', 'floor.rest.create', 'wo.rest.set_price.on', 'floor.rest.set_price']);
  return defs.filter((d) => smoke.has(d.id));
}

/** BENCH_SCENARIOS (ids or id prefixes, comma-separated) keeps only those scenarios, and BENCH_LEVELS (in-flight
 *  counts) runs them at those levels: a part of the matrix measured on its own, e.g. the durable writes against
 *  their floor while working on the write path. */
function narrowed(defs: ScenarioDef[]): ScenarioDef[] {
  const list = (name: string) => process.env[name]?.split(',').map((s) => s.trim()).filter(Boolean);
  const ids = list('BENCH_SCENARIOS');
  const levels = list('BENCH_LEVELS')?.map(Number);
  return defs
    .filter((d) => ids === undefined || ids.some((id) => d.id.startsWith(id)))
    .map((d) => (levels === undefined ? d : { ...d, levels }));
}

interface Running {
  def: ScenarioDef;
  server: SpawnedServer;
  load: Omit<Load, 'concurrency'>;
  done?: () => Promise<void>;
  warm?: WarmupResult;
  windows: Map<number, Measured[]>;
}

/** Env every wo server of the matrix gets on top of its group-commit setting (e.g. to share it later). */
export interface MatrixServers {
  /** servers started by the caller (not stopped here); wo ones must have been seeded with SEEDED products */
  prestarted?: Partial<Record<ServerKey, SpawnedServer | Promise<SpawnedServer>>>;
  /** other starts to overlap with the matrix's own (awaited with them, not used here) */
  alongside?: Promise<unknown>[];
}

async function startServer(ctx: BenchContext, key: ServerKey, ready: () => void): Promise<SpawnedServer> {
  const peer = (file: string) => spawnPeer(file).then((s) => (ready(), s));
  switch (key) {
    case 'plain':
      return peer('bench/peers/plain-http.ts');
    case 'floor': {
      const dir = freshDataDir(ctx.dataRoot, key);
      ctx.track(dir);
      const server = await spawnPeer('bench/peers/durable-floor.ts', { env: { DATA_DIR: dir } });
      ready();
      try {
        await seedProducts(server.url, SEEDED);
      } catch (err) {
        await server.stop();
        throw err;
      }
      return server;
    }
    case 'sdk-v2':
      return peer('bench/peers/sdk-v2-server.ts');
    case 'sdk-v1':
      return peer('bench/peers/sdk-v1-server.ts');
    case 'wo-on':
    case 'wo-off':
    case 'wo-create': {
      const dir = freshDataDir(ctx.dataRoot, key);
      ctx.track(dir);
      const server = await startWo({ dir, env: woMatrixEnv(key) });
      ready();
      try {
        if (key !== 'wo-create') await seedProducts(server.url, SEEDED);
      } catch (err) {
        await server.stop();
        throw err;
      }
      return server;
    }
  }
}

/** The env of the matrix's wo servers. */
export function woMatrixEnv(key: 'wo-on' | 'wo-off' | 'wo-create', extra: Record<string, string> = {}): Record<string, string> {
  return { WO_GROUP_COMMIT: key === 'wo-off' ? 'off' : 'on', ...extra };
}

export interface MatrixResult {
  scenarios: ScenarioResult[];
  /** spawn-to-ready (and seeded) per server */
  startMs: Partial<Record<ServerKey, number>>;
}

export async function runMatrix(ctx: BenchContext, defs: ScenarioDef[], t: MatrixTimings, opts: MatrixServers = {}): Promise<MatrixResult> {
  const keys = [...new Set(defs.map((d) => d.server))];
  const servers = new Map<ServerKey, SpawnedServer>();
  const owned = new Set<SpawnedServer>();
  const startMs: MatrixResult['startMs'] = {};
  const running: Running[] = [];
  try {
    const toStart = keys.filter((k) => !opts.prestarted?.[k]);
    ctx.phase(`load: starting ${toStart.join(', ') || 'no servers'}`);
    // Started together (most of a start is module loading); timed each to its ready line, seeding excluded.
    const started = await Promise.allSettled([
      ...toStart.map(async (key) => {
        const t0 = performance.now();
        const server = await startServer(ctx, key, () => (startMs[key] = performance.now() - t0));
        owned.add(server);
        servers.set(key, server);
      }),
      ...keys.filter((k) => opts.prestarted?.[k]).map(async (k) => void servers.set(k, await opts.prestarted![k]!)),
      ...(opts.alongside ?? []),
    ]);
    const failed = started.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    for (const def of defs) {
      const server = servers.get(def.server)!;
      const { makeRequest, done } = await def.prepare(server.url);
      const r: Running = { def, server, load: { url: server.url, makeRequest, check: def.check }, windows: new Map(), ...(done ? { done } : {}) };
      running.push(r);
      ctx.phase(`load: warming ${def.label}`);
      // A variant of a scenario already warmed on the same server (hot row) only needs its connections opened.
      const maxMs = def.hotRow ? Math.min(t.warmMaxMs, 300) : def.peer ? t.peerWarmMaxMs : t.warmMaxMs;
      r.warm = await watched(server, `warming ${def.label}`, () =>
        warmUntilStable({ load: { ...r.load, concurrency: 16 }, pid: server.pid, chunkMs: Math.min(t.warmChunkMs, maxMs), maxMs, minCalls: t.warmMinCalls }));
      if (r.warm.errors > 0) ctx.warn(`warm-up ${def.label}: ${r.warm.errors} errors, first: ${r.warm.firstError}`);
    }
    const levels = [...new Set(defs.flatMap((d) => d.levels))].sort((a, b) => a - b);
    for (let round = 0; round < t.rounds; round++) {
      for (const c of levels) {
        ctx.phase(`load: ${c} in flight, round ${round + 1}/${t.rounds}`);
        for (const r of running) {
          if (!r.def.levels.includes(c)) continue;
          const load: Load = { ...r.load, concurrency: c };
          await watched(r.server, r.def.label, () => runLoad({ ...load, durationMs: t.preMs }));
          const m = await measure(r.server, load, t.windowMs);
          if (m.load.errors > 0) ctx.warn(`${r.def.label} at ${c}: ${m.load.errors} errors, first: ${m.load.firstError}`);
          r.windows.set(c, [...(r.windows.get(c) ?? []), m]);
        }
      }
    }
  } finally {
    for (const r of running) await r.done?.().catch(() => undefined);
    await Promise.all([...owned].map((s) => s.stop()));
  }
  return {
    startMs,
    scenarios: running.map(({ def, warm, windows }) => ({
      id: def.id,
      label: def.label,
      server: def.server,
      peer: def.peer,
      kind: def.kind,
      wire: def.wire,
      durable: def.durable,
      ...(def.groupCommit ? { groupCommit: def.groupCommit } : {}),
      ...(def.hotRow ? { hotRow: true } : {}),
      ...(warm ? { warmup: { ms: warm.ms, calls: warm.calls, stable: warm.stable } } : {}),
      levels: [...windows].sort((a, b) => a[0] - b[0]).map(([concurrency, ms]) => levelOf(concurrency, ms)),
    })),
  };
}

function levelOf(concurrency: number, ms: Measured[]): LevelResult {
  const m = combine(ms);
  return {
    concurrency,
    callsPerSec: m.load.callsPerSec,
    calls: m.load.calls,
    errors: m.load.errors,
    ...(m.load.firstError ? { firstError: m.load.firstError } : {}),
    p50Ms: m.load.p50Ms,
    p99Ms: m.load.p99Ms,
    p999Ms: m.load.p999Ms,
    maxMs: m.load.maxMs,
    srvCpuUsPerCall: m.srvCpuMsPerCall * 1000,
    genCpuUsPerCall: m.genCpuMsPerCall * 1000,
    srvCores: m.srvCores,
    otherCores: m.otherCores,
    srvRssMb: m.srvRssMb,
    windows: ms.length,
  };
}
