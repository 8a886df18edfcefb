/**
 * `--accept-data-loss` serves what is left. 4 KiB zeroed in the middle of LevelDB's
 * write-ahead log: LevelDB drops those records and keeps the ones after, so the store has a gap in its log and
 * fewer rows than its recorded counts. Refused without the flag (LevelDB reports this drop); with it, the server
 * recounts, records what was lost (a log line and WO-ACCEPTED-LOSS with the seqs and ids), and serves the rest; no
 * lost id is handed out again, and `wo verify` then reports the accepted loss and passes.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { ACCEPTED_LOSS_FILE, type AcceptedLoss } from "../../src/log/classic-level/accepted-loss.ts"
import { runWo } from "../../testkit/spawn.ts"
import { buildAckedStore, pricing, writeAheadLog } from "../../testkit/acked-store.ts"
import { apps, http, spawnServer, startServer } from "../../testkit/server.ts"

describe("--accept-data-loss after LevelDB dropped part of its write-ahead log", () => {
  it("recounts, records the lost seqs and ids, serves what is left, and wo verify passes reporting the loss", async () => {
    const store = await buildAckedStore()
    const log = writeAheadLog(store.dataDir)
    const bytes = fs.readFileSync(log)
    bytes.fill(0, 40_960, 40_960 + 4096)
    fs.writeFileSync(log, bytes)

    await expect(startServer(apps.pricing, { dataDir: store.dataDir })).rejects.toThrow(/LevelDB dropped data while opening/)

    const server = await spawnServer(pricing, store.dataDir, { WO_ACCEPT_DATA_LOSS: "1" })
    let served: Array<{ id: string }>
    try {
      expect(server.output()).toMatch(/--accept-data-loss: serving what is left of .*: \d+ events lost \(seqs \d+/)
      expect(server.output()).toMatch(/rows of products stored, 400 recorded: recounted/)
      served = (await http(`${server.url}/api/products?limit=1000`)).json.items
      expect(served.length).toBeGreaterThan(0)
      expect(served.length).toBeLessThan(store.maxId)
      const created = await http(`${server.url}/api/products`, { method: "POST", body: { name: "after the loss", price: 1, currency: "USD" } })
      expect(created.status).toBe(201)
      expect(Number(created.json.id)).toBe(store.maxId + 1) // no lost id handed out again
    } finally {
      await server.stop()
    }

    const losses = fs.readFileSync(path.join(store.dataDir, ACCEPTED_LOSS_FILE), "utf8").trim().split("\n").map((l) => JSON.parse(l) as AcceptedLoss)
    expect(losses).toHaveLength(1)
    expect(losses[0].lostSeqs.length).toBeGreaterThan(0)
    const lostIds = losses[0].lostIds.products ?? []
    // Every id handed out is either served or named as lost.
    expect(new Set([...served.map((p) => p.id), ...lostIds]).size).toBe(store.maxId)
    expect(lostIds.length).toBe(store.maxId - served.length)

    const verify = await runWo(["verify", store.dataDir])
    expect(verify.stderr).toBe("")
    expect(verify.code).toBe(0)
    expect(verify.stdout).toMatch(/accepted data loss \(.*\): \d+ events lost .*; lost ids: products /)
    expect(verify.stdout).toMatch(/^OK/m)
  }, 240_000)
})
