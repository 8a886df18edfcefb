// Keyed views: the cost of a write against the number of keys in the view, and the start against the number of
// keys, in-process (the real runtime over classic-level, REST on port 0, the load generator in the same process).
//  - writes: the keyed tasks app (testkit/keyed-tasks.ts: one entry per owner), its view's entries written
//    directly into a fresh store first (K owners, one entry each, the view's record naming the declaration), then
//    BENCH_WRITES creates from 16 clients, each for a random owner (so most touch an entry the cache has not read):
//    creates/s and process CPU per create (server and clients), against the same app without its view;
//  - start: the time to serve, on a store holding BENCH_START_KEYS entries, against an empty store.
// Rounds alternate the sides, so that load from outside falls on each; an unmeasured window warms up first.
//   node --import tsx bench/keyed-write-cost.ts      BENCH_ROUNDS (2), BENCH_WRITES (2000), BENCH_KEYS (400,100000), BENCH_START_KEYS (1000000)
import { ClassicLevel } from 'classic-level';
import { Effect, Either, Layer, Logger, LogLevel, ManagedRuntime } from 'effect';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Schema } from 'effect';
import { compileApp } from '../src/domain/compile.ts';
import { defineApp, entity, type AppDef } from '../src/index.ts';
import { HttpServer } from '../src/http/server.ts';
import { viewEntryKey, viewKey } from '../src/log/classic-level/log-keys.ts';
import { seal } from '../src/log/record.ts';
import { keyedViewRecordJson, viewEntryJson } from '../src/log/view-entry-record.ts';
import { viewDefinition } from '../src/log/view-record.ts';
import { writeOnceLayer } from '../src/runtime/runtime.ts';
import { loadSettings } from '../src/support/config.ts';
import { keyedTasks } from '../testkit/keyed-tasks.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const WRITES = Number(process.env.BENCH_WRITES ?? 2000);
const KEYS = (process.env.BENCH_KEYS ?? '400,100000').split(',').map(Number);
const START_KEYS = Number(process.env.BENCH_START_KEYS ?? 1_000_000);
const CLIENTS = 16;
const NAME = 'open_by_owner';

const withView = keyedTasks();
const withoutView = defineApp({ name: 'keyed_tasks', entities: { tasks: entity({ fields: { owner: Schema.String, title: Schema.String, done: Schema.Boolean } }) } });
const definition = viewDefinition(Either.getOrThrow(compileApp(withView)).views.get(NAME)!);

/** A fresh store holding `keys` entries of the view (owner-0 … owner-<keys-1>), and its record. */
async function seeded(keys: number) {
  const dir = mkdtempSync(join(tmpdir(), 'wo-keyed-cost-'));
  const db = new ClassicLevel<string, string>(dir);
  await db.open();
  await db.put(viewKey(NAME), seal(viewKey(NAME), keyedViewRecordJson(definition)));
  for (let i = 0; i < keys; ) {
    const batch = db.batch();
    for (const end = Math.min(keys, i + 10_000); i < end; i++) {
      const key = viewEntryKey(NAME, definition, `owner-${i}`);
      batch.put(key, seal(key, viewEntryJson(0, `{"open":1,"titles":["t${i}"]}`)));
    }
    await batch.write();
  }
  await db.close();
  return dir;
}

async function serve(dir: string, app: AppDef = withView) {
  const settings = await Effect.runPromise(loadSettings({ dataDir: dir }, { host: '127.0.0.1', port: 0 }));
  const started = performance.now();
  const runtime = ManagedRuntime.make(writeOnceLayer(app, settings, { logger: false, signals: false }).pipe(Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))));
  const { url } = await runtime.runPromise(HttpServer);
  return { url, startMs: performance.now() - started, close: () => runtime.dispose() };
}

async function writes(keys: number, app: AppDef = withView) {
  const dir = await seeded(keys);
  const server = await serve(dir, app);
  let next = 0;
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: CLIENTS }, async () => {
    while (next++ < WRITES) {
      const owner = `owner-${Math.floor(Math.random() * keys)}`;
      const res = await fetch(`${server.url}/api/tasks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ owner, title: `t${next}`, done: false }) });
      await res.text();
      if (res.status !== 201) throw new Error(`create answered ${res.status}`);
    }
  }));
  const ms = performance.now() - t0;
  const used = process.cpuUsage(cpu);
  await server.close();
  rmSync(dir, { recursive: true, force: true });
  return { perSec: (WRITES / ms) * 1000, cpuUsPerWrite: (used.user + used.system) / WRITES };
}

const results = new Map<string, Array<{ perSec: number; cpuUsPerWrite: number }>>();
const note = (side: string, r: { perSec: number; cpuUsPerWrite: number }) => results.set(side, [...(results.get(side) ?? []), r]);
// An unmeasured window first: the JIT warms up on no side's account.
await writes(400);
for (let round = 0; round < ROUNDS; round++) {
  note('no view (400 owners)', await writes(400, withoutView));
  for (const k of KEYS) note(`keyed view, ${k} keys`, await writes(k));
}
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`creates, ${CLIENTS} clients, ${WRITES} per window, ${ROUNDS} rounds (medians):`);
for (const [side, rs] of results) {
  console.log(`  ${side.padEnd(28)} ${median(rs.map((r) => r.perSec)).toFixed(0).padStart(6)} creates/s   ${median(rs.map((r) => r.cpuUsPerWrite)).toFixed(0).padStart(6)} µs CPU per create`);
}

const emptyDir = await seeded(0);
const fullDir = await seeded(START_KEYS);
const starts = { empty: [] as Array<number>, full: [] as Array<number> };
for (let round = 0; round < ROUNDS + 1; round++) {
  for (const [side, dir] of [['empty', emptyDir], ['full', fullDir]] as const) {
    const s = await serve(dir);
    starts[side].push(s.startMs);
    await s.close();
  }
}
console.log(`start to serving: empty store ${median(starts.empty).toFixed(0)} ms, ${START_KEYS} keys ${median(starts.full).toFixed(0)} ms (medians of ${ROUNDS + 1})`);
rmSync(emptyDir, { recursive: true, force: true });
rmSync(fullDir, { recursive: true, force: true });
