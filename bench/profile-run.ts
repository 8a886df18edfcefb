// Where the server's main-thread CPU goes in the `npm run bench` scenarios that profile-core.ts does not
// cover: MCP tools/call on both eras (64 in flight, each caller on its own product) and the notification
// fan-out (listen streams on one row). Same method as profile-core.ts: a fresh server under --cpu-prof,
// warmed, one measured window, and only that window's samples counted, `src/` frames mapped to their
// TypeScript lines (bench/lib/cpuprofile.ts). Profiles: bench/results/run-<scenario>.cpuprofile (git-ignored).
//   node --import tsx bench/profile-run.ts [mcp_set_price_modern] [mcp_set_price_legacy] [mcp_get_modern]
//        [mcp_get_legacy] [rest_get] [fanout] [listen_open] [sdk_v2_modern]        (default: all)
// BENCH_PROFILE_MS (default 4000) sets the measured window; BENCH_TOP (default 20) the list lengths;
// BENCH_FANOUT_SUBSCRIBERS (default 100) the listen streams of `fanout`.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import { monoUs, readWindow, renderSelfTimes } from './lib/cpuprofile.ts';
import { runLoad, type LoadRequest } from './lib/load.ts';
import { modernToolCall, openLegacySession, toolCallSucceeded, type LegacySession } from '../testkit/mcp.ts';
import { spawnPeer, type SpawnedServer } from './lib/wo.ts';
import { DeliveryTracker, openListens } from './lib/subscribers.ts';
import { isRow, mcpCall, repoRoot, restGet, restSetPrice, seedProducts, startWo } from './lib/wo.ts';

const dataRoot = process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-run');
const outDir = join(repoRoot, 'bench', 'results');
const LOAD_MS = Number(process.env.BENCH_PROFILE_MS ?? 4000);
const WARM_MS = 3000;
const TOP = Number(process.env.BENCH_TOP ?? 20);
const FANOUT_SUBS = Number(process.env.BENCH_FANOUT_SUBSCRIBERS ?? 100);

interface Window {
  units: number;
  perSec: number;
}

interface Scenario {
  server: 'wo' | 'sdk-v2';
  unit: string;
  env?: Record<string, string>;
  /** Sets up (seed, sessions, subscribers) and returns the measured work, called twice: warm-up, then measured. */
  prepare(server: SpawnedServer): Promise<{ run(durationMs: number): Promise<Window>; done?(): Promise<void> }>;
}

const CONCURRENCY = 64;

function toolLoad(name: string, era: 'modern' | 'legacy', args: (i: number, w: number) => Record<string, unknown>): Scenario {
  return {
    server: 'wo',
    unit: 'call',
    prepare: async (server) => {
      await seedProducts(server.url, CONCURRENCY);
      const session: LegacySession | 'modern' = era === 'modern' ? 'modern' : await openLegacySession(server.url);
      return {
        run: async (durationMs) => {
          const r = await runLoad({
            url: server.url,
            concurrency: CONCURRENCY,
            durationMs,
            makeRequest: (i, w) => mcpCall(session, i + 1, name, args(i, w)),
            check: toolCallSucceeded,
          });
          if (r.errors) console.error(`${name}: ${r.errors} errors, first: ${r.firstError}`);
          return { units: r.calls, perSec: r.callsPerSec };
        },
      };
    },
  };
}

