/**
 * The embedded store's format 3 (events record their actor, and each has an `h!` history record): a data dir of
 * format 2, as the previous release wrote it, is read as it is by `wo verify` and `wo replay`, upgraded when a server
 * opens it (every event indexed, then the marker), its old events read with no actor beside new ones with theirs,
 * and both tools stay clean on the mixed log. `wo verify` names a missing history record. A server killed -9 part
 * way through the upgrade leaves a format-2 dir that both tools still find clean, and the next server upgrades it whole.
 */
import { ClassicLevel } from "classic-level"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { appendSetPriceEvents } from "../../bench/lib/log-writer.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { BACKFILL_BATCH, historyRecord } from "../../src/log/classic-level/history-records.ts"
import * as K from "../../src/log/classic-level/log-keys.ts"
import { seal, unseal, unsealJson } from "../../src/log/record.ts"
import { apps, http, startServer, tempDir } from "../../testkit/server.ts"
import { ROOT, runWo, WO_BIN } from "../../testkit/spawn.ts"

const open = async (dataDir: string) => {
  const db = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8", createIfMissing: false })
  await db.open()
  return db
}

/**
 * Rewrites a closed data dir as the previous release left it: events without `actor` (sealed again, as it sealed
 * them), no `h!` records, format marker 2. Everything else (keys, rows, counters, the acknowledged head) is as it was.
 */
const asFormat2 = async (dataDir: string) => {
  const db = await open(dataDir)
  try {
    const batch = db.batch()
    for await (const [key, value] of db.iterator({ gte: K.EVENTS_START, lt: K.EVENTS_END })) {
      const { actor: _actor, ...event } = unsealJson<Record<string, unknown>>(key, value)
      batch.put(key, seal(key, JSON.stringify(event)))
    }
    for await (const key of db.keys({ gte: K.HISTORY_START, lt: K.HISTORY_END })) batch.del(key)
    batch.put(K.FORMAT_KEY, seal(K.FORMAT_KEY, "2"))
    await batch.write({ sync: true })
  } finally {
    await db.close()
  }
}

const storeFormat = async (dataDir: string) => {
  const db = await open(dataDir)
  try {
    return unseal(K.FORMAT_KEY, (await db.get(K.FORMAT_KEY))!)
  } finally {
    await db.close()
  }
}

const clean = async (dataDir: string, events: number) => {
  const verify = await runWo(["verify", dataDir], { timeoutMs: 60_000 })
  expect(verify.code, verify.stderr + verify.stdout).toBe(0)
  expect(verify.stdout).toMatch(new RegExp(`^verified ${events} events`, "m"))
  const replayed = await runWo(["replay", dataDir], { timeoutMs: 60_000 })
  expect(replayed.code, replayed.stderr + replayed.stdout).toBe(0)
  expect(replayed.stdout).toMatch(new RegExp(`replayed ${events} events`))
}

describe("a format-2 data dir (before actors)", () => {
  it("verifies and replays as it is, upgrades when served, reads old events with no actor, and stays clean mixed", async () => {
    const dataDir = tempDir()
    const first = await startServer(apps.pricing, { dataDir })
    try {
      const { id } = (await http(`${first.url}/api/products`, { method: "POST", body: { name: "Lamp", price: 10, currency: "EUR" } })).json
      expect(id).toBe("1")
      await http(`${first.url}/api/products/1/set_price`, { method: "POST", body: { price: 11 } })
      await http(`${first.url}/api/products`, { method: "POST", body: { name: "Desk", price: 90, currency: "EUR" } })
    } finally {
      await first.close()
    }
    await asFormat2(dataDir)
    expect(await storeFormat(dataDir)).toBe("2")
    await clean(dataDir, 3)

    const second = await startServer(apps.pricing, { dataDir })
    try {
      await http(`${second.url}/api/products/1/set_price`, { method: "POST", body: { price: 12 } })
      const history = (await http(`${second.url}/api/products/1/history`)).json.items
      expect(history.map((e: any) => [e.seq, e.version, e.actor])).toEqual([[1, 1, undefined], [2, 2, undefined], [4, 3, { client: "rest" }]])
      expect((await http(`${second.url}/api/products/2/history`)).json.items.map((e: any) => [e.seq, "actor" in e])).toEqual([[3, false]])
    } finally {
      await second.close()
    }
    expect(await storeFormat(dataDir)).toBe("3")
    await clean(dataDir, 4)

    // Every event has its history record: one missing is named.
    const db = await open(dataDir)
    await db.del(K.historyKey("products", "1", 2))
    await db.close()
    const damaged = await runWo(["verify", dataDir], { timeoutMs: 60_000 })
    expect(damaged.code).toBe(1)
    expect(damaged.stderr + damaged.stdout).toMatch(/3 history records for 4 events/)
  }, 120_000)
})

