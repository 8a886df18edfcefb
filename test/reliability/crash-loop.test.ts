/**
 * The crash loop, short form (3 cycles; `node --import tsx scripts/crash-loop.ts` runs 20). See
 * testkit/crash-loop.ts for what each cycle checks.
 */
import { describe, expect, it } from "vitest"
import { runCrashLoop } from "../../testkit/crash-loop.ts"

describe("crash loop: kill -9 under 32 writes in flight, restart, check", () => {
  it("loses no acknowledged write, keeps the log whole, and resumes every notification", async () => {
    const report = await runCrashLoop({ cycles: 3, log: (line) => console.log(line) })
    console.log(`crash loop seed ${report.seed}: ${report.cycles.length} cycles, ${report.ackedWrites} acknowledged writes, ` +
      `${report.lost} lost, ${report.notificationsChecked} notifications checked`)
    expect(report.problems, `seed ${report.seed}, data dir ${report.dataDir}`).toEqual([])
    expect(report.lost).toBe(0)
    expect(report.cycles).toHaveLength(3)
    // The traffic was real: every cycle acknowledged writes up to its kill point (a count, not a time, so a
    // loaded machine only makes the cycle slower) with more in flight, and some landed on subscribed rows.
    for (const c of report.cycles) {
      expect(c.ackedThisCycle, `cycle ${c.cycle}`).toBeGreaterThanOrEqual(c.killAtAcks)
      expect(c.ackedThisCycle, `cycle ${c.cycle}`).toBeGreaterThan(20)
    }
    expect(report.notificationsChecked).toBeGreaterThan(0)
  }, 120_000)
})
