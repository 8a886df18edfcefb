/**
 * `wo backup` and `wo restore`, with real `wo` processes.
 *
 * Under load: repricings run against a server while `wo backup` copies its data dir. The backup verifies, holds a
 * prefix of the source's log ending exactly at the seq it records (nothing beyond it), holds every write
 * acknowledged before the backup started, and a server started on it opens without reporting lost acknowledged
 * writes and serves the fold of that prefix. Also: a stopped dir, `wo restore`, the refusals and the help.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { writeProducts } from "../../bench/lib/row-writer.ts"
import { runWo } from "../../testkit/spawn.ts"
import { readAckedRecord } from "../../src/log/classic-level/acked-head.ts"
import { BACKUP_PATH, CONTROL_FILE, readControlRecord, TOKEN_HEADER } from "../../src/backup/control.ts"
import { BACKUP_FILE } from "../../src/backup/copy-store.ts"
import { buildAckedStore, writeAheadLog } from "../../testkit/acked-store.ts"
import { canonical, eventsByRow, foldRow, readStore } from "../../testkit/log-reader.ts"
import { http, rawRequest, ROOT, spawnServer, tempDir, type SpawnedServer } from "../../testkit/server.ts"

const pricing = path.join(ROOT, "examples/pricing")
const PRODUCTS = 20_000
/** A hang guard only. */
const SLOW = 240_000

const wo = (args: ReadonlyArray<string>) => runWo(args, { timeoutMs: 120_000 })
const backupInfo = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, BACKUP_FILE), "utf8")) as { seq: number; events: number }
const seqOfOutput = (stdout: string) => Number(/backed up seq (\d+)/.exec(stdout)?.[1])

interface Ack {
  readonly id: string
  readonly version: number
}

let source: string
let server: SpawnedServer | undefined
let backup: string
let backupRun: { code: number | null; stdout: string; stderr: string }
/** Writes acknowledged before `wo backup` was started, while it ran, and in all. */
let ackedBefore: Array<Ack> = []
let ackedDuring = 0
let ackedTotal = 0

beforeAll(async () => {
  source = tempDir("wo-backup-source-")
  await writeProducts(source, PRODUCTS, (i) => ({ name: `p${i}`, price: i, currency: "USD" }))
  server = await spawnServer(pricing, source)
  const url = server.url
  const acks: Array<Ack> = []
  let phase: "before" | "during" | "after" = "before"
  let stop = false
  let failures = 0
  let n = 0
  const writer = async (w: number) => {
    while (!stop) {
      const id = String(1 + ((n++ * 7919 + w * 104729) % PRODUCTS))
      const res = await http(`${url}/api/products/${id}/set_price`, { method: "POST", body: { price: 1 + (n % 500) } })
      if (res.status !== 200) {
        failures++
        continue
      }
      const ack = { id, version: res.json.version as number }
      acks.push(ack)
      if (phase === "before") ackedBefore.push(ack)
      else if (phase === "during") ackedDuring++
    }
  }
  const writers = [0, 1, 2, 3].map(writer)
  // Some writes land before the backup starts, then they go on while it runs and after it ends.
  while (ackedBefore.length < 200) await new Promise((r) => setTimeout(r, 20))
  phase = "during"
  backup = path.join(tempDir("wo-backup-dest-"), "copy")
  backupRun = await wo(["backup", source, backup])
  phase = "after"
  const atEnd = acks.length
  while (acks.length < atEnd + 50) await new Promise((r) => setTimeout(r, 20))
  stop = true
  await Promise.all(writers)
  ackedTotal = acks.length
  expect(failures).toBe(0)
  await server.stop()
  server = undefined
}, SLOW)

afterAll(async () => {
  await server?.stop()
})

