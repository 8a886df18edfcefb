/**
 * `wo backup`, `wo restore` and `wo verify` at their edges, with real `wo` processes:
 * - a store that has had no write (a server that started, served and stopped) verifies, and its backup restores;
 *   a written store that lost its format marker still fails;
 * - a destination inside the data dir is refused through symlinks (of the destination or of the data dir), on the
 *   CLI and on the server's endpoint, and nothing is written there;
 * - the temporary copy a `wo backup` killed with SIGKILL mid-copy leaves is removed by the next backup, which says
 *   so (after three kills, one is left, not three); dirs it did not make are left alone.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { ClassicLevel } from "classic-level"
import { describe, expect, it } from "vitest"
import { writeProducts } from "../../bench/lib/row-writer.ts"
import { BACKUP_PATH, readControlRecord, TOKEN_HEADER } from "../../src/backup/control.ts"
import { BACKUP_FILE } from "../../src/backup/copy-store.ts"
import { FORMAT_KEY } from "../../src/log/classic-level/log-keys.ts"
import { environment, runWo, WO_BIN } from "../../testkit/spawn.ts"
import { http, rawRequest, ROOT, spawnServer, tempDir } from "../../testkit/server.ts"

const pricing = path.join(ROOT, "examples/pricing")
/** A hang guard only. */
const SLOW = 240_000

const wo = (args: ReadonlyArray<string>) => runWo(args, { timeoutMs: 120_000 })

const storeOf = async (products: number) => {
  const dir = tempDir("wo-edges-store-")
  await writeProducts(dir, products, (i) => ({ name: `p${i}`, price: i, currency: "USD" }))
  return dir
}

describe("a store that has had no write", () => {
  it("verifies after a server started on it, served and stopped; backed up while it runs, the backup restores and serves", async () => {
    const dir = path.join(tempDir("wo-edges-fresh-"), "data")
    const server = await spawnServer(pricing, dir)
    const dest = path.join(tempDir("wo-edges-fresh-backup-"), "copy")
    try {
      expect((await http(`${server.url}/api/products`)).status).toBe(200)
      const taken = await wo(["backup", dir, dest])
      expect(taken.stderr).toBe("")
      expect(taken.stdout).toContain("backed up seq 0")
      expect(taken.stdout).toContain("from the running server")
    } finally {
      await server.stop()
    }
    for (const checked of [dir, dest]) {
      const verified = await wo(["verify", checked])
      expect(verified.stderr).toBe("")
      expect(verified.code).toBe(0)
      expect(verified.stdout).toContain("verified 0 events and 0 rows")
    }
    // A backup of the stopped dir too.
    const stoppedCopy = path.join(tempDir("wo-edges-fresh-backup-"), "copy")
    expect((await wo(["backup", dir, stoppedCopy])).code).toBe(0)

    for (const backup of [dest, stoppedCopy]) {
      const target = path.join(tempDir("wo-edges-fresh-restore-"), "data")
      const restored = await wo(["restore", backup, target])
      expect(restored.stderr).toBe("")
      expect(restored.code).toBe(0)
      expect(restored.stdout).toContain("restored seq 0")
      expect((await wo(["verify", target])).code).toBe(0)
      // The restored store takes its first write as a new one does, and still verifies.
      const restarted = await spawnServer(pricing, target)
      try {
        const made = await http(`${restarted.url}/api/products`, { method: "POST", body: { name: "first", price: 1, currency: "EUR" } })
        expect(made.status).toBe(201)
        expect(made.json.id).toBe("1")
      } finally {
        await restarted.stop()
      }
      const after = await wo(["verify", target])
      expect(after.stderr).toBe("")
      expect(after.stdout).toContain("verified 1 events and 1 rows")
    }
  }, SLOW)

  it("a written store without its format marker still fails verify", async () => {
    const dir = await storeOf(10)
    const db = new ClassicLevel<string, string>(dir)
    await db.del(FORMAT_KEY)
    await db.close()
    const verified = await wo(["verify", dir])
    expect(verified.code).toBe(1)
    expect(verified.stderr).toContain(`no store format marker (${FORMAT_KEY}), but a write's record (e!`)
  })
})

/** The entries of `dir` a backup into it would have made: the copy, or its temporary dir. */
const copiesIn = (dir: string) => fs.readdirSync(dir).filter((name) => name.startsWith("copy"))

