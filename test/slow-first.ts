/**
 * The order files start in: the slowest first, so that none of them starts last and becomes the run's tail while
 * the other workers sit idle. The slowest are named below (they take tens of seconds each, minutes on a loaded
 * machine); the rest follow in vitest's own order (the last run's durations where it has them, else size).
 */
import * as path from "node:path"
import { BaseSequencer, type TestSpecification } from "vitest/node"

/**
 * Slowest first: the files of 20 s or more in a whole CI run (four at a time on 2 cores), longest first, as the
 * run of the suite listed them (`npx vitest run` prints each file's time). A name that matches no file is ignored.
 */
export const SLOWEST = [
  "test/package.test.ts",
  "test/reliability/index-crash.test.ts",
  "test/integration/dev-hostile-saves.test.ts",
  "test/integration/cli.test.ts",
  "test/integration/postgres-cache.test.ts",
  "test/cluster/failover.test.ts",
  "test/cluster/id-blocks.test.ts",
  "test/reliability/backup.test.ts",
  "test/integration/cluster-nodes.test.ts",
  "test/integration/store-rows.test.ts",
  "test/reliability/backup-edges.test.ts",
  "test/integration/keyed-views-durability.test.ts",
  "test/reliability/read-only-tools.test.ts",
  "test/integration/postgres-store.test.ts",
  "test/integration/cluster-commands.test.ts",
  "test/cluster/fencing-memory.test.ts",
  "test/integration/cluster-idempotency.test.ts",
  "test/integration/library-writer.test.ts",
  "test/integration/wo-test-typecheck.test.ts",
  "test/integration/dev.test.ts",
  "test/integration/schema-evolution.test.ts",
  "test/integration/user-code-copies.test.ts",
  "test/integration/filtered-first-page.test.ts",
  "test/reliability/fuzz.test.ts",
  "test/cluster/request-deadline.test.ts"
]

export class SlowestFirst extends BaseSequencer {
  override async sort(files: Array<TestSpecification>): Promise<Array<TestSpecification>> {
    const sorted = await super.sort(files)
    const rank = (spec: TestSpecification) => SLOWEST.indexOf(path.relative(this.ctx.config.root, spec.moduleId))
    const slowest = sorted.filter((spec) => rank(spec) >= 0).sort((a, b) => rank(a) - rank(b))
    return [...slowest, ...sorted.filter((spec) => rank(spec) < 0)]
  }
}
