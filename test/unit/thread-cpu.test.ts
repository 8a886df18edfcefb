/**
 * A thread's CPU time from /proc (support/thread-cpu.ts): it follows the CPU the thread burns, whatever the wall
 * time it takes; no id, or a thread that is not there, gives none.
 */
import { describe, expect, it } from "vitest"
import { threadCpuMs } from "../../src/support/thread-cpu.ts"

describe("threadCpuMs", () => {
  it("grows by the CPU this thread burns (the main thread's id is the process's)", () => {
    const before = threadCpuMs(process.pid)
    expect(before).toBeTypeOf("number")
    // Burns 300 ms of this process's CPU, however long that takes on a loaded machine.
    const start = process.cpuUsage()
    let spin = 0
    while (process.cpuUsage(start).user < 300_000) spin++
    expect(spin).toBeGreaterThan(0)
    const burnt = threadCpuMs(process.pid)! - before!
    // In ticks of 10 ms; the process's other threads may have taken part of the 300 ms.
    expect(burnt).toBeGreaterThanOrEqual(200)
  })

  it("gives none without an id, or for a thread that is not there", () => {
    expect(threadCpuMs(null)).toBeUndefined()
    expect(threadCpuMs(2 ** 30)).toBeUndefined()
  })
})
