// `wo dev`'s memory over many reloads: the resident set size of the dev server after each of N saves of app.ts,
// each save a different version (its own method name), each waited for until the server logs that it reloaded.
// The worker that loads versions first is replaced every 20 versions, so single samples saw-tooth; the figure is the
// median RSS of each block of 20 reloads, and the growth is the last block's against the second's (the first is the
// warm-up: the JIT, the first worker, the allocator's arenas). Budget: flat within 10 MB.
//   node --conditions=writeonce-source --import tsx bench/dev-reload-rss.ts               (200 reloads)
//   node --conditions=writeonce-source --import tsx bench/dev-reload-rss.ts --reloads 60
// BENCH_DATA_DIR: where the data dir goes.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeAppDir } from '../testkit/app-dir.ts';
import { spawnWo } from '../testkit/spawn.ts';
import { freshDataDir, repoRoot } from './lib/wo.ts';

const BUDGET_MB = 10;
const BLOCK = 20;

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The notes app with a method named after the save: every save is a version the server has not seen. */
const version = (n: number) => `
import { Schema } from "effect"
import { defineApp, entity } from "writeonce"

export default defineApp({
  name: "notes",
  entities: {
    notes: entity({
      fields: { title: Schema.String },
      methods: {
        touch_${n}: { description: "Touch ${n}.", params: {}, apply: () => ({}) }
      }
    })
  }
})
`;

const at = process.argv.indexOf('--reloads');
const reloads = at === -1 ? 200 : Number(process.argv[at + 1]);
if (!(reloads >= 2 * BLOCK)) throw new Error(`--reloads must be at least ${2 * BLOCK}`);
const appDir = writeAppDir(version(0));
const dataDir = freshDataDir(process.env.BENCH_DATA_DIR ?? join(repoRoot, '.data', 'bench-dev-rss'), 'dev-rss');
const server = await spawnWo(['dev', appDir, '--data', dataDir, '--listen', '127.0.0.1:0'], { readyTimeoutMs: 60_000, stopTimeoutMs: 5000 });
const reloaded = () => server.stdout().split('wo dev: reloaded').length - 1;
const blocks: Array<number> = [];
try {
  let samples: Array<number> = [];
  for (let n = 1; n <= reloads; n++) {
    writeFileSync(join(appDir, 'app.ts'), version(n));
    const deadline = Date.now() + 60_000;
    while (reloaded() < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    if (reloaded() < n) throw new Error(`reload ${n} was not logged within 60 s:\n${server.output().slice(-2000)}`);
    samples.push(rssMb(server.pid));
    if (samples.length === BLOCK) {
      blocks.push(median(samples));
      console.log(`reloads ${n - BLOCK + 1}-${n}: median RSS ${median(samples).toFixed(1)} MB (min ${Math.min(...samples).toFixed(1)}, max ${Math.max(...samples).toFixed(1)})`);
      samples = [];
    }
  }
} finally {
  await server.stop();
}
const growth = blocks[blocks.length - 1] - blocks[1];
console.log(`median RSS, reloads ${BLOCK + 1}-${2 * BLOCK}: ${blocks[1].toFixed(1)} MB; last ${BLOCK} of ${reloads}: ${blocks[blocks.length - 1].toFixed(1)} MB; ${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MB (budget ±${BUDGET_MB} MB): ${Math.abs(growth) <= BUDGET_MB ? 'PASS' : 'MISS'}`);