describe("wo backup of a running server under load", () => {
  it("copies from the running server and records the seq it holds", () => {
    expect(backupRun.stderr).toBe("")
    expect(backupRun.code).toBe(0)
    expect(backupRun.stdout).toMatch(/from the running server \(pid \d+; writes held \d+ ms\)/)
    const seq = seqOfOutput(backupRun.stdout)
    expect(backupInfo(backup).seq).toBe(seq)
    // Every write acknowledged before it started is below its seq; writes went on while it ran.
    expect(seq).toBeGreaterThanOrEqual(PRODUCTS + ackedBefore.length)
    expect(ackedDuring).toBeGreaterThan(0)
    // Its acknowledged-head record claims exactly what it holds.
    const record = readAckedRecord(backup)
    expect(record._tag === "Found" ? record.record.acked : undefined).toBe(seq)
  })

  it("verifies", async () => {
    const verified = await wo(["verify", backup])
    expect(verified.stderr).toBe("")
    expect(verified.code).toBe(0)
    expect(verified.stdout).toContain(`verified ${backupInfo(backup).seq} events`)
  })

  it("holds the source's log up to its seq exactly, nothing beyond, and every write acknowledged before it started", async () => {
    const seq = backupInfo(backup).seq
    const [copy, whole] = await Promise.all([readStore(backup), readStore(source)])
    // The source went on past the backup's seq: the later writes are in the source only.
    expect(whole.events.length).toBe(PRODUCTS + ackedTotal)
    expect(whole.events.length).toBeGreaterThan(seq)
    expect(copy.events.length).toBe(seq)
    expect(copy.events.map(canonical)).toEqual(whole.events.slice(0, seq).map(canonical))
    expect(copy.checkpoint).toBe(seq)
    // Each event's actor is copied with it: the REST writes name their client.
    expect(copy.events.slice(PRODUCTS).every((e) => e.actor?.client === "rest")).toBe(true)
    const versions = new Map<string, number>()
    for (const e of copy.events) versions.set(e.id, e.version)
    const missing = ackedBefore.filter((a) => (versions.get(a.id) ?? 0) < a.version)
    expect(missing).toEqual([])
  })

  it("starts a server that serves the fold of the log up to the backup's seq, and no lost writes", async () => {
    const seq = backupInfo(backup).seq
    const byRow = eventsByRow((await readStore(backup)).events.slice(0, seq))
    const restarted = await spawnServer(pricing, backup)
    try {
      const touched = [...new Set(ackedBefore.map((a) => a.id))].slice(0, 60)
      for (const id of [...touched, "1", String(PRODUCTS)]) {
        const served = await http(`${restarted.url}/api/products/${id}`)
        expect(served.status).toBe(200)
        expect(canonical(served.json)).toBe(canonical(foldRow(byRow.get(`products/${id}`) ?? [])))
      }
      // The history records come with the backup: a row's history is its events in the backup, actors and all.
      const id = touched[0]
      const history = await http(`${restarted.url}/api/products/${id}/history?limit=1000`)
      expect(history.json.items.map(canonical)).toEqual((byRow.get(`products/${id}`) ?? []).map(canonical))
      // The next write continues right after the backup's seq.
      const next = await http(`${restarted.url}/api/products`, { method: "POST", body: { name: "after", price: 1, currency: "EUR" } })
      expect(next.status).toBe(201)
      expect(next.json.id).toBe(String(PRODUCTS + 1))
    } finally {
      await restarted.stop()
    }
    expect(restarted.output()).not.toMatch(/lost|acknowledged writes/i)
    const after = await readStore(backup)
    expect(after.events.length).toBe(backupInfo(backup).seq + 1)
  }, SLOW)

  it("removes the control file at shutdown", () => {
    expect(fs.existsSync(path.join(source, CONTROL_FILE))).toBe(false)
  })
})

