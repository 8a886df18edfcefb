// Preloaded into a spawned server whose memory a test measures (node args: `--expose-gc --require <this file>`):
// on SIGUSR2 it collects garbage fully, then prints GC_DONE on stderr, so that the test reads the memory the
// process holds rather than garbage V8 has not collected yet (how much of that there is depends on when the
// collector last ran, not on the data). The server itself has no such hook.
"use strict"
process.on("SIGUSR2", () => {
  globalThis.gc()
  globalThis.gc()
  process.stderr.write("GC_DONE\n")
})
