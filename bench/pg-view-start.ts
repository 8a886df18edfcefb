// Node start on a PostgreSQL store of many events and few rows: how long a node
// takes from its runtime's build to serving HTTP, with its rows and views recovered. Run it twice, with the code
// before and after a change, on the same store. Run with
// `node --conditions=writeonce-source --import tsx bench/pg-view-start.ts` (it serves examples/pricing, whose
// "writeonce" import resolves to this checkout's sources under that condition), and:
//   --events 1000000      starts a cluster (scripts/pg-cluster.sh), writes the events, measures, and leaves the
//                         cluster running (run it first with the older code: a newer store format is refused by an
//                         older release)
//   --store <url printed> measures on that store only
//   then `bash scripts/pg-cluster.sh stop <dir printed>` when done
//
// The events: 4 products created, then set_price events round-robin over them, written through the store's own
// append (testkit/pg-price-log.ts). Each start is measured --starts times (default 3), the node stopped in between
// (on a release that stores view snapshots, at shutdown), once every view is served.
//
// Measured Dec 3 on the shared 2-core machine (load average 5-6: other work ran), 1,000,000 events, one store, the
// code before and after alternated. Before (rows folded from the whole log at start, views from their snapshot):
// 14.0, 24.1 and 16.9 s to serving (40.2 s on the first start, which had no views snapshot yet). After (rows read
// from the rows table in one snapshot with the head, no event folded): 0.44, 0.27, 0.28, 0.39 and 0.25 s, rows and
// views each loaded in 2-36 ms. Median 0.28 s against 16.9 s: 0.017x (0.010-0.031x). The whole log is still read once
// per start in the background by the log audit (log-audit.ts); serving does not wait for it.
// Left: a start with a views tail rebuilds the rows the tail starts from out of those entities' whole history
// (`eventsOf`). Measured by hand on the same store: another node running and 100 set_price written since its
// snapshot, a node started in 27.1 s (views tail folded in 26.4 s: the 4 products' history is the whole log); before
// `eventsOf` was read a page at a time, that one statement outlasted WO_STORE_TIMEOUT and the start failed.
import { Effect, ManagedRuntime } from "effect"
import { execFileSync } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { loadSettings } from "../src/support/config.ts"
import { HttpServer } from "../src/http/server.ts"
import { Rows } from "../src/projections/rows/rows.ts"
import { Views } from "../src/projections/views/views.ts"
import { writeOnceLayer } from "../src/runtime/runtime.ts"
import { writePriceLog } from "../testkit/pg-price-log.ts"
import pricing from "../examples/pricing/app.ts"

const tempDir = (prefix: string) => mkdtempSync(join(tmpdir(), prefix))

const option = (name: string) => {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? undefined : process.argv[i + 1]
}
const events = Number(option("events") ?? 1_000_000)
const starts = Number(option("starts") ?? 3)

const startNode = async (store: string) => {
  const settings = await Effect.runPromise(loadSettings({ dataDir: tempDir("wo-pg-start-") }, { host: "127.0.0.1", port: 0, store }))
  const began = performance.now()
  const runtime = ManagedRuntime.make(writeOnceLayer(pricing, settings, { logger: false, signals: false }))
  const { url } = await runtime.runPromise(HttpServer)
  const ms = performance.now() - began
  const rows = runtime.runSync(Effect.map(Rows, (r) => r.recovered))
  const views = runtime.runSync(Effect.map(Views, (v) => v.recovered))
  /** Waits until no view is being folded again in the background (a release that folds at start has none); ms since the build. */
  const allServed = async () => {
    while (runtime.runSync(Effect.map(Views, (v) => v.all().some((s) => (s as { refolding?: string }).refolding !== undefined)))) {
      await new Promise((r) => setTimeout(r, 50))
    }
    return performance.now() - began
  }
  return { url, ms, rows, views, allServed, stop: () => runtime.dispose() }
}

let store = option("store")
if (store === undefined) {
  const pgDir = tempDir("wo-pg-start-cluster-")
  const base = 20_000 + Math.floor(Math.random() * 12_000)
  store = execFileSync("bash", [join(import.meta.dirname, "../scripts/pg-cluster.sh"), "start", pgDir, String(base)], { encoding: "utf8" }).trim().split("\n").pop()!
  console.log(`cluster: ${pgDir} (stop it with: bash scripts/pg-cluster.sh stop ${pgDir})`)
  const began = performance.now()
  await writePriceLog(store, { products: 4, events })
  console.log(`wrote ${events} set_price events in ${((performance.now() - began) / 1000).toFixed(1)} s`)
}
console.log(`store: ${store}`)
for (let i = 1; i <= starts; i++) {
  const node = await startNode(store)
  const served = await node.allServed()
  console.log(
    `start ${i}: ${(node.ms / 1000).toFixed(2)} s to serving, ${(served / 1000).toFixed(2)} s to every view served; ` +
      `rows ${JSON.stringify(node.rows)}; views ${JSON.stringify(node.views)}`
  )
  await node.stop()
}
