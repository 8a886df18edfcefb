/** A node's memory of its PostgreSQL store (log/postgres/fence-memory.ts): real files in a temp dir. */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { FENCE_MEMORY_FILE, furthest, readFenceMemory, writeFenceMemory } from "../../src/log/postgres/fence-memory.ts"
import { inspectDataDir } from "../../src/log/classic-level/data-dir.ts"
import { tempDir } from "../../testkit/server.ts"

describe("a node's memory of its store", () => {
  it("is absent in a fresh data dir, and read back as written, WAL positions past 2^53 exact", async () => {
    const dir = tempDir("wo-fence-mem-")
    expect(readFenceMemory(dir)).toBeUndefined()
    const seen = { systemIdentifier: "7438123456789012345", timeline: 3, lsn: 2n ** 60n + 7n }
    await writeFenceMemory(dir, seen)
    expect(readFenceMemory(dir)).toEqual(seen)
    // Written whole and renamed into place: no temporary file is left beside it.
    expect(fs.readdirSync(dir)).toEqual([FENCE_MEMORY_FILE])
  })

  it("says why a damaged file cannot be read, naming it, instead of forgetting", () => {
    const dir = tempDir("wo-fence-mem-")
    fs.writeFileSync(path.join(dir, FENCE_MEMORY_FILE), `{"timeline": "two"`)
    const read = readFenceMemory(dir)
    expect(read).toMatchObject({ unreadable: expect.stringContaining(path.join(dir, FENCE_MEMORY_FILE)) })
  })

  it("keeps the furthest position: a newer timeline whatever its WAL position, on one timeline the furthest WAL", () => {
    const seen = { systemIdentifier: "1", timeline: 2, lsn: 500n }
    expect(furthest(seen, { timeline: 1, lsn: 900n })).toEqual(seen)
    expect(furthest(seen, { timeline: 2, lsn: 400n })).toEqual(seen)
    expect(furthest(seen, { timeline: 2, lsn: 600n })).toEqual({ systemIdentifier: "1", timeline: 2, lsn: 600n })
    expect(furthest(seen, { timeline: 3, lsn: 10n })).toEqual({ systemIdentifier: "1", timeline: 3, lsn: 10n })
    expect(furthest(undefined, { timeline: 1, lsn: 1n })).toEqual({ timeline: 1, lsn: 1n })
  })

  it("does not make a data dir that holds only it look like a damaged LevelDB store", async () => {
    const dir = tempDir("wo-fence-mem-")
    await writeFenceMemory(dir, { timeline: 1, lsn: 1n })
    expect(inspectDataDir(dir)._tag).toBe("Empty")
  })
})
