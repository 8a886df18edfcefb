/**
 * No unseen rollback of acknowledged writes. LevelDB drops records from a write-ahead log
 * that was removed, emptied, truncated or replaced by an older copy, and says nothing: the store opens at an older
 * head. The acknowledged-head record beside it (src/log/classic-level/acked-head.ts) sees it: `wo verify` names the missing
 * events, `wo run` refuses and keeps the evidence, and with --accept-data-loss the server serves what is left and
 * never hands out a lost row's id again; `wo verify` then reports the accepted loss and passes.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { beforeAll, describe, expect, it } from "vitest"
import { ACKED_FILE } from "../../src/log/classic-level/acked-head.ts"
import { DATA_LOSS_MARKER, openDb } from "../../src/log/classic-level/level-db.ts"
import { verifyStore } from "../../src/log/classic-level/offline/verify.ts"
import { runWo } from "../../testkit/spawn.ts"
import { buildAckedStore, copyDir, headOf, pricing, startRefused, writeAheadLog, type AckedStore } from "../../testkit/acked-store.ts"
import { apps, http, spawnServer, startServer } from "../../testkit/server.ts"

let store: AckedStore

beforeAll(async () => {
  store = await buildAckedStore()
}, 120_000)

const damages: ReadonlyArray<readonly [string, (dataDir: string) => void]> = [
  ["rm *.log", (dir) => fs.rmSync(writeAheadLog(dir))],
  [": > the log", (dir) => fs.truncateSync(writeAheadLog(dir), 0)],
  ["truncate -s 32768", (dir) => fs.truncateSync(writeAheadLog(dir), 32768)],
  ["truncate -s 100000", (dir) => fs.truncateSync(writeAheadLog(dir), 100_000)],
  ["an older .log put back", (dir) => fs.writeFileSync(writeAheadLog(dir), store.olderLog)],
  ["truncate -s -1 (the last acknowledged set_price)", (dir) => fs.truncateSync(writeAheadLog(dir), fs.statSync(writeAheadLog(dir)).size - 1)]
]

/** `wo verify`'s check, in this process (each `wo` process costs seconds on a loaded machine). */
const verify = (dataDir: string) => Effect.runPromise(Effect.scoped(Effect.flatMap(openDb(dataDir), verifyStore)))

describe("a write-ahead log that lost acknowledged writes", () => {
  it("is whole before the damage: verify passes and the record holds the last acknowledged seq", async () => {
    expect(fs.statSync(writeAheadLog(store.dataDir)).size).toBeGreaterThan(100_000)
    expect(fs.existsSync(path.join(store.dataDir, ACKED_FILE))).toBe(true)
    // On a copy: until verify opens the store read-only, its open replays the log into a table.
    expect(await verify(copyDir(store.dataDir))).toMatchObject({ events: store.acked, problems: [] })
  })

  for (const [name, damage] of damages) {
    it(`${name}: refused naming the missing events; served with --accept-data-loss, no lost id reused`, async () => {
      const dataDir = copyDir(store.dataDir)
      damage(dataDir)
      const damagedSize = name === "rm *.log" ? undefined : fs.statSync(writeAheadLog(dataDir)).size
      const head = await headOf(dataDir)
      const missing = store.acked - head
      expect(missing, "the damage loses acknowledged events").toBeGreaterThan(0)
      if (name.startsWith("truncate -s -1")) expect(missing).toBe(1)
      const named = new RegExp(`${missing} acknowledged events are missing: the store ends at seq ${head}, but seqs ${head + 1}\\.\\.${store.acked} were acknowledged`)

      expect((await verify(copyDir(dataDir))).problems.join("\n")).toMatch(named)

      await expect(startServer(apps.pricing, { dataDir })).rejects.toThrow(named)
      // The evidence is kept: the marker (every later open refuses), the record, and the logs as they were before the open.
      expect(fs.readFileSync(path.join(dataDir, DATA_LOSS_MARKER), "utf8")).toMatch(named)
      const evidence = fs.readdirSync(dataDir).filter((f) => f.startsWith("wo-evidence-"))
      expect(evidence.some((f) => f.endsWith(ACKED_FILE))).toBe(true)
      const wal = evidence.find((f) => f.endsWith("-wal"))!
      expect(fs.readdirSync(path.join(dataDir, wal)).map((f) => fs.statSync(path.join(dataDir, wal, f)).size))
        .toEqual(damagedSize === undefined ? [] : [damagedSize])
      await expect(startServer(apps.pricing, { dataDir })).rejects.toThrow(/an earlier open .* found/)
      await expect(verify(dataDir)).rejects.toThrow(/acknowledged events are missing/)

      const server = await startServer(apps.pricing, { dataDir, acceptDataLoss: true })
      try {
        const created = await http(`${server.url}/api/products`, { method: "POST", body: { name: "after the loss", price: 1, currency: "USD" } })
        expect(created.status).toBe(201)
        // Every id up to the highest ever handed out stays retired, lost or not.
        expect(Number(created.json.id)).toBe(store.maxId + 1)
        if (name.startsWith("truncate -s -1")) {
          const p = await http(`${server.url}/api/products/${store.lastPrice.id}`)
          expect(p.json.price).not.toBe(store.lastPrice.price) // the lost set_price: reported now, not unseen
        }
      } finally {
        await server.close()
      }
      const after = await verify(dataDir)
      expect(after.problems).toEqual([])
      expect(after.accepted.join("\n")).toMatch(new RegExp(`accepted data loss .*${missing} events lost \\(seqs ${missing === 1 ? store.acked : `${head + 1}\\.\\.${store.acked}`}\\)`))
    }, 120_000)
  }

  it("kill -9 the moment a write is acknowledged, then lose it from the log: still seen (the record is written before the ack)", async () => {
    const dataDir = copyDir(store.dataDir)
    const server = await spawnServer(pricing, dataDir)
    const res = await http(`${server.url}/api/products/9/set_price`, { method: "POST", body: { price: 777 } })
    await server.stop("SIGKILL")
    expect(res.status).toBe(200)
    const log = writeAheadLog(dataDir)
    fs.truncateSync(log, fs.statSync(log).size - 1)
    await expect(startServer(apps.pricing, { dataDir })).rejects.toThrow(
      new RegExp(`1 acknowledged events are missing: the store ends at seq ${store.acked}, but seqs ${store.acked + 1}\\.\\.${store.acked + 1}`)
    )
  }, 120_000)

  it("through the real binary: wo verify fails, wo run refuses, --accept-data-loss serves, wo verify reports the loss and passes", async () => {
    const dataDir = copyDir(store.dataDir)
    fs.truncateSync(writeAheadLog(dataDir), fs.statSync(writeAheadLog(dataDir)).size - 1)
    const bad = await runWo(["verify", copyDir(dataDir)])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(/1 acknowledged events are missing/)
    const refused = await startRefused(dataDir)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/1 acknowledged events are missing[\s\S]*--accept-data-loss/)
    const server = await spawnServer(pricing, dataDir, { WO_ACCEPT_DATA_LOSS: "1" })
    try {
      expect(server.output()).toMatch(/--accept-data-loss: serving what is left .*1 events lost/)
    } finally {
      await server.stop()
    }
    const good = await runWo(["verify", dataDir])
    expect(good.stderr).toBe("")
    expect(good.code).toBe(0)
    expect(good.stdout).toMatch(/accepted data loss .*1 events lost/)
    expect(good.stdout).toMatch(/^OK/m)
  }, 180_000)
})
