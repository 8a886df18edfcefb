// Our server under test: `wo run examples/pricing` on a fresh data dir, and the request shapes the
// benchmarks send it (REST and MCP, both eras). Shared by bench/core.ts and bench/run.ts.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runLoad, type LoadRequest } from './load.ts';
import { legacyToolCall, modernToolCall, type LegacySession } from './mcp-wire.ts';
import { spawnServer, type SpawnedServer } from './spawn.ts';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
/** `... serving app "pricing" (products) at http://127.0.0.1:PORT`, logged once it listens. */
export const WO_READY = /serving app "pricing" \(products\) at (http:\/\/\S+)/;

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
}

export async function startWo(opts: WoOptions): Promise<SpawnedServer> {
  return spawnServer({
    file: 'bin/wo.mjs',
    importTsx: false, // bin/wo.mjs registers tsx itself, after loading the big dependencies natively
    args: ['run', 'examples/pricing', '--data', opts.dir, '--listen', '127.0.0.1:0'],
    env: { WO_LOG_LEVEL: 'Info', ...opts.env },
    ready: WO_READY,
    ...(opts.nodeArgs ? { nodeArgs: opts.nodeArgs } : {}),
    ...(opts.readyTimeoutMs ? { readyTimeoutMs: opts.readyTimeoutMs } : {}),
    ...(opts.stopTimeoutMs ? { stopTimeoutMs: opts.stopTimeoutMs } : {}),
  });
}

/** `wo replay <dir>` to completion: its stdout, stderr and exit code. */
/** Runs `wo <args>` to completion (a child process), with its output and wall time. */
function woCommand(args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string; wallMs: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(repoRoot, 'bin/wo.mjs'), ...args],
      { cwd: repoRoot, timeout: timeoutMs, maxBuffer: 16 * 2 ** 20 },
      (err, stdout, stderr) => {
        const code = err ? ((err as { code?: unknown }).code as number | null | undefined) ?? 1 : 0;
        resolve({ code: typeof code === 'number' ? code : 1, stdout, stderr, wallMs: performance.now() - started });
      },
    );
  });
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

/** MCP tools/call on our server, modern (no session) or legacy (on `session`). */
export function mcpCall(session: LegacySession | 'modern', id: number, name: string, args: Record<string, unknown>): LoadRequest {
  return session === 'modern'
    ? modernToolCall({ id, name, arguments: args })
    : legacyToolCall(session, { id, name, arguments: args });
}

/** A REST row body: `{"id":"...` with the wanted status. */
export const isRow = (status: number, body: string, want: number): boolean => status === want && body.startsWith('{"id":"');

/** Creates products 1..n (ids are assigned in order on a fresh data dir). */
export async function seedProducts(url: string, n: number): Promise<void> {
  const r = await runLoad({
    url,
    concurrency: Math.min(8, n),
    totalRequests: n,
    makeRequest: restCreate,
    check: (status, body) => isRow(status, body, 201),
  });
  if (r.calls !== n) throw new Error(`seeding ${n} products failed after ${r.calls}: ${r.firstError}`);
}
