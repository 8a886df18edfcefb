import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { haveBinaries, startCluster, warnIfSkipped } from "./pg-cluster.ts"
import { childrenOf } from "./stop-cluster.ts"

warnIfSkipped("the test cluster's own stop")

describe.skipIf(!haveBinaries)("the test cluster's stop", () => {
  it("stops a cluster whose primary a test left paused, its children too", async () => {
    const cluster = await startCluster()
    const postmaster = Number(fs.readFileSync(path.join(cluster.dir, cluster.primary(), "postmaster.pid"), "utf8").split("\n")[0])
    const processes = [postmaster, ...childrenOf(postmaster)]
    cluster.pause(cluster.primary(), true)
    expect(processes.length).toBeGreaterThan(1)
    cluster.stop()
    const running = processes.filter((pid) => {
      try {
        return !fs.readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").startsWith("Z")
      } catch {
        return false
      }
    })
    expect(running).toEqual([])
  }, 120_000)
})
