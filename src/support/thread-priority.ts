/**
 * Lowers the priority of one thread of this process (a worker thread doing background work), so that it takes only
 * the CPU the server's own thread leaves: on Linux the idle scheduling class (SCHED_IDLE: the thread runs when a
 * core has nothing else to run), else the lowest nice value. Node has no call for a thread's scheduling class, so
 * util-linux's `chrt` sets it, on the thread's Linux id; where `chrt` is missing or refused, `os.setPriority` sets
 * the nice value of that id (Linux keeps one per thread). Without an id (not Linux) nothing changes.
 *
 * Why not the nice value alone: a fold beside four readers of a view kept their p99 at 1.22x that with no fold
 * under SCHED_IDLE, 1.42x at nice 19 (bench/fold-placement.ts, docs/performance.md).
 */
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as os from "node:os"

/**
 * JavaScript, for a worker's program: the expression of its own Linux thread id (the last part of
 * /proc/thread-self), or null where there is none.
 */
export const THREAD_ID_EXPRESSION = `(() => { try { return Number(require("node:path").basename(require("node:fs").readlinkSync("/proc/thread-self"))) } catch { return null } })()`

/** Puts thread `id` at the lowest priority it can get (`null`: no id, nothing to do); answers which, in words for a log line. */
export const idleThread = (id: number | null): Effect.Effect<string> => {
  if (id === null || !Number.isSafeInteger(id)) return Effect.succeed("normal priority (this system has no per-thread priority writeonce can set)")
  return Effect.async<string>((resume) => {
    const child = execFile("chrt", ["--idle", "--pid", "0", String(id)], { timeout: 10_000 }, (error) => {
      if (error === null) return resume(Effect.succeed("idle priority"))
      try {
        os.setPriority(id, 19)
        resume(Effect.succeed("nice 19"))
      } catch {
        resume(Effect.succeed(`normal priority (neither chrt nor setpriority was allowed: ${error.message.split("\n")[0]})`))
      }
    })
    return Effect.sync(() => void child.kill())
  })
}
