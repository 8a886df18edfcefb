/**
 * The order files start in: the slowest first, so that none of them starts last and becomes the run's tail while
 * the other workers sit idle. The slowest are named below (they take tens of seconds each, minutes on a loaded
 * machine); the rest follow in vitest's own order (the last run's durations where it has them, else size).
 */
import * as path from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/** Slowest first (30 s or more each in a whole run, one file at a time). A name that matches no file is ignored. */
export const SLOWEST = [
  "test/reliability/backup.test.ts",
  "test/reliability/backup-edges.test.ts",
  "test/integration/cluster-nodes.test.ts",
  "test/cluster/failover.test.ts",
  "test/package.test.ts",
  "test/reliability/read-only-tools.test.ts",
  "test/integration/cluster-idempotency.test.ts",
  "test/integration/library-sample.test.ts",
  "test/integration/wo-test-typecheck.test.ts",
  "test/reliability/index-crash.test.ts",
  "test/integration/cluster-commands.test.ts",
  "test/integration/cli.test.ts",
  "test/reliability/corruption.test.ts",
  "test/integration/postgres-store.test.ts"
]

export class SlowestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    const rank = (spec: TestSpecification) => SLOWEST.indexOf(path.relative(this.ctx.config.root, spec.moduleId))
    const slowest = sorted.filter((spec) => rank(spec) >= 0).sort((a, b) => rank(a) - rank(b))
    return [...slowest, ...sorted.filter((spec) => rank(spec) < 0)]
  }
}