describe("wo backup of a stopped data dir, and wo restore", () => {
  it("copies a stopped dir, and restores it into a new data dir after verifying it", async () => {
    const dest = path.join(tempDir("wo-backup-stopped-"), "copy")
    const taken = await wo(["backup", source, dest])
    expect(taken.stderr).toBe("")
    expect(taken.code).toBe(0)
    expect(taken.stdout).toContain("from the stopped data dir")
    const head = (await readStore(source)).events.length
    expect(seqOfOutput(taken.stdout)).toBe(head)
    expect(backupInfo(dest).seq).toBe(head)
    expect((await wo(["verify", dest])).code).toBe(0)

    const target = path.join(tempDir("wo-restore-"), "data")
    const restored = await wo(["restore", dest, target])
    expect(restored.stderr).toBe("")
    expect(restored.code).toBe(0)
    expect(restored.stdout).toContain(`restored seq ${head}`)
    expect((await readStore(target)).events.map(canonical)).toEqual((await readStore(source)).events.map(canonical))

    // Never over anything: the target now holds a store.
    const again = await wo(["restore", dest, target])
    expect(again.code).toBe(1)
    expect(again.stderr).toContain("is not empty")
    // Only a backup: the live data dir has no WO-BACKUP.
    const notBackup = await wo(["restore", source, path.join(tempDir("wo-restore-"), "data")])
    expect(notBackup.code).toBe(1)
    expect(notBackup.stderr).toContain("is not a backup taken by `wo backup`")
  }, SLOW)
})

describe("refusals and help", () => {
  it("refuses a stopped dir that lost acknowledged writes (an older write-ahead log put back), backing up nothing", async () => {
    const store = await buildAckedStore(200)
    fs.writeFileSync(writeAheadLog(store.dataDir), store.olderLog)
    const dest = path.join(tempDir("wo-backup-lost-"), "copy")
    const result = await wo(["backup", store.dataDir, dest])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(`were acknowledged: it lost acknowledged writes`)
    expect(fs.existsSync(dest)).toBe(false)
    expect(fs.readdirSync(path.dirname(dest))).toEqual([])
  }, SLOW)

  it("refuses a destination that is not empty, and leaves it as it was", async () => {
    const dest = tempDir("wo-backup-full-")
    fs.writeFileSync(path.join(dest, "keep.txt"), "mine")
    const result = await wo(["backup", source, dest])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("is not empty")
    expect(fs.readdirSync(dest)).toEqual(["keep.txt"])
  })

  it("refuses what is not a data dir", async () => {
    const empty = tempDir("wo-backup-empty-")
    const dest = path.join(tempDir("wo-backup-dest-"), "copy")
    const result = await wo(["backup", empty, dest])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("holds no store")
    expect(fs.existsSync(dest)).toBe(false)
    const absent = await wo(["backup", path.join(empty, "nothing"), dest])
    expect(absent.code).toBe(1)
    expect(absent.stderr).toContain("does not exist")
  })

  it("points a PostgreSQL store to pg_basebackup and point-in-time recovery", async () => {
    const result = await wo(["backup", "--store", "postgres://wo@127.0.0.1:5432/wo", path.join(tempDir("wo-backup-pg-"), "copy")])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("pg_basebackup")
    expect(result.stderr).toContain("point-in-time recovery")
  })

  it("lists backup and restore in the help", async () => {
    const help = await wo(["--help"])
    expect(help.stdout).toMatch(/backup/)
    expect(help.stdout).toMatch(/restore/)
    const backupHelp = await wo(["backup", "--help"])
    expect(backupHelp.stdout).toContain("<data-dir>")
    expect(backupHelp.stdout).toContain("--store")
    expect(backupHelp.stdout).toMatch(/consistent copy/)
  })

  it("the backup endpoint refuses a request without the control file's token", async () => {
    const dir = tempDir("wo-backup-token-")
    const running = await spawnServer(pricing, dir)
    try {
      const control = readControlRecord(dir)
      expect(control?.pid).toBe(running.pid)
      const dest = path.join(tempDir("wo-backup-dest-"), "copy")
      const body = JSON.stringify({ dest })
      const wrong = await rawRequest(`${running.url}${BACKUP_PATH}`, { method: "POST", headers: { [TOKEN_HEADER]: "0".repeat(64) }, body })
      expect(wrong.status).toBe(403)
      const none = await rawRequest(`${running.url}${BACKUP_PATH}`, { method: "POST", body })
      expect(none.status).toBe(403)
      expect(fs.existsSync(dest)).toBe(false)
      const right = await rawRequest(`${running.url}${BACKUP_PATH}`, { method: "POST", headers: { [TOKEN_HEADER]: control!.token }, body })
      expect(right.status).toBe(200)
      expect(fs.existsSync(path.join(dest, BACKUP_FILE))).toBe(true)
    } finally {
      await running.stop()
    }
  }, SLOW)
})
