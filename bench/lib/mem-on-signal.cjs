"use strict"
// Preloaded by bench/stream-memory.ts (`--expose-gc --require`), like testkit/gc-on-signal.cjs but with the figures:
// SIGUSR2: full GC, then one JSON line of memory figures on stderr; with HEAPSNAP set, a heap snapshot too.
// SIGWINCH: the same figures as they are, without a GC first (what V8 keeps of its own accord).
const v8 = require("node:v8")
let n = 0
const report = (gc) => {
  if (gc) { globalThis.gc(); globalThis.gc() }
  const m = process.memoryUsage()
  const st = require("node:fs").readFileSync("/proc/self/status", "utf8")
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(st)[1]) * 1024
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, [Math.round(s.space_used_size / 1024), Math.round(s.physical_space_size / 1024)]]))
  const h = v8.getHeapStatistics()
  let file = ""
  if (gc && process.env.HEAPSNAP) file = v8.writeHeapSnapshot(`${process.env.HEAPSNAP}-${n++}.heapsnapshot`)
  process.stderr.write(`${gc ? "MEM" : "NOGC"} ${JSON.stringify({ rss: m.rss, anon: kb("RssAnon"), fileRss: kb("RssFile"), heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers, malloced: h.malloced_memory, physical: h.total_physical_size, peakMalloced: h.peak_malloced_memory, spaces, file })}\n`)
}
process.on("SIGUSR2", () => report(true))
process.on("SIGWINCH", () => report(false))
