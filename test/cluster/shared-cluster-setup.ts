/**
 * The run's global setup for the shared PostgreSQL cluster (sharedCluster in pg-cluster.ts): a coordination
 * directory for the files, and, at the end of the run, the cluster stopped if a file started one. Nothing starts
 * here, so a run without PostgreSQL tests pays nothing.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { TestProject } from "vitest/node"
import { stopClusterNow } from "./stop-cluster.ts"

declare module "vitest" {
  export interface ProvidedContext {
    /** Where the files that share the cluster meet: its data dir and its ports once started. */
    sharedPgDir: string
  }
}

export default function setup(project: TestProject) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wo-shared-pg-"))
  fs.chmodSync(dir, 0o755) // as root, the servers run as `postgres`, which must reach the cluster's dir inside
  project.provide("sharedPgDir", dir)
  return () => {
    stopClusterNow(path.join(dir, "cluster"))
    if (process.env.WO_KEEP_PG === undefined) fs.rmSync(dir, { recursive: true, force: true })
  }
}
