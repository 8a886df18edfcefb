/**
 * Disk full, then space returns, on a real small tmpfs: writes get 503 while the disk is full and reads go on;
 * once the tmpfs grows, writes resume, and every acknowledged write survives kill -9 and a restart, with no id
 * reused. (Before the store reopened after a failed write, LevelDB dropped every record after the torn one.)
 *
 * Also on a tmpfs: a data dir on a read-only file system is refused as read-only, not as "in use".
 *
 * Mounting needs root; CI runs as root. Elsewhere the test says loudly that it skipped.
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { smallTmpfs } from "../../testkit/small-tmpfs.ts"
import { runWo } from "../../testkit/spawn.ts"
import { http, ROOT, spawnServer, tempDir } from "../../testkit/server.ts"

const disk = smallTmpfs("the disk-full test")

const pricing = path.join(ROOT, "examples/pricing")
const product = (n: number) => ({ name: `${n}-${"x".repeat(30 * 1024)}`, price: n, currency: "USD" })

describe.skipIf(!disk.mounted)("disk full, then space returns", () => {
  it("refuses writes with 503 while full, serves reads, resumes, and loses no acknowledged write through kill -9", async () => {
    const dataDir = path.join(disk.mountPoint, "data")
    fs.mkdirSync(dataDir)
    const server = await spawnServer(pricing, dataDir)
    const acked: Array<string> = []
    let refused: { status: number; json: any } | undefined
    try {
      for (let n = 1; n <= 200 && refused === undefined; n++) {
        const res = await http(`${server.url}/api/products`, { method: "POST", body: product(n) })
        if (res.status === 201) acked.push(res.json.id)
        else refused = res
      }
      expect(refused, "the 1.2 MB tmpfs never filled").toBeDefined()
      expect(refused!.status).toBe(503)
      expect(refused!.json.error).toBe("StoreUnavailable")
      expect(acked.length).toBeGreaterThan(5)

      // Still full: writes are refused fast, reads are served.
      const again = await http(`${server.url}/api/products`, { method: "POST", body: product(999) })
      expect(again.status).toBe(503)
      expect(again.json.message).toMatch(/full|space|write failed/)
      expect((await http(`${server.url}/api/products/${acked[0]}`)).status).toBe(200)
      expect((await http(`${server.url}/api/products?limit=1000`)).json.items).toHaveLength(acked.length)

      // Space returns: the next five writes are acknowledged.
      disk.remount("size=64m")
      for (let n = 0; n < 5; n++) {
        const res = await http(`${server.url}/api/products`, { method: "POST", body: product(1000 + n) })
        expect(res.status, res.text).toBe(201)
        acked.push(res.json.id)
      }
      expect(server.output()).toMatch(/reopened the store after a failed write/)
    } finally {
      await server.stop("SIGKILL")
    }

    const restarted = await spawnServer(pricing, dataDir)
    try {
      for (const id of acked) {
        const res = await http(`${restarted.url}/api/products/${id}`)
        expect(res.status, `acknowledged product ${id} is gone after the restart`).toBe(200)
      }
      expect(new Set(acked).size).toBe(acked.length)
      const next = await http(`${restarted.url}/api/products`, { method: "POST", body: { name: "after", price: 1, currency: "USD" } })
      expect(next.status).toBe(201)
      expect(acked).not.toContain(next.json.id) // no id reused
      expect(Number(next.json.id)).toBeGreaterThan(Math.max(...acked.map(Number)))
    } finally {
      await restarted.stop()
    }
    const verify = await runWo(["verify", dataDir])
    expect(verify.stderr).toBe("")
    expect(verify.code).toBe(0)
    expect(verify.stdout).toMatch(/^OK/m)
  })
})

describe.skipIf(!disk.mounted)("a read-only data dir", () => {
  it("is refused with a message that says so", async () => {
    const readOnly = tempDir("wo-ro-")
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=8m", "tmpfs", readOnly], { stdio: "pipe" })
    try {
      const dataDir = path.join(readOnly, "data")
      const server = await spawnServer(pricing, dataDir)
      await server.stop()
      execFileSync("mount", ["-o", "remount,ro", readOnly], { stdio: "pipe" })
      const run = await runWo(["run", pricing, "--data", dataDir, "--listen", "127.0.0.1:0"], { timeoutMs: 30_000 })
      expect(run.code).toBe(1)
      expect(run.stderr).toMatch(/^wo: .*the data dir .* is on a read-only file system/m)
      expect(run.stderr).not.toMatch(/in use by another process/)
    } finally {
      execFileSync("umount", ["-l", readOnly], { stdio: "pipe" })
    }
  })
})
