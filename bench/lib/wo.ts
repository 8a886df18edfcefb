// The servers under test, spawned with the testkit (testkit/spawn.ts): `wo run examples/pricing` on a fresh data
// dir, and the peers of bench/peers/; and the request shapes the benchmarks send (REST here, MCP from
// testkit/mcp.ts, both eras). Shared by bench/core.ts, bench/run.ts and the scenarios.
import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { legacyToolCall, modernToolCall, type LegacySession } from '../../testkit/mcp.ts';
import { ROOT, runWo, spawnNode, spawnWo, type Spawned } from '../../testkit/spawn.ts';
import { runLoad, type LoadRequest } from './load.ts';

export type SpawnedServer = Spawned;
export const repoRoot = `${ROOT}/`;
/** `... serving app "pricing" (products) at http://127.0.0.1:PORT`, logged once it listens. */
export const WO_READY = /serving app "pricing" \(products\) at (http:\/\/\S+)/;
/** What a peer of bench/peers/ prints once it listens (bench/peers/listen.ts). */
export const PEER_READY = /listening\s+(https?:\/\/\S+)/;

// Bench servers keep only the tail of their output (long runs), and get SIGKILL 3 s after a SIGTERM they ignore.
const BENCH_DEFAULTS = { readyTimeoutMs: 15_000, stopTimeoutMs: 3000, outputLimit: 16_384 } as const;

export function freshDataDir(root: string, label: string): string {
  mkdirSync(root, { recursive: true });
  return mkdtempSync(join(root, `${label}-`));
}

export interface WoOptions {
  /** The data dir (it must not be in use by another server). */
  dir: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
  readyTimeoutMs?: number;
  stopTimeoutMs?: number;
  /** Keep this many characters of output, not the default tail (bench/gc-survival.ts parses V8's trace from it). */
  outputLimit?: number;
}

export async function startWo(opts: WoOptions): Promise<SpawnedServer> {
  return spawnWo(['run', 'examples/pricing', '--data', opts.dir, '--listen', '127.0.0.1:0'], {
    ...BENCH_DEFAULTS,
    env: { WO_LOG_LEVEL: 'Info', ...opts.env },
    ready: WO_READY,
    ...(opts.nodeArgs ? { nodeArgs: opts.nodeArgs } : {}),
    ...(opts.readyTimeoutMs ? { readyTimeoutMs: opts.readyTimeoutMs } : {}),
    ...(opts.stopTimeoutMs ? { stopTimeoutMs: opts.stopTimeoutMs } : {}),
    ...(opts.outputLimit ? { outputLimit: opts.outputLimit } : {}),
  });
}

export interface PeerOptions {
  env?: Record<string, string>;
  nodeArgs?: string[];
  stopTimeoutMs?: number;
  outputLimit?: number;
}

/** A peer server of bench/peers/ (run with tsx) on an ephemeral port ($PORT=0). */
export function spawnPeer(file: string, opts: PeerOptions = {}): Promise<SpawnedServer> {
  return spawnNode(file, [], {
    ...BENCH_DEFAULTS,
    importTsx: true,
    ready: PEER_READY,
    env: { PORT: '0', ...opts.env },
    ...(opts.nodeArgs ? { nodeArgs: opts.nodeArgs } : {}),
    ...(opts.stopTimeoutMs ? { stopTimeoutMs: opts.stopTimeoutMs } : {}),
    ...(opts.outputLimit ? { outputLimit: opts.outputLimit } : {}),
  });
}

/** Runs `wo <args>` to completion (a child process), with its output and wall time. */
async function woCommand(args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string; wallMs: number }> {
  const r = await runWo(args, { timeoutMs });
  return { code: r.code ?? 1, stdout: r.stdout, stderr: r.stderr, wallMs: r.wallMs };
}

export const woReplay = (dir: string, timeoutMs = 10 * 60_000) => woCommand(['replay', dir], timeoutMs);
export const woVerify = (dir: string, timeoutMs = 10 * 60_000) => woCommand(['verify', dir], timeoutMs);

const json = { 'content-type': 'application/json' };