describe("the upgrade against kill -9", () => {
  /**
   * Bytes in LevelDB's write-ahead logs: the backfill's unsynced batches land there as it goes. A log LevelDB removes
   * between the listing and its stat (a memtable written out) counts nothing.
   */
  const walBytes = (dataDir: string) =>
    fs.readdirSync(dataDir).filter((f) => f.endsWith(".log")).reduce((n, f) => n + (fs.statSync(path.join(dataDir, f), { throwIfNoEntry: false })?.size ?? 0), 0)
  const historyCount = async (dataDir: string) => {
    const db = await open(dataDir)
    try {
      let n = 0
      for await (const _ of db.keys({ gte: K.HISTORY_START, lt: K.HISTORY_END })) n++
      return n
    } finally {
      await db.close()
    }
  }

  it("a server killed while it indexes the history leaves format 2, still clean; the next one upgrades it whole", async () => {
    const dataDir = tempDir()
    const first = await startServer(apps.pricing, { dataDir })
    try {
      for (let i = 0; i < 20; i++) await http(`${first.url}/api/products`, { method: "POST", body: { name: `p${i}`, price: 1 + i, currency: "EUR" } })
    } finally {
      await first.close()
    }
    const events = 20 + (await appendSetPriceEvents(dataDir, 30_000)).events
    await asFormat2(dataDir)
    // The kill comes once the backfill's first batch is whole in the write-ahead log (counted in bytes, not in time:
    // a loaded machine makes it slower, never earlier or later in the upgrade). A batch is one log record written in
    // 32 KiB fragments, so a kill inside the first one would leave no history record at all: the threshold is the
    // first batch's keys and values plus room for LevelDB's framing, and the backfill writes three batches.
    const [oneKey, oneValue] = historyRecord({ type: "products", id: "20", version: 1500, seq: events } as StoredEvent)
    const firstBatchBytes = BACKFILL_BATCH * (oneKey.length + oneValue.length) + 128 * 1024
    expect(events).toBeGreaterThan(2 * BACKFILL_BATCH)
    const server = spawn(process.execPath, [WO_BIN, "run", path.join(ROOT, "examples/pricing"), "--data", dataDir, "--listen", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    server.stdout.on("data", (d) => (output += d))
    server.stderr.on("data", (d) => (output += d))
    const exited = new Promise((resolve) => server.on("exit", resolve))
    let least = Number.POSITIVE_INFINITY
    let killed = false
    for (let polls = 0; !killed && polls < 60_000 && server.exitCode === null; polls++) {
      const bytes = walBytes(dataDir)
      least = Math.min(least, bytes)
      if (bytes > least + firstBatchBytes) killed = server.kill("SIGKILL")
      else await new Promise((r) => setTimeout(r, 2))
    }
    if (!killed) server.kill("SIGKILL")
    await exited
    expect(killed, output).toBe(true)
    expect(output).not.toMatch(/upgraded to format/)
    // Killed part way: some history records written, the marker still 2.
    const indexed = await historyCount(dataDir)
    expect(indexed).toBeGreaterThan(0)
    expect(indexed).toBeLessThan(events)
    expect(await storeFormat(dataDir)).toBe("2")
    await clean(dataDir, events)

    const second = await startServer(apps.pricing, { dataDir })
    try {
      const history = (await http(`${second.url}/api/products/3/history?limit=1000`)).json.items
      // A whole page (its first 1,000 of 1,501 events), in version order.
      expect(history.map((e: any) => e.version)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1))
    } finally {
      await second.close()
    }
    expect(await storeFormat(dataDir)).toBe("3")
    expect(await historyCount(dataDir)).toBe(events)
    await clean(dataDir, events)
  }, 180_000)
})
