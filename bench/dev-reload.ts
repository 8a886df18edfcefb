// `wo dev` reload latency: from the save of an edited app.ts to `notifications/tools/list_changed`
// received by an MCP client, on each era: a legacy session's GET stream and a modern subscriptions/listen stream.
// The app is bench/apps/pricing-plain on a data dir seeded with products (recovery is part of a reload); each round
// adds one method, opens a fresh stream per era (a reload ends the old ones) and times the save to the frame.
// Then a tools/list sent on the notice must name the new tool (held at the gate until the new app serves): timed too.
// Budget: edit to list_changed, and edit to the new tool listed, <= 1 s (medians of the rounds; the worst printed too).
//   node --conditions=writeonce-source --import tsx bench/dev-reload.ts           (10 rounds; writes bench/results/dev-reload.json)
//   node --conditions=writeonce-source --import tsx bench/dev-reload.ts --quick   (3 rounds; writes nothing)
// bench/run.ts runs it as its `devreload` part. BENCH_DATA_DIR: where the app copy and data dir go.
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { initializeBody, initializedBody, LEGACY_VERSION, legacyHeaders, listenBody, modernHeaders, modernRequest } from '../testkit/mcp.ts';
import { spawnWo } from '../testkit/spawn.ts';
import { freshDataDir, repoRoot, seedProducts } from './lib/wo.ts';

export interface DevReloadResult {
  readonly rounds: number;
  readonly rows: number;
  /** ms from the save to the frame, per round. */
  readonly legacyMs: ReadonlyArray<number>;
  readonly modernMs: ReadonlyArray<number>;
  /** ms from the save to a tools/list (sent on the list_changed) that lists the new tool. */
  readonly listedMs: ReadonlyArray<number>;
  readonly budgetMs: number;
  readonly pass: boolean;
}