describe("a destination inside the data dir, through symlinks", () => {
  it("wo backup refuses a symlinked destination and a symlinked data dir, writing nothing into the data dir", async () => {
    const dir = await storeOf(100)
    const links = tempDir("wo-edges-links-")
    fs.symlinkSync(dir, path.join(links, "into-data"))
    fs.symlinkSync(dir, path.join(links, "data-link"))

    const throughDest = await wo(["backup", dir, path.join(links, "into-data", "copy")])
    expect(throughDest.code).toBe(1)
    expect(throughDest.stderr).toContain("the backup cannot go inside the data dir")
    const throughDataDir = await wo(["backup", path.join(links, "data-link"), path.join(dir, "copy")])
    expect(throughDataDir.code).toBe(1)
    expect(throughDataDir.stderr).toContain("the backup cannot go inside the data dir")
    // An existing symlink as the destination itself.
    fs.mkdirSync(path.join(dir, "empty"))
    fs.symlinkSync(path.join(dir, "empty"), path.join(links, "copy-link"))
    const linkedDest = await wo(["backup", dir, path.join(links, "copy-link")])
    expect(linkedDest.code).toBe(1)
    expect(linkedDest.stderr).toContain("the backup cannot go inside the data dir")
    fs.rmdirSync(path.join(dir, "empty"))

    expect(copiesIn(dir)).toEqual([])
    expect((await wo(["verify", dir])).code).toBe(0)
  }, SLOW)

  it("the endpoint refuses a symlinked destination, and a server on a symlinked data dir refuses its real path", async () => {
    const real = tempDir("wo-edges-served-")
    const links = tempDir("wo-edges-links-")
    fs.symlinkSync(real, path.join(links, "data-link"))
    fs.symlinkSync(real, path.join(links, "into-data"))
    // Served through the symlink: the server knows its data dir by the link's path.
    const server = await spawnServer(pricing, path.join(links, "data-link"))
    try {
      const token = readControlRecord(real)!.token
      const ask = (dest: string) =>
        rawRequest(`${server.url}${BACKUP_PATH}`, { method: "POST", headers: { [TOKEN_HEADER]: token }, body: JSON.stringify({ dest }) })
      for (const dest of [path.join(real, "copy"), path.join(links, "into-data", "copy"), path.join(links, "data-link", "copy")]) {
        const refused = await ask(dest)
        expect(refused.status).toBe(409)
        expect(refused.json.error).toContain("the backup cannot go inside the data dir")
      }
      expect(copiesIn(real)).toEqual([])
      // A destination outside it is taken.
      const outside = path.join(tempDir("wo-edges-dest-"), "copy")
      const taken = await ask(outside)
      expect(taken.status).toBe(200)
      expect(fs.existsSync(path.join(outside, BACKUP_FILE))).toBe(true)
    } finally {
      await server.stop()
    }
    expect(copiesIn(real)).toEqual([])
  }, SLOW)
})

describe("leftovers of a backup killed mid-copy", () => {
  /**
   * Starts `wo backup <source> <dest>` and kills it with SIGKILL as soon as its temporary copy (one not in `before`)
   * holds a file: the copy under way. Resolves once it is dead; on a loaded machine it may have finished first (then
   * `dest` exists).
   */
  const killMidCopy = (source: string, dest: string, before: ReadonlyArray<string>) =>
    new Promise<void>((resolve, reject) => {
      const parent = path.dirname(dest)
      const child = spawn(process.execPath, [WO_BIN, "backup", source, dest], { stdio: "ignore", env: environment() })
      let killed = false
      const check = () => {
        if (killed) return
        for (const name of fs.readdirSync(parent)) {
          if (!name.includes(".partial-") || before.includes(name)) continue
          try {
            if (fs.readdirSync(path.join(parent, name)).length === 0) continue
          } catch {
            continue // renamed or removed meanwhile
          }
          killed = child.kill("SIGKILL")
          return
        }
      }
      const poll = setInterval(check, 1)
      const watcher = fs.watch(parent, check)
      child.on("error", reject)
      child.on("exit", () => {
        clearInterval(poll)
        watcher.close()
        resolve()
      })
    })

  it("each backup removes what a killed one left, says so, and leaves alone what it did not make", async () => {
    const source = await storeOf(20_000)
    const parent = tempDir("wo-edges-kill-")
    const dest = path.join(parent, "copy")
    const partials = () => fs.readdirSync(parent).filter((name) => /^copy\.partial-\d+-\d+$/.test(name))
    // Three kills mid-copy: each backup removes the copy the one before left, then leaves its own. (A backup the
    // loaded machine let finish before the kill landed is removed and tried again.)
    const killedCopies: Array<string> = []
    for (let attempt = 0; attempt < 12 && killedCopies.length < 3; attempt++) {
      await killMidCopy(source, dest, partials())
      if (fs.existsSync(dest)) {
        fs.rmSync(dest, { recursive: true })
        continue
      }
      const left = partials()
      expect(left.length).toBe(1)
      expect(killedCopies).not.toContain(left[0])
      expect(fs.readdirSync(path.join(parent, left[0])).length).toBeGreaterThan(0)
      killedCopies.push(left[0])
    }
    expect(killedCopies.length).toBe(3)
    const left = partials()

    // Not the backup's to remove: a name of another form, dirs holding a subdirectory or a file of another kind, a
    // file, one of a process that is alive (this one), and one started later than the backup. (No process has a pid
    // above the kernel's pid_max: DEAD's is gone.)
    const DEAD = 2 ** 31 - 1
    const dirs = {
      "copy.partial-mine": [],
      [`copy.partial-${DEAD}-1`]: ["sub/"],
      [`copy.partial-${DEAD}-2`]: ["CURRENT", "notes.txt"],
      [`copy.partial-${process.pid}-1`]: ["CURRENT"],
      [`copy.partial-${DEAD}-${Date.now() + 3_600_000}`]: ["CURRENT"]
    } as Record<string, Array<string>>
    for (const [name, files] of Object.entries(dirs)) {
      fs.mkdirSync(path.join(parent, name))
      for (const file of files) {
        if (file.endsWith("/")) fs.mkdirSync(path.join(parent, name, file))
        else fs.writeFileSync(path.join(parent, name, file), "MANIFEST-000002\n")
      }
    }
    fs.writeFileSync(path.join(parent, `copy.partial-${DEAD}-3`), "a file")
    const foreign = [...Object.keys(dirs), `copy.partial-${DEAD}-3`]

    const next = await wo(["backup", source, dest])
    expect(next.stderr).toBe("")
    expect(next.code).toBe(0)
    expect(next.stdout).toContain(`removed 1 leftover temporary copy of an interrupted backup or restore: ${path.join(parent, left[0])}`)
    expect(fs.readdirSync(parent).sort()).toEqual(["copy", ...foreign].sort())
    expect((await wo(["verify", dest])).code).toBe(0)
  }, SLOW)
})
