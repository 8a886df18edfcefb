// Where a background fold should run so that reads served meanwhile keep their latency: an experiment, not the
// product. A plain HTTP server answers a small JSON (a view read) to 4 closed-loop readers while a synthetic fold
// (parse an event, keep its entity's row as JSON bytes, count by currency: the work of a view refold per event)
// runs:
//  - idle: no fold;
//  - main: on the server's thread, paced as writeonce paces long work (slices of 4 events, a turn of the event loop
//    once a tenth of a millisecond has passed: src/log/paced-read.ts);
//  - worker: in a worker thread, unpaced;
//  - worker-nice: the same, the worker's thread at nice 19 (os.setPriority on its thread id);
//  - worker-idle: the same, the worker's thread under SCHED_IDLE (chrt -i), which runs only when no other thread
//    of the machine wants the CPU.
// `--server wo` serves the real thing instead: `wo run examples/pricing` on a fresh data dir, its view read, the fold
// started in its process by a module it imports first (`node --import`), on its main thread or in a worker thread.
// The modes alternate, `--rounds` times each, each measured over `--seconds` after a second of warm-up; the table
// gives each mode's read p50/p99 (the medians of its rounds), p99 against idle's, and the events the fold got
// through per second meanwhile.
//   node --import tsx bench/fold-placement.ts [--server plain|wo] [--rounds 2] [--seconds 10]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { spawnWo } from '../testkit/spawn.ts';

const MODES = ['idle', 'main', 'worker', 'worker-nice', 'worker-idle'] as const;
type Mode = (typeof MODES)[number];
/** Entities the synthetic log touches (a row each, replaced on their later events): bounds the fold's memory. */
const ENTITIES = 200_000;

/** Folds synthetic events until stopped; `folded()` counts them. `paced`: gives the event loop a turn every 0.1 ms. */
const fold = (paced: boolean) => {
  const rows = new Map<string, Buffer>();
  const counts: Record<string, number> = { USD: 0, EUR: 0 };
  let i = 0;
  const step = () => {
    const began = performance.now();
    for (;;) {
      for (let k = 0; k < 4; k++, i++) {
        const id = i % ENTITIES;
        const text = `{"seq":${i + 1},"type":"products","id":"${id}","version":1,"data":{"name":"item-${i}","price":${i},"currency":"${i % 3 ? 'USD' : 'EUR'}"}}`;
        const event = JSON.parse(text) as { id: string; version: number; data: { currency: string } };
        rows.set(event.id, Buffer.from(JSON.stringify({ id: event.id, version: event.version, ...event.data })));
        counts[event.data.currency]++;
      }
      if (paced && performance.now() - began > 0.1) return void setImmediate(step);
      // Unpaced: a worker's loop still takes its messages now and then.
      if (!paced && i % 65_536 === 0) return void setImmediate(step);
    }
  };
  step();
  return { folded: () => i };
};

const serve = (mode: Mode) => {
  const body = JSON.stringify({ USD: 1234, EUR: 567, total: 1801 });
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
  server.keepAliveTimeout = 60_000;
  let folded = () => 0;
  server.listen(0, '127.0.0.1', () => {
    if (mode === 'main') folded = fold(true).folded;
    else if (mode !== 'idle') {
      let count = 0;
      const worker = new Worker(workerSource(mode), { eval: true });
      worker.on('message', (n: number) => (count = n));
      folded = () => count;
    }
    process.stdout.write(`PORT ${(server.address() as { port: number }).port}\n`);
  });
  // Asked for the count at the window's start and end.
  process.stdin.on('data', () => process.stdout.write(`FOLDED ${folded()}\n`));
};

/**
 * The worker's code, evaluated (a worker cannot load this TypeScript file): the same `fold`, its thread's priority
 * lowered first as the mode says.
 */
const workerSource = (mode: Mode) => `
  const { parentPort } = require("node:worker_threads")
  const { readlinkSync } = require("node:fs")
  const { execFileSync } = require("node:child_process")
  const os = require("node:os")
  const ENTITIES = ${ENTITIES}
  // What tsx's transform may call in the function's text (it keeps functions' names).
  const __name = (f) => f
  const threadId = () => Number(readlinkSync("/proc/thread-self").split("/").pop())
  if (${JSON.stringify(mode)} === "worker-nice") os.setPriority(threadId(), 19)
  if (${JSON.stringify(mode)} === "worker-idle") execFileSync("chrt", ["-i", "-p", "0", String(threadId())])
  const fold = ${fold.toString()}
  const { folded } = fold(false)
  setInterval(() => parentPort.postMessage(folded()), 100)
`;

