// Old against new on the /mcp route alone, in one process, without HTTP: the route of this checkout and
// of another one (OLD_ROOT) are each built over their own core runtime (the pricing app on a fresh classic-level
// dir) and called as the edge calls them (`direct`, then the Effect route for what it leaves), with the request the
// load generator sends (bench/lib/wo.ts mcpCall: its headers and body bytes, the body's JSON scan made once as the
// edge makes it on arrival). What is timed is the route's own work per call: no socket, no HTTP parser.
//   get:       products_get, answered at once (the row cache), CALLS calls per window on requests made before it;
//              process CPU / call.
//   set_price: products_set_price, C in flight, each on its own product, durable; process CPU / call (the writer
//              and the store are the same code in both: the difference is the route's).
// One case after the other, its windows alternating old/new (ROUNDS, default 5); prints the median of the windows per
// case and the new/old ratio, and the load average.
//   OLD_ROOT=/work/old-914 node --conditions=writeonce-source --import tsx bench/mcp-layer-ab.ts [get] [set_price]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LegacySession } from '../testkit/mcp.ts';
import { mcpCall } from './lib/wo.ts';

const OLD_ROOT = process.env.OLD_ROOT;
if (!OLD_ROOT) throw new Error('set OLD_ROOT to a checkout of the old code');
const NEW_ROOT = new URL('..', import.meta.url).pathname;
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const CALLS = Number(process.env.CALLS ?? 50_000);
const C = Number(process.env.C ?? 64);
const WRITES = Number(process.env.WRITES ?? 3000);
const cases = (process.argv.slice(2).length ? process.argv.slice(2) : ['get', 'set_price']).filter((c) => c === 'get' || c === 'set_price');

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}
type Route = ((request: unknown) => unknown) & { direct: (request: unknown, respond: unknown) => (() => void) | undefined };

/**
 * One checkout's route over its own runtime, and how to call it with a load request. Its code is bundled as `wo run`
 * bundles it (bin/built-sources.mjs: esbuild, no loader at run time, effect and the store external), into the
 * checkout's .wo-build/, with the pricing app and everything the bench drives in one entry: the two sides share no
 * module, not even effect.
 */