export const restCreate = (i: number): LoadRequest => ({
  method: 'POST',
  path: '/api/products',
  headers: json,
  body: JSON.stringify({ name: `p${i}`, price: 1 + (i % 1000), currency: 'USD' }),
});
export const restGet = (id: number): LoadRequest => ({ method: 'GET', path: `/api/products/${id}` });
export const restSetPrice = (id: number, price: number): LoadRequest => ({
  method: 'POST',
  path: `/api/products/${id}/set_price`,
  headers: json,
  body: JSON.stringify({ price }),
});
export const plainEcho = (i: number): LoadRequest => ({
  method: 'POST',
  path: '/echo',
  headers: json,
  body: JSON.stringify({ id: `p${i % 100}`, price: 1 + (i % 1000) }),
});

/** MCP tools/call, built by the testkit each time (the bytes `mcpCall` sends; what bench/mcp-get-ab.ts CLIENT_AB compares it to). */
export function mcpCallBuilt(session: LegacySession | 'modern', id: number, name: string, args: Record<string, unknown>): LoadRequest {
  return session === 'modern'
    ? modernToolCall({ id, name, arguments: args })
    : legacyToolCall(session, { id, name, arguments: args });
}

/** A tools/call's fixed parts: its headers, and its body around the id and the arguments. */
interface CallShape {
  path: string;
  headers: Record<string, string>;
  parts: [string, string, string];
}

const ID_MARK = -987_654_321;
const callShapes = new WeakMap<LegacySession, Map<string, CallShape>>();
const modernShapes = new Map<string, CallShape>();

const shapeOf = (session: LegacySession | 'modern', name: string): CallShape => {
  const shapes = session === 'modern' ? modernShapes : callShapes.get(session) ?? callShapes.set(session, new Map()).get(session)!;
  let shape = shapes.get(name);
  if (shape === undefined) {
    const sample = mcpCallBuilt(session, ID_MARK, name, {});
    const [head, rest] = sample.body!.split(`"id":${ID_MARK}`);
    const [middle, tail] = rest.split('"arguments":{}');
    // Shared by every call of the shape: frozen, so a caller that adds a header fails rather than adds it to all.
    shape = { path: sample.path, headers: Object.freeze(sample.headers!), parts: [`${head}"id":`, `${middle}"arguments":`, tail] };
    shapes.set(name, shape);
  }
  return shape;
};

/**
 * MCP tools/call on our server, modern (no session) or legacy (on `session`): the testkit's request, its fixed
 * parts made once per session and tool. The generator shares the cores with the server: building each request
 * anew (spreads, a nested JSON.stringify, Mcp-Name's encoding) cost it 7.4 µs per modern call (0.23 kept), a
 * REST GET's request nothing, and the MCP rows' p99 paid for it against REST's (the modern get's
 * p99 − REST p99 at 16 in flight halved; bench/mcp-get-ab.ts CLIENT_AB=1).
 */
export function mcpCall(session: LegacySession | 'modern', id: number, name: string, args: Record<string, unknown>): LoadRequest {
  const { path, headers, parts } = shapeOf(session, name);
  return { method: 'POST', path, headers, body: `${parts[0]}${JSON.stringify(id)}${parts[1]}${JSON.stringify(args)}${parts[2]}` };
}

/** A REST row body: `{"id":"...` with the wanted status. */
export const isRow = (status: number, body: string, want: number): boolean => status === want && body.startsWith('{"id":"');

/** Creates products 1..n (ids are assigned in order on a fresh data dir). */
export async function seedProducts(url: string, n: number, headers?: Record<string, string>): Promise<void> {
  const r = await runLoad({
    url,
    concurrency: Math.min(8, n),
    totalRequests: n,
    makeRequest: headers === undefined ? restCreate : (i) => { const r = restCreate(i); return { ...r, headers: { ...r.headers, ...headers } }; },
    check: (status, body) => isRow(status, body, 201),
  });
  if (r.calls !== n) throw new Error(`seeding ${n} products failed after ${r.calls}: ${r.firstError}`);
}