const scenarios: Record<string, Scenario> = {
  mcp_set_price_modern: toolLoad('products_set_price', 'modern', (i, w) => ({ id: String(w + 1), price: 1 + (i % 1000) })),
  mcp_set_price_legacy: toolLoad('products_set_price', 'legacy', (i, w) => ({ id: String(w + 1), price: 1 + (i % 1000) })),
  mcp_get_modern: toolLoad('products_get', 'modern', (_i, w) => ({ id: String(w + 1) })),
  mcp_get_legacy: toolLoad('products_get', 'legacy', (_i, w) => ({ id: String(w + 1) })),
  // The REST read the MCP gets are held against, loaded the same way: 64 in flight, each on its row.
  rest_get: {
    server: 'wo',
    unit: 'call',
    prepare: async (server) => {
      await seedProducts(server.url, CONCURRENCY);
      return {
        run: async (durationMs) => {
          const r = await runLoad({ url: server.url, concurrency: CONCURRENCY, durationMs, makeRequest: (_i, w) => restGet(w + 1), check: (status, body) => isRow(status, body, 200) });
          if (r.errors) console.error(`rest_get: ${r.errors} errors, first: ${r.firstError}`);
          return { units: r.calls, perSec: r.callsPerSec };
        },
      };
    },
  },
  sdk_v2_modern: {
    server: 'sdk-v2',
    unit: 'call',
    prepare: async (server) => ({
      run: async (durationMs) => {
        const r = await runLoad({
          url: server.url,
          concurrency: CONCURRENCY,
          durationMs,
          makeRequest: (i, w) => modernToolCall({ id: i + 1, name: 'set_price', arguments: { id: `p${w}`, price: i } }),
          check: toolCallSucceeded,
        });
        return { units: r.calls, perSec: r.callsPerSec };
      },
    }),
  },
  listen_open: {
    server: 'wo',
    unit: 'stream',
    env: { WO_MAX_LISTENS_PER_CLIENT: '5000', WO_MAX_LISTEN_STREAMS: '10000' },
    prepare: async (server) => {
      await seedProducts(server.url, 1);
      const all: Awaited<ReturnType<typeof openListens>> = [];
      return {
        run: async (durationMs) => {
          const started = performance.now();
          let n = 0;
          while (performance.now() - started < durationMs && all.length < 4000) {
            all.push(...(await openListens(server.url, 50, 'wo://products/1')));
            n += 50;
          }
          return { units: n, perSec: n / ((performance.now() - started) / 1000) };
        },
        done: async () => {
          for (const s of all) s.close();
        },
      };
    },
  },
  fanout: {
    server: 'wo',
    unit: 'notification',
    env: { WO_MAX_LISTENS_PER_CLIENT: '5000' },
    prepare: async (server) => {
      await seedProducts(server.url, 1);
      const subs = await openListens(server.url, FANOUT_SUBS, 'wo://products/1');
      const pool = new Pool(server.url, { connections: 1 });
      return {
        run: async (durationMs) => {
          const tracker = new DeliveryTracker(subs);
          const before = subs.reduce((a, s) => a + s.count, 0);
          const started = performance.now();
          let k = 0;
          while (performance.now() - started < durationMs && (await tracker.waitFor(k - 8, 5000))) {
            const req: LoadRequest = restSetPrice(1, 1 + (k % 1000));
            const res = await pool.request({ method: req.method, path: req.path, headers: req.headers, body: req.body });
            await res.body.dump();
            k++;
          }
          await tracker.waitFor(k, 5000);
          tracker.detach();
          const delivered = subs.reduce((a, s) => a + s.count, 0) - before;
          return { units: delivered, perSec: delivered / ((performance.now() - started) / 1000) };
        },
        done: async () => {
          for (const s of subs) s.close();
          await pool.close();
        },
      };
    },
  },
};

async function profileScenario(name: string, s: Scenario): Promise<void> {
  mkdirSync(dataRoot, { recursive: true });
  const profDir = mkdtempSync(join(dataRoot, `profiles-${name}-`));
  const nodeArgs = ['--cpu-prof', '--cpu-prof-dir', profDir];
  let dataDir: string | undefined;
  const server =
    s.server === 'wo'
      ? await startWo({ dir: (dataDir = mkdtempSync(join(dataRoot, `profile-${name}-`))), env: s.env, nodeArgs, stopTimeoutMs: 15_000 })
      : await spawnPeer('bench/peers/sdk-v2-server.ts', { nodeArgs, stopTimeoutMs: 15_000 });
  let window = { from: 0, to: 0, units: 0, perSec: 0 };
  try {
    const work = await s.prepare(server);
    try {
      await work.run(WARM_MS);
      const from = monoUs();
      const r = await work.run(LOAD_MS);
      window = { from, to: monoUs(), ...r };
    } finally {
      await work.done?.();
    }
  } finally {
    await server.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }
  const main = await readWindow(profDir, window.from, window.to, join(outDir, `run-${name}.cpuprofile`));
  const per = (v: number) => (window.units ? v / window.units : Number.NaN);
  console.log(`\n== ${name}: ${s.server}, ${Math.round(window.perSec)} ${s.unit}s/s under the profiler, ${window.units} ${s.unit}s in the window`);
  console.log(`main-thread busy time in the window: ${(main.total / 1000).toFixed(0)} ms = ${per(main.total).toFixed(1)} µs/${s.unit}` +
    `${main.windowed ? '' : ' (window not found in the profile: all samples counted)'}; bench/results/run-${name}.cpuprofile`);
  console.log(renderSelfTimes(main, window.units, TOP, s.unit));
}

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
for (const name of wanted.length ? wanted : Object.keys(scenarios)) {
  const s = scenarios[name];
  if (!s) throw new Error(`unknown scenario ${name}; pick from ${Object.keys(scenarios).join(', ')}`);
  await profileScenario(name, s);
}
