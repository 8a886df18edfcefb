import { Deferred, Effect, Layer } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { EventLog } from "../../src/commands/event-log.ts"
import { LogFaults } from "../../src/commands/log-faults.ts"
import { StoreUnavailable } from "../../src/domain/errors.ts"
import { apps, http, runWo, spawnServer, startServer, tempDir } from "../support/server.ts"

const product = (n: number) => ({ name: `p${n}`, price: n, currency: "USD" })
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("durable acknowledgement", () => {
  it("holds the response until the sync write completes", async () => {
    const gate = Effect.runSync(Deferred.make<void>())
    let held = 0
    const faults = Layer.succeed(LogFaults, {
      beforeWrite: () => Effect.sync(() => held++).pipe(Effect.zipRight(Deferred.await(gate)))
    })
    const server = await startServer(apps.pricing, {}, faults)
    try {
      let answered = false
      const pending = http(`${server.url}/api/products`, { method: "POST", body: product(1) }).then((r) => {
        answered = true
        return r
      })
      await sleep(300)
      expect(held).toBe(1)
      expect(answered).toBe(false)
      Effect.runSync(Deferred.succeed(gate, undefined))
      const res = await pending
      expect(res.status).toBe(201)
    } finally {
      await server.close()
    }
  })

  it("fails every waiter of a failed batch with 503, acknowledges nothing, and recovers", async () => {
    let failing = true
    const faults = Layer.succeed(LogFaults, {
      beforeWrite: () => (failing ? Effect.fail(new StoreUnavailable({ reason: "injected disk error" })) : Effect.void)
    })
    const server = await startServer(apps.pricing, {}, faults)
    try {
      const failed = await Promise.all(Array.from({ length: 8 }, (_, i) => http(`${server.url}/api/products`, { method: "POST", body: product(i + 1) })))
      expect(failed.map((r) => r.status)).toEqual(Array(8).fill(503))
      expect(failed[0].json.error).toBe("StoreUnavailable")
      expect((await http(`${server.url}/api/products`)).json.items).toEqual([])
      failing = false
      const ok = await http(`${server.url}/api/products`, { method: "POST", body: product(1) })
      expect(ok.status).toBe(201)
      expect(ok.json.id).toBe("1") // the failed batch consumed no ids or sequence numbers
    } finally {
      await server.close()
    }
  })
})

describe("group commit", () => {
  // A disk that takes 10 ms per sync, as a spinning or networked disk might, makes batching visible.
  const slowDisk = Layer.succeed(LogFaults, { beforeWrite: () => Effect.sleep("10 millis") })
  const run = async (groupCommit: boolean) => {
    const server = await startServer(apps.pricing, { groupCommit }, slowDisk)
    try {
      await Promise.all(Array.from({ length: 200 }, (_, i) => http(`${server.url}/api/products`, { method: "POST", body: product(i + 1) })))
      return await server.runtime.runPromise(Effect.flatMap(EventLog, (log) => log.stats))
    } finally {
      await server.close()
    }
  }

  it("batches concurrent commands into far fewer sync writes", async () => {
    const on = await run(true)
    expect(on.eventsWritten).toBe(200)
    expect(on.syncWrites).toBeLessThan(40)
    const off = await run(false)
    expect(off.eventsWritten).toBe(200)
    expect(off.syncWrites).toBe(200)
  })
})

describe("restart and replay", () => {
  it("recovers every row after a restart, and wo replay matches the stored state", async () => {
    const dataDir = tempDir()
    const first = await startServer(apps.pricing, { dataDir })
    for (let i = 1; i <= 5; i++) await http(`${first.url}/api/products`, { method: "POST", body: product(i) })
    await http(`${first.url}/api/products/2/set_price`, { method: "POST", body: { price: 42 } })
    await first.close()

    const second = await startServer(apps.pricing, { dataDir })
    try {
      const list = await http(`${second.url}/api/products`)
      expect(list.json.items.map((r: any) => r.id)).toEqual(["1", "2", "3", "4", "5"])
      expect(list.json.items[1]).toMatchObject({ version: 2, price: 42 })
      const next = await http(`${second.url}/api/products`, { method: "POST", body: product(6) })
      expect(next.json.id).toBe("6")
    } finally {
      await second.close()
    }
    const ok = await runWo(["replay", dataDir])
    expect(ok.code).toBe(0)
    expect(ok.stdout).toMatch(/replayed 7 events into 6 rows/)
    expect(ok.stdout).toMatch(/OK/)
  })

  it("wo replay reports a corrupted stored row and exits non-zero", async () => {
    const dataDir = tempDir()
    const server = await startServer(apps.pricing, { dataDir })
    for (let i = 1; i <= 3; i++) await http(`${server.url}/api/products`, { method: "POST", body: product(i) })
    await server.close()
    const { ClassicLevel } = await import("classic-level")
    const db = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8" })
    await db.open()
    const key = "r!products!000000000002"
    const row = JSON.parse((await db.get(key))!)
    await db.put(key, JSON.stringify({ ...row, price: 999 }))
    await db.close()
    const bad = await runWo(["replay", dataDir])
    expect(bad.code).not.toBe(0)
    expect(bad.stderr).toMatch(/MISMATCH.*products\/2/)
  })
})

describe("crash", () => {
  it("keeps every acknowledged write through kill -9 under 32 in flight", async () => {
    const dataDir = tempDir()
    const appDir = path.resolve(import.meta.dirname, "../../examples/pricing")
    const server = await spawnServer(appDir, dataDir)
    const acked = new Map<string, number>() // id -> highest acknowledged version
    let stop = false
    const worker = async (w: number) => {
      let mine: string | undefined
      for (let i = 0; !stop; i++) {
        try {
          const res = mine === undefined || i % 3 === 0
            ? await http(`${server.url}/api/products`, { method: "POST", body: product(w + 1) })
            : await http(`${server.url}/api/products/${mine}/set_price`, { method: "POST", body: { price: i + 1 } })
          if (res.status === 200 || res.status === 201) {
            mine = res.json.id
            acked.set(res.json.id, Math.max(acked.get(res.json.id) ?? 0, res.json.version))
          }
        } catch {
          return // the server is gone
        }
      }
    }
    const workers = Array.from({ length: 32 }, (_, w) => worker(w))
    await sleep(1500)
    server.child.kill("SIGKILL")
    stop = true
    await Promise.all(workers)
    expect(acked.size).toBeGreaterThan(10)

    const again = await spawnServer(appDir, dataDir)
    try {
      for (const [id, version] of acked) {
        const res = await http(`${again.url}/api/products/${id}`)
        expect(res.status).toBe(200)
        expect(res.json.version).toBeGreaterThanOrEqual(version)
      }
    } finally {
      await again.stop()
    }
    const replayed = await runWo(["replay", dataDir])
    expect(replayed.code).toBe(0)
    expect(fs.existsSync(dataDir)).toBe(true)
  })
})
