/**
 * The tools that check never write, and no open creates a database over data it cannot find:
 * every file of the data dir (name, size, sha256) is the same before and after `wo verify`, `wo replay`, each
 * refused `wo run`, and `wo backup` of a stopped dir (and a backup's after `wo restore`), on a whole dir and on damaged ones. A lost CURRENT is refused with the way back, and
 * `wo repair-current --write` brings every row back. A data dir that is a file gets one line.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { writeProducts } from "../../bench/lib/row-writer.ts"
import { runWo } from "../../testkit/spawn.ts"
import { filesOf } from "../../testkit/dir-files.ts"
import { apps, http, ROOT, spawnServer, startServer, tempDir } from "../../testkit/server.ts"

const pricing = path.join(ROOT, "examples/pricing")
const ROWS = 1800
/** A hang guard only (the tests run several `wo` processes on what may be a loaded machine). */
const SLOW = 240_000

/**
 * A stopped store of 1,800 products in a table file (`*.ldb`) and three repricings in the write-ahead log
 * (`*.log`), written by the server: 1,803 events.
 */
const buildStore = async () => {
  const dataDir = tempDir("wo-read-only-")
  await writeProducts(dataDir, ROWS, (i) => ({ name: `p${i}`, price: i, currency: "USD" }), { batchSize: 100 })
  const server = await startServer(apps.pricing, { dataDir })
  for (const id of [1, 2, 3]) await http(`${server.url}/api/products/${id}/set_price`, { method: "POST", body: { price: 70 + id } })
  await server.close()
  const names = fs.readdirSync(dataDir)
  expect(names.some((f) => /^\d+\.ldb$/.test(f))).toBe(true)
  expect(names.filter((f) => /^\d+\.log$/.test(f)).some((f) => fs.statSync(path.join(dataDir, f)).size > 0)).toBe(true)
  return dataDir
}

let built: string
beforeAll(async () => {
  built = await buildStore()
}, SLOW)

/** A fresh copy of the store built once. */
const store = () => {
  const copy = tempDir("wo-read-only-copy-")
  fs.cpSync(built, copy, { recursive: true })
  return copy
}

// A generous deadline: a hang guard only.
const wo = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => runWo(args, { timeoutMs: 90_000, env })
const verify = (dir: string, env: Record<string, string> = {}) => wo(["verify", dir], env)
const replay = (dir: string, env: Record<string, string> = {}) => wo(["replay", dir], env)
const run = (dir: string) => wo(["run", pricing, "--data", dir, "--listen", "127.0.0.1:0"])

