import { defineConfig } from "vitest/config"
import { SlowestFirst } from "./test/slow-first.ts"

export default defineConfig({
  // "writeonce" (the examples' and test apps' import) resolves to this checkout's sources, not to dist/; the rest
  // are Vite's default server conditions.
  ssr: { resolve: { conditions: ["writeonce-source", "module", "node", "development|production"] } },
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    // vitest's default on 2 cores is one file at a time. Most files wait far more than they compute (on the
    // processes and servers they start, on fsync, on PostgreSQL): four at a time keep both cores busy.
    // `--maxWorkers` overrides it.
    maxWorkers: 4,
    // The four stay for the whole run (vitest would otherwise stop idle ones, and a file then fails with "Terminating
    // worker thread"), and each runs one file after another in the same process (isolate: false): a fresh process per
    // file cost about a CPU-second to import the runtime again, over a hundred times a run. Files therefore leave
    // nothing behind: they close what they open and restore the environment variables they set.
    minWorkers: 4,
    isolate: false,
    sequence: { sequencer: SlowestFirst },
    // The PostgreSQL cluster that the files which neither kill nor promote its servers share (pg-cluster.ts).
    globalSetup: ["test/cluster/shared-cluster-setup.ts"],
    // Hang guards: a loaded 2-core machine took over 60 s for a kill -9 case or a fuzz run that takes 15 s alone.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // The same for the processes tests spawn with `node --import tsx` (bin/wo.mjs sets it itself).
    env: { NODE_OPTIONS: [process.env.NODE_OPTIONS, "--conditions=writeonce-source"].filter(Boolean).join(" ") }
  }
})