const BUDGET_MS = 1000;
const TOOLS_CHANGED = 'notifications/tools/list_changed';

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Resolves with the time `needle` first arrives on the stream (read until then; the stream is then dropped). */
const arrival = (res: Response, needle: string, timeoutMs: number): Promise<number> =>
  new Promise((resolve, reject) => {
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no ${needle} within ${timeoutMs} ms`)), timeoutMs);
    const pump = async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return reject(new Error(`the stream ended before ${needle}: ${text.slice(-300)}`));
        text += decoder.decode(value, { stream: true });
        if (text.includes(needle)) {
          const at = performance.now();
          clearTimeout(timer);
          void reader.cancel().catch(() => undefined);
          return resolve(at);
        }
      }
    };
    pump().catch(reject);
  });

/** A legacy session's GET stream, open and attached. */
const legacyStream = async (url: string) => {
  const init = await fetch(`${url}/mcp`, { method: 'POST', headers: legacyHeaders({ protocolVersion: LEGACY_VERSION }), body: initializeBody(1, { name: 'bench', version: '1' }) });
  const sessionId = init.headers.get('mcp-session-id')!;
  await init.text();
  const session = { sessionId, protocolVersion: LEGACY_VERSION };
  await (await fetch(`${url}/mcp`, { method: 'POST', headers: legacyHeaders(session), body: initializedBody() })).text();
  const headers = { ...legacyHeaders(session), accept: 'text/event-stream' };
  return fetch(`${url}/mcp`, { method: 'GET', headers });
};

/** A modern listen stream asking for tool list changes. */
const modernStream = (url: string, id: number) =>
  fetch(`${url}/mcp`, { method: 'POST', headers: modernHeaders('subscriptions/listen'), body: listenBody(id, [], { toolsListChanged: true }) });

/** Whether a modern tools/list names `tool` (a request held while the app swaps is answered by the new one). */
const listsTool = async (url: string, tool: string) => {
  const { headers, body } = modernRequest({ id: 1, method: 'tools/list', params: {} });
  const res = await fetch(`${url}/mcp`, { method: 'POST', headers, body });
  return (await res.text()).includes(`"${tool}"`);
};

/** The app with `n` extra methods on products (each round adds one). */
const appWithMethods = (base: string, n: number) => {
  const names = Array.from({ length: n }, (_, i) => `touch_${i}`);
  return base
    .replace(/methods: \{/, `methods: {\n${names.map((m) => `        ${m}: { description: "Touch.", params: {}, apply: () => ({}) },`).join('\n')}`)
    .replace(/mcp: \[/, `mcp: [${names.map((m) => `"${m}", `).join('')}`);
};

export async function runDevReload(options: { rounds: number; rows: number; dataRoot: string }): Promise<DevReloadResult> {
  const root = freshDataDir(options.dataRoot, 'dev-reload');
  const appDir = join(root, 'app');
  mkdirSync(join(appDir, 'node_modules'), { recursive: true });
  symlinkSync(repoRoot, join(appDir, 'node_modules', 'writeonce'), 'dir');
  symlinkSync(join(repoRoot, 'node_modules', 'effect'), join(appDir, 'node_modules', 'effect'), 'dir');
  writeFileSync(join(appDir, 'package.json'), JSON.stringify({ type: 'module' }));
  const base = readFileSync(join(repoRoot, 'bench/apps/pricing-plain/app.ts'), 'utf8');
  if (!/methods: \{/.test(base) || !/mcp: \[/.test(base)) throw new Error('bench/apps/pricing-plain/app.ts: no methods or mcp list to add to');
  writeFileSync(join(appDir, 'app.ts'), base);
  const server = await spawnWo(['dev', appDir, '--data', join(root, 'data'), '--listen', '127.0.0.1:0'], { readyTimeoutMs: 30_000, stopTimeoutMs: 3000, outputLimit: 16_384 });
  const legacyMs: number[] = [];
  const modernMs: number[] = [];
  const listedMs: number[] = [];
  try {
    await seedProducts(server.url, options.rows);
    for (let round = 1; round <= options.rounds; round++) {
      const legacy = await legacyStream(server.url);
      const modern = await modernStream(server.url, round);
      const legacyAt = arrival(legacy, TOOLS_CHANGED, 30_000);
      const modernAt = arrival(modern, TOOLS_CHANGED, 30_000);
      // Let both streams attach (headers sent first, then the subscription): a reload is far slower than this.
      await new Promise((r) => setTimeout(r, 100));
      const saved = performance.now();
      writeFileSync(join(appDir, 'app.ts'), appWithMethods(base, round));
      legacyMs.push((await legacyAt) - saved);
      modernMs.push((await modernAt) - saved);
      if (!(await listsTool(server.url, `products_touch_${round - 1}`))) throw new Error(`round ${round}: tools/list after list_changed lacks the new tool`);
      listedMs.push(performance.now() - saved);
      // The next round's streams go to the new app: wait until it serves (the reload is logged once it does).
      const deadline = Date.now() + 30_000;
      while (server.stdout().split('wo dev: reloaded').length - 1 < round && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    }
  } finally {
    await server.stop();
  }
  const pass = [legacyMs, modernMs, listedMs].every((ms) => median(ms) <= BUDGET_MS);
  return { rounds: options.rounds, rows: options.rows, legacyMs, modernMs, listedMs, budgetMs: BUDGET_MS, pass };
}

export const renderDevReload = (r: DevReloadResult): string => {
  const line = (era: string, ms: ReadonlyArray<number>) =>
    `| ${era} | ${median(ms).toFixed(0)} ms | ${Math.max(...ms).toFixed(0)} ms | ${median(ms) <= r.budgetMs ? 'PASS' : 'MISS'} |`;
  return [
    `### wo dev: edit to tools/list_changed (${r.rounds} reloads, ${r.rows} rows; budget median <= ${r.budgetMs} ms)`,
    '',
    '| era | median | worst | budget |',
    '|---|---|---|---|',
    line('legacy GET stream', r.legacyMs),
    line('modern listen', r.modernMs),
    line('new tool in tools/list', r.listedMs),
    '',
    `dev-reload: ${r.pass ? 'PASS' : 'MISS'}`,
  ].join('\n');
};

if (import.meta.url === `file://${process.argv[1]}`) {
  const quick = process.argv.includes('--quick');
  const result = await runDevReload({
    rounds: quick ? 3 : 10,
    rows: quick ? 200 : 2000,
    dataRoot: process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-dev-reload'),
  });
  console.log(renderDevReload(result));
  if (!quick) writeFileSync(join(repoRoot, 'bench/results/dev-reload.json'), `${JSON.stringify(result, null, 2)}\n`);
}