/** Every row the server lists, page by page. */
const allRows = async (url: string) => {
  const ids: Array<string> = []
  let cursor: string | undefined
  do {
    const page = await http(`${url}/api/products?limit=100${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
    const body = page.json as { items: Array<{ id: string; price: number }>; nextCursor?: string }
    ids.push(...body.items.map((r) => r.id))
    cursor = body.nextCursor ?? undefined
  } while (cursor !== undefined)
  return ids
}

describe("wo verify and wo replay never write the data dir", () => {
  it("leaves every file of a whole dir as it was, and still checks it", async () => {
    const dataDir = store()
    const before = filesOf(dataDir)
    // Their private copies go to TMPDIR (hard links: the same file system), and are removed when they finish.
    const tmp = tempDir("wo-read-only-tmp-")
    const [verified, replayed, withApp] = await Promise.all([
      verify(dataDir, { TMPDIR: tmp }),
      replay(dataDir, { TMPDIR: tmp }),
      // With the app, verify also reads every row's references.
      wo(["verify", "--app", pricing, dataDir], { TMPDIR: tmp })
    ])
    expect(verified.stdout).toMatch(/verified 1803 events and 1800 rows/)
    expect(verified.code).toBe(0)
    expect(withApp.stdout + withApp.stderr).toMatch(/verified 1803 events and 1800 rows/)
    expect(withApp.code).toBe(0)
    expect(replayed.stdout).toMatch(/OK: the stored rows equal the log's fold/)
    expect(replayed.code).toBe(0)
    expect(filesOf(dataDir)).toEqual(before)
    expect(fs.readdirSync(tmp).filter((f) => f.startsWith("wo-snapshot-"))).toEqual([]) // (tsx keeps its cache there)
  }, SLOW)

  it("refuses a dir without CURRENT, changing nothing, and says what is missing and how to recover (wo run too)", async () => {
    const dataDir = store()
    fs.rmSync(path.join(dataDir, "CURRENT"))
    const before = filesOf(dataDir)
    for (const result of await Promise.all([verify(dataDir), replay(dataDir), run(dataDir)])) {
      expect(result.code).toBe(1)
      expect(result.stderr).toMatch(/is not empty \(.*\d+\.ldb.*\) but it has no CURRENT file/)
      expect(result.stderr).toMatch(/wo repair-current/)
      expect(result.stderr).not.toMatch(/earlier writeonce/)
      expect(filesOf(dataDir)).toEqual(before)
    }
  }, SLOW)

  it("refuses a CURRENT that names a missing MANIFEST, changing nothing (wo run too)", async () => {
    const dataDir = store()
    fs.writeFileSync(path.join(dataDir, "CURRENT"), "MANIFEST-000099\n")
    const before = filesOf(dataDir)
    for (const result of await Promise.all([verify(dataDir), run(dataDir)])) {
      expect(result.code).toBe(1)
      expect(result.stderr).toMatch(/its CURRENT file names MANIFEST-000099, which is missing/)
      expect(filesOf(dataDir)).toEqual(before)
    }
  }, SLOW)

  it("refuses a damaged write-ahead log, changing nothing (no evidence copy, no marker, the log kept)", async () => {
    const dataDir = store()
    const log = fs.readdirSync(dataDir).find((f) => /^\d+\.log$/.test(f) && fs.statSync(path.join(dataDir, f)).size > 0)!
    const bytes = fs.readFileSync(path.join(dataDir, log))
    bytes[Math.floor(bytes.length / 2)] ^= 0x10
    fs.writeFileSync(path.join(dataDir, log), bytes)
    const before = filesOf(dataDir)
    const [verified, replayed] = await Promise.all([verify(dataDir), replay(dataDir)])
    expect(verified.code).toBe(1)
    expect(verified.stderr).toMatch(/LevelDB drops data while opening .*; acknowledged writes may be lost/)
    expect(verified.stderr).toMatch(/nothing in the data dir was changed/)
    expect(verified.stderr).not.toMatch(/wo-snapshot-/) // named after the data dir, not the private copy
    expect(replayed.code).toBe(1)
    expect(filesOf(dataDir)).toEqual(before)
  }, SLOW)

  it("refuses a dir a running server holds (a copy of files being written is not consistent)", async () => {
    const dataDir = store()
    const server = await spawnServer(pricing, dataDir)
    try {
      const verified = await verify(dataDir)
      expect(verified.code).toBe(1)
      expect(verified.stderr).toMatch(new RegExp(`in use by a running server \\(pid ${server.pid}\\)`))
      expect((await http(`${server.url}/api/products/1800`)).status).toBe(200)
    } finally {
      await server.stop()
    }
  }, SLOW)
})

describe("wo backup and wo restore never write what they copy", () => {
  it("leaves a stopped data dir as it was when backing it up, and the backup as it was when restoring it", async () => {
    const dataDir = store()
    const before = filesOf(dataDir)
    const backup = path.join(tempDir("wo-read-only-backup-"), "copy")
    const taken = await wo(["backup", dataDir, backup])
    expect(taken.stdout).toMatch(/backed up seq 1803/)
    expect(taken.code).toBe(0)
    expect(filesOf(dataDir)).toEqual(before)

    const backupBefore = filesOf(backup)
    const target = path.join(tempDir("wo-read-only-restore-"), "data")
    const restored = await wo(["restore", backup, target])
    expect(restored.stdout).toMatch(/restored seq 1803/)
    expect(restored.code).toBe(0)
    expect(filesOf(backup)).toEqual(backupBefore)
    expect((await verify(target)).stdout).toMatch(/verified 1803 events and 1800 rows/)
  }, SLOW)
})

describe("wo repair-current", () => {
  it("rebuilds a lost CURRENT from the newest MANIFEST only when asked, and every row is served again", async () => {
    const dataDir = store()
    fs.rmSync(path.join(dataDir, "CURRENT"))
    const before = filesOf(dataDir)
    // Refused, changing nothing (as above); the dry run writes nothing either.
    const [refused, dry] = await Promise.all([verify(dataDir), wo(["repair-current", dataDir])])
    expect(refused.code).toBe(1)
    expect(dry.code).toBe(0)
    expect(dry.stdout).toMatch(/it has no CURRENT file/)
    expect(dry.stdout).toMatch(/CURRENT naming MANIFEST-\d+ opens on a private copy with nothing dropped; its newest event is 1803/)
    expect(dry.stdout).toMatch(/nothing was written/)
    expect(filesOf(dataDir)).toEqual(before)

    const wrote = await wo(["repair-current", "--write", dataDir])
    expect(wrote.code).toBe(0)
    expect(wrote.stdout).toMatch(/wrote .*CURRENT naming MANIFEST-\d+; nothing else was changed/)
    // Only CURRENT was added.
    expect(filesOf(dataDir).filter((f) => !f.startsWith("CURRENT "))).toEqual(before)

    const verified = await verify(dataDir)
    expect(verified.stdout).toMatch(/verified 1803 events and 1800 rows/)
    expect(verified.code).toBe(0)
    const server = await spawnServer(pricing, dataDir)
    try {
      const ids = await allRows(server.url)
      expect(ids.length).toBe(ROWS)
      expect(new Set(ids).size).toBe(ROWS)
      expect((await http(`${server.url}/api/products/2`)).json).toMatchObject({ price: 72, version: 2 })
    } finally {
      await server.stop()
    }
  }, SLOW)
})

describe("a data dir that is a file", () => {
  it("gets one line and exit 1 from wo run, wo verify and wo replay", async () => {
    const file = path.join(tempDir("wo-file-"), "data")
    fs.writeFileSync(file, "not a dir\n")
    for (const result of await Promise.all([run(file), verify(file), replay(file)])) {
      expect(result.code).toBe(1)
      expect(result.stderr.trim()).toBe(`wo: the store is unavailable: the data dir ${file} is a file, not a directory`)
    }
    expect(fs.readFileSync(file, "utf8")).toBe("not a dir\n")
  }, SLOW)
})
