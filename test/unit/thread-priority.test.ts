/**
 * support/thread-priority.ts on a real worker thread: `idleThread` puts that thread alone in the idle scheduling
 * class (SCHED_IDLE, policy 5 in /proc), as the kernel reports it; the calling thread keeps its own. Linux only.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import { Worker } from "node:worker_threads"
import { describe, expect, it } from "vitest"
import { idleThread, THREAD_ID_EXPRESSION } from "../../src/support/thread-priority.ts"

/** The scheduling policy of thread `id` of this process (field 41 of its stat line). */
const policyOf = (id: number | "self") => {
  const stat = fs.readFileSync(id === "self" ? "/proc/thread-self/stat" : `/proc/self/task/${id}/stat`, "utf8")
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[41 - 3])
}

describe.runIf(fs.existsSync("/proc/thread-self"))("thread priority", () => {
  it("puts one worker thread in the idle class, and nothing else", async () => {
    const worker = new Worker(`require("node:worker_threads").parentPort.postMessage(${THREAD_ID_EXPRESSION}); setInterval(() => {}, 1000)`, { eval: true })
    try {
      const id = await new Promise<number>((resolve) => worker.once("message", resolve))
      expect(id).not.toBe(process.pid)
      expect(policyOf(id)).toBe(0)
      const got = await Effect.runPromise(idleThread(id))
      // chrt is part of util-linux; without it the nice value is lowered instead.
      if (got === "idle priority") expect(policyOf(id)).toBe(5)
      else expect(got).toBe("nice 19")
      expect(policyOf("self")).toBe(0)
      expect(policyOf(process.pid)).toBe(0)
    } finally {
      await worker.terminate()
    }
  })

  it("changes nothing without a thread id", async () => {
    expect(await Effect.runPromise(idleThread(null))).toMatch(/^normal priority/)
    expect(policyOf("self")).toBe(0)
  })
})