async function routeOf(root: string) {
  const { build } = await import('esbuild');
  const outfile = join(root, '.wo-build', `mcp-layer-ab-${process.pid}.mjs`);
  await build({
    stdin: {
      resolveDir: root,
      loader: 'ts',
      contents: [
        "export { Effect, ManagedRuntime } from 'effect'",
        "export { coreLayer } from './src/runtime.ts'",
        "export { loadSettings } from './src/config.ts'",
        "export { makeMcpRoute } from './src/http/mcp/mcp-server.ts'",
        "export { scanBody } from './src/http/json-scan.ts'",
        "export { Commands } from './src/commands/commands.ts'",
        "export { default as app } from './examples/pricing/app.ts'",
      ].join('\n'),
    },
    alias: { writeonce: join(root, 'src/index.ts') },
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node}`,
    packages: 'external',
    logLevel: 'silent',
  });
  const m = await import(outfile);
  if (process.env.KEEP_BUNDLE !== '1') rmSync(outfile);
  const { Effect, ManagedRuntime } = m;
  const dataDir = mkdtempSync(join(tmpdir(), 'wo-mcp-layer-'));
  const settings = await Effect.runPromise(m.loadSettings({ dataDir }, { host: '127.0.0.1', port: 0 }));
  const runtime = ManagedRuntime.make(m.coreLayer(m.app, settings));
  const route: Route = await runtime.runPromise(m.makeMcpRoute);
  const scans = new Map<string, unknown>();
  /** The request as the edge makes it (edge.ts dispatch): a new object per call, the body's scan made on arrival. */
  const edgeRequest = (r: { method: string; path: string; headers?: Record<string, string>; body?: string }) => {
    const body = Buffer.from(r.body ?? '');
    let scan = scans.get(r.body ?? '');
    if (scan === undefined) scans.set(r.body ?? '', (scan = m.scanBody(body)));
    return { method: r.method, path: r.path, query: new URLSearchParams(), search: '', headers: { host: '127.0.0.1', ...r.headers }, body, bodyShape: scan, remoteAddress: '127.0.0.1' };
  };
  const callWith = (request: ReturnType<typeof edgeRequest>, done: (a: Answer) => void) => {
    const respond = { answer: (a: Answer) => done(a), failed: (cause: unknown) => done({ status: 500, headers: {}, body: String(cause) }) };
    if (route.direct(request, respond) !== undefined) return;
    runtime.runPromise(route(request)).then(done);
  };
  const call = (r: Parameters<typeof edgeRequest>[0], done: (a: Answer) => void) => callWith(edgeRequest(r), done);
  const send = (r: Parameters<typeof edgeRequest>[0]) => new Promise<Answer>((resolve) => call(r, resolve));
  /** Products 1..n, made as REST makes them (the pricing app's MCP tools do not create). */
  const seed = (n: number) =>
    runtime.runPromise(Effect.flatMap(m.Commands, (commands: any) =>
      Effect.forEach(Array.from({ length: n }, (_, i) => i), (i: number) => commands.execute({ _tag: 'Create', type: 'products', input: { name: `p${i}`, price: 1, currency: 'USD' } }, {}), { discard: true })));
  return { runtime, dataDir, edgeRequest, callWith, call, send, seed };
}

type Side = Awaited<ReturnType<typeof routeOf>>;

/** A legacy session opened through the route (initialize), as much of one as mcpCall needs: its id and version. */
async function sessionOn(side: Side): Promise<LegacySession> {
  const init = await side.send({
    method: 'POST',
    path: '/mcp',
    headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }),
  });
  const sessionId = init.headers['mcp-session-id'];
  if (init.status !== 200 || typeof sessionId !== 'string') throw new Error(`initialize: ${init.status} ${init.body}`);
  return { origin: 'http://127.0.0.1', path: '/mcp', protocolVersion: '2025-11-25', sessionId };
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const sides = { old: await routeOf(OLD_ROOT), new: await routeOf(NEW_ROOT) };
try {
  const sessions = { old: await sessionOn(sides.old), new: await sessionOn(sides.new) };
  for (const v of ['old', 'new'] as const) await sides[v].seed(C);
  const results: Record<string, Record<'old' | 'new', Array<number>>> = {};
  const record = (name: string, v: 'old' | 'new', x: number) => ((results[name] ??= { old: [], new: [] })[v].push(x));

  const getWindow = (v: 'old' | 'new', era: 'legacy' | 'modern') => {
    const session = era === 'legacy' ? sessions[v] : 'modern';
    // Made before the window: what is timed is the route's work, not the making of requests (the edge's).
    const requests = Array.from({ length: C }, (_, w) => sides[v].edgeRequest(mcpCall(session, w + 1, 'products_get', { id: String(w + 1) })));
    let bad = 0;
    const done = (a: Answer) => {
      if (a.status !== 200 || !a.body.includes('"structuredContent"')) bad++;
    };
    const cpu0 = process.cpuUsage();
    for (let i = 0; i < CALLS; i++) sides[v].callWith(requests[i % C], done);
    const cpu = process.cpuUsage(cpu0);
    const us = (cpu.user + cpu.system) / CALLS;
    if (bad) throw new Error(`${v} get ${era}: ${bad} bad answers`);
    return us;
  };
  const setPriceWindow = async (v: 'old' | 'new', era: 'legacy' | 'modern') => {
    const session = era === 'legacy' ? sessions[v] : 'modern';
    let sent = 0;
    let bad = 0;
    const cpu0 = process.cpuUsage();
    await new Promise<void>((resolve) => {
      let answered = 0;
      const next = (w: number) => {
        if (sent >= WRITES) return;
        const i = sent++;
        sides[v].call(mcpCall(session, i + 1, 'products_set_price', { id: String(w + 1), price: 1 + (i % 1000) }), (a) => {
          if (a.status !== 200 || !a.body.includes('"structuredContent"')) bad++;
          if (++answered === WRITES) resolve();
          else next(w);
        });
      };
      for (let w = 0; w < C; w++) next(w);
    });
    const cpu = process.cpuUsage(cpu0);
    if (bad) throw new Error(`${v} set_price ${era}: ${bad} bad answers`);
    return (cpu.user + cpu.system) / WRITES;
  };

  // Each case on its own (a write window's store threads would still be busy in a read window after it): warmed on
  // both, then its windows alternate old/new.
  for (const c of cases) {
    const window = async (v: 'old' | 'new', era: 'legacy' | 'modern') => (c === 'get' ? getWindow(v, era) : await setPriceWindow(v, era));
    for (const v of ['old', 'new'] as const) for (const era of ['legacy', 'modern'] as const) for (let k = 0; k < (c === 'get' ? 3 : 1); k++) await window(v, era);
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 ? (['new', 'old'] as const) : (['old', 'new'] as const);
      for (const era of ['legacy', 'modern'] as const) for (const v of order) record(`${c} ${era} µs/call (process CPU)`, v, await window(v, era));
    }
  }
  for (const [name, { old, new: neu }] of Object.entries(results)) {
    const o = median(old);
    const n = median(neu);
    console.log(`${name.padEnd(36)} old ${o.toFixed(2)}  new ${n.toFixed(2)}  new/old ${(n / o).toFixed(3)}  (windows old ${old.map((x) => x.toFixed(2)).join(' ')}; new ${neu.map((x) => x.toFixed(2)).join(' ')})`);
  }
  console.log(`load average ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
} finally {
  for (const side of Object.values(sides)) {
    await side.runtime.dispose();
    rmSync(side.dataDir, { recursive: true, force: true });
  }
}