const percentile = (sorted: ReadonlyArray<number>, p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A server under test: where to read, how far its fold has got, and how to stop it. */
interface Started {
  readonly port: number;
  readonly path: string;
  readonly folded: () => Promise<number>;
  readonly stop: () => Promise<void>;
}

/** The plain server of this file, in a child process; it answers its fold's count on stdin. */
const startPlain = async (mode: Mode): Promise<Started> => {
  const child = spawn(process.execPath, [...process.execArgv, new URL(import.meta.url).pathname, '--serve', mode], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines: Array<string> = [];
  let wake = () => undefined as void;
  child.stdout.setEncoding('utf8').on('data', (s: string) => {
    lines.push(...s.split('\n').filter(Boolean));
    wake();
  });
  const line = async (prefix: string) => {
    for (;;) {
      const i = lines.findIndex((l) => l.startsWith(prefix));
      if (i >= 0) return lines.splice(i, 1)[0]!.slice(prefix.length);
      await new Promise<void>((resolve) => (wake = resolve));
    }
  };
  try {
    const port = Number(await line('PORT '));
    return {
      port,
      path: '/api/_views/totals',
      folded: async () => {
        child.stdin.write('\n');
        return Number(await line('FOLDED '));
      },
      stop: async () => void child.kill('SIGKILL'),
    };
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
};

/**
 * The real server: `wo run examples/pricing` on a fresh data dir, its view read, with the fold started in its
 * process by a module it imports first (`--import`): on its main thread paced, or in a worker thread.
 */
const startWoServer = async (mode: Mode): Promise<Started> => {
  const dir = mkdtempSync(join(tmpdir(), 'wo-fold-placement-'));
  const preload = join(dir, 'fold.mjs');
  const countFile = join(dir, 'folded');
  writeFileSync(preload, `
    import { Worker } from "node:worker_threads"
    import { writeFileSync } from "node:fs"
    const __name = (f) => f
    const ENTITIES = ${ENTITIES}
    const mode = ${JSON.stringify(mode)}
    let folded = () => 0
    if (mode === "main") {
      const fold = ${fold.toString()}
      folded = fold(true).folded
    } else if (mode !== "idle") {
      let count = 0
      const worker = new Worker(${JSON.stringify(workerSource(mode))}, { eval: true })
      worker.on("message", (n) => (count = n))
      worker.unref()
      folded = () => count
    }
    setInterval(() => writeFileSync(${JSON.stringify(countFile)}, String(folded())), 100).unref()
  `);
  const server = await spawnWo(['run', 'examples/pricing', '--data', join(dir, 'data'), '--listen', '127.0.0.1:0'], {
    nodeArgs: ['--import', preload], readyTimeoutMs: 60_000,
  });
  const port = Number(new URL(server.loopbackUrl).port);
  return {
    port,
    path: '/api/_views/products_by_currency',
    folded: async () => {
      await new Promise((resolve) => setTimeout(resolve, 150));
      return Number(readFileSync(countFile, 'utf8') || 0);
    },
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
};

const measure = async (mode: Mode, seconds: number, server: 'plain' | 'wo') => {
  const started = server === 'wo' ? await startWoServer(mode) : await startPlain(mode);
  try {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
    const read = () => new Promise<number>((resolve, reject) => {
      const began = performance.now();
      http.get({ host: '127.0.0.1', port: started.port, path: started.path, agent }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - began) : reject(new Error(`answered ${res.statusCode}`))));
      }).on('error', reject);
    });
    const readFor = async (ms: number) => {
      const latencies: Array<number> = [];
      const end = performance.now() + ms;
      await Promise.all(Array.from({ length: 4 }, async () => {
        while (performance.now() < end) latencies.push(await read());
      }));
      return latencies.sort((a, b) => a - b);
    };
    await readFor(1000);
    const before = await started.folded();
    const began = performance.now();
    const latencies = await readFor(seconds * 1000);
    const after = await started.folded();
    const elapsed = (performance.now() - began) / 1000;
    agent.destroy();
    return { reads: latencies.length, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), foldedPerSec: (after - before) / elapsed };
  } finally {
    await started.stop();
  }
};

const argOf = (name: string, fallback: number) => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};

if (process.argv.includes('--serve')) serve(process.argv[process.argv.indexOf('--serve') + 1] as Mode);
else {
  const rounds = argOf('--rounds', 2);
  const seconds = argOf('--seconds', 10);
  const server = process.argv.includes('--server') && process.argv[process.argv.indexOf('--server') + 1] === 'wo' ? 'wo' : 'plain';
  const results = new Map<Mode, Array<Awaited<ReturnType<typeof measure>>>>(MODES.map((m) => [m, []]));
  for (let r = 0; r < rounds; r++) {
    for (const mode of MODES) {
      const result = await measure(mode, seconds, server);
      results.get(mode)!.push(result);
      console.error(`round ${r + 1} ${mode}: ${result.reads} reads, p50 ${result.p50.toFixed(3)} ms, p99 ${result.p99.toFixed(3)} ms, ${Math.round(result.foldedPerSec)} events/s folded`);
    }
  }
  const idleP99 = median(results.get('idle')!.map((r) => r.p99));
  console.log(`\n${server === 'wo' ? '`wo run examples/pricing`, its view read' : 'a plain server'}; ${os.cpus().length} cores, ${rounds} rounds of ${seconds} s per mode, 4 readers (medians of the rounds)\n`);
  console.log('| fold | reads/s | read p50 ms | read p99 ms | p99 / idle | events folded/s |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const mode of MODES) {
    const rs = results.get(mode)!;
    const p99 = median(rs.map((r) => r.p99));
    console.log(`| ${mode} | ${Math.round(median(rs.map((r) => r.reads)) / seconds)} | ${median(rs.map((r) => r.p50)).toFixed(3)} | ${p99.toFixed(3)} | ${(p99 / idleP99).toFixed(2)}x | ${Math.round(median(rs.map((r) => r.foldedPerSec)))} |`);
  }
}
