/**
 * Corruption is detected and named: `wo verify`'s checks on deliberately damaged stores, the refusal of a dir
 * that LevelDB dropped data from while opening it (sticky until `--accept-data-loss`), and the record codec.
 */
import { ClassicLevel } from "classic-level"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { Commands } from "../../src/commands/commands.ts"
import { crc32cUpdate } from "../../src/log/crc32c.ts"
import { DATA_LOSS_MARKER, openDb } from "../../src/log/classic-level/level-db.ts"
import * as K from "../../src/log/classic-level/log-keys.ts"
import { crc32c, seal, unseal, unsealJson } from "../../src/log/record.ts"
import { verifyStore } from "../../src/log/classic-level/offline/verify.ts"
import { damagedTailRecord } from "../../src/log/classic-level/wal-check.ts"
import { runWo } from "../../testkit/spawn.ts"
import { apps, http, ROOT, spawnServer, startServer, tempDir } from "../../testkit/server.ts"
import { waitFor } from "../../testkit/wait.ts"

const product = (n: number) => ({ name: `p${n}`, price: n, currency: "USD" })
const pricing = path.join(ROOT, "examples/pricing")

/** A stopped store: products 1-4 created, 1 and 2 repriced, 3 deleted (9 events). */
const buildStore = async () => {
  const dataDir = tempDir("wo-verify-")
  const server = await startServer(apps.pricing, { dataDir })
  for (let n = 1; n <= 4; n++) await http(`${server.url}/api/products`, { method: "POST", body: product(n) })
  for (const id of [1, 2, 1]) await http(`${server.url}/api/products/${id}/set_price`, { method: "POST", body: { price: 50 + id } })
  // The pricing app exposes no delete over REST; the command handler serves every operation.
  await server.runtime.runPromise(Effect.flatMap(Commands, (c) => c.execute({ _tag: "Delete", type: "products", id: "3" })))
  await http(`${server.url}/api/products/4/set_price`, { method: "POST", body: { price: 9 } })
  await server.close()
  return dataDir
}

const edit = async (dataDir: string, f: (db: ClassicLevel<string, string>) => Promise<unknown>) => {
  const db = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8" })
  await db.open()
  try {
    await f(db)
  } finally {
    await db.close()
  }
}

const verify = (dataDir: string) => Effect.runPromise(Effect.scoped(Effect.flatMap(openDb(dataDir), verifyStore)))

const copyOf = (dataDir: string) => {
  const copy = tempDir("wo-verify-copy-")
  fs.cpSync(dataDir, copy, { recursive: true })
  return copy
}

describe("wo verify", () => {
  it("passes a whole store and names every kind of damage", async () => {
    const dataDir = await buildStore()
    const clean = await verify(dataDir)
    expect(clean).toMatchObject({ events: 9, rows: 3, problems: [] })

    const cases: ReadonlyArray<readonly [string, (db: ClassicLevel<string, string>) => Promise<unknown>, ReadonlyArray<RegExp>]> = [
      ["a missing event", (db) => db.del(K.eventKey(5)), [/events 5\.\.5 are missing/, /products\/1 goes from version 1 to 3/]],
      [
        "a flipped character in an event",
        async (db) => db.put(K.eventKey(6), (await db.get(K.eventKey(6)))!.replace('"price":52', '"price":53')),
        [/corrupt record at key e!0000000000000006: checksum mismatch/]
      ],
      [
        "an event moved under another key",
        async (db) => {
          await db.put(K.eventKey(12), (await db.get(K.eventKey(9)))!)
          await db.del(K.eventKey(9))
        },
        [/events 9\.\.11 are missing/, /corrupt record at key e!0000000000000012/]
      ],
      ["an id counter below the highest id", (db) => db.put(K.counterKey("products"), seal(K.counterKey("products"), "2")), [/id counter of products is 2, below the highest id 4/]],
      ["a checkpoint behind the log", (db) => db.put(K.CHECKPOINT_KEY, seal(K.CHECKPOINT_KEY, "8")), [/the checkpoint is 8, the last event 9/]],
      [
        "a stored row gone",
        (db) => db.del(K.rowKey("products", "2")),
        [/row products\/2 is missing/, /2 rows of products are stored, the store recorded 3/]
      ],
      [
        "a stored row at another version (re-sealed: a bug, not a flip)",
        async (db) => {
          const key = K.rowKey("products", "4")
          const { row } = unsealJson<{ row: Record<string, unknown> }>(key, (await db.get(key))!)
          await db.put(key, seal(key, JSON.stringify({ schema: 1, row: { ...row, version: 7 } })))
        },
        [/row products\/4 is at version 7, the log at 2/]
      ],
      ["a stored row of a deleted entity", (db) => db.put(K.rowKey("products", "3"), seal(K.rowKey("products", "3"), '{"schema":1,"row":{"id":"3","version":1}}')), [/row products\/3 is stored although the log deleted it/]]
    ]
    for (const [name, damage, expected] of cases) {
      const copy = copyOf(dataDir)
      await edit(copy, damage)
      const report = await verify(copy)
      for (const pattern of expected) expect(report.problems.join("\n"), name).toMatch(pattern)
    }

    // The CLI: exit 1 naming the problems; exit 0 with OK on the whole store.
    const damaged = copyOf(dataDir)
    await edit(damaged, (db) => db.del(K.eventKey(2)))
    const bad = await runWo(["verify", damaged])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(/PROBLEMS \(\d+\):\n {2}- events 2\.\.2 are missing/)
    // `wo replay` reads through the same checks: a gap mid-log is an error, not a shorter fold.
    const replay = await runWo(["replay", damaged])
    expect(replay.code).toBe(1)
    expect(replay.stderr).toMatch(/corrupt log: event 2 is missing/)
    const good = await runWo(["verify", dataDir])
    expect(good.code).toBe(0)
    expect(good.stdout).toMatch(/verified 9 events and 3 rows/)
  })
})

describe("the startup audit", () => {
  it("finds a damaged event before the checkpoint (startup reads only the rows and the tail) and logs it by key", async () => {
    const dataDir = await buildStore()
    await edit(dataDir, async (db) => db.put(K.eventKey(2), (await db.get(K.eventKey(2)))!.replace('"p2"', '"p7"')))
    const server = await spawnServer(pricing, dataDir)
    try {
      expect(await waitFor(() => /log audit: the log is damaged/.test(server.output()), 20_000)).toBe(true)
      expect(server.output()).toMatch(/corrupt record at key e!0000000000000002: checksum mismatch.*wo verify/)
      // The rows are whole, so they are still served as acknowledged.
      expect((await http(`${server.url}/api/products/2`)).json).toMatchObject({ name: "p2" })
    } finally {
      await server.stop()
    }
  })
})

describe("what LevelDB drops while opening", () => {
  it("is refused by name, stays refused after LevelDB deleted the evidence, and is served only with --accept-data-loss", async () => {
    const dataDir = await buildStore()
    // Flip a byte in the middle of the write-ahead log: LevelDB drops that record and the ones after it.
    const log = fs.readdirSync(dataDir).find((f) => /^\d+\.log$/.test(f))!
    const bytes = fs.readFileSync(path.join(dataDir, log))
    bytes[Math.floor(bytes.length / 3)] ^= 0x10
    fs.writeFileSync(path.join(dataDir, log), bytes)

    const start = (...extra: Array<string>) => runWo(["run", pricing, "--data", dataDir, "--listen", "127.0.0.1:0", ...extra], { timeoutMs: 30_000 })
    const refused = await start()
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/LevelDB dropped data while opening/)
    expect(refused.stderr).toMatch(/dropping \d+ bytes/)
    expect(refused.stderr).toMatch(/--accept-data-loss/)
    expect(fs.existsSync(path.join(dataDir, DATA_LOSS_MARKER))).toBe(true)
    expect(fs.readdirSync(dataDir).some((f) => f.startsWith("wo-evidence-"))).toBe(true)

    // LevelDB has since rewritten its log: only the marker remembers. Every opener refuses.
    const again = await start()
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/an earlier open .* found that LevelDB dropped data/)
    expect((await runWo(["verify", dataDir])).code).toBe(1)
    expect((await runWo(["replay", dataDir])).code).toBe(1)

    // A check that accepts the loss reads what is left, and (as every check) writes nothing: the marker stays.
    const accepted = await runWo(["verify", dataDir, "--accept-data-loss"])
    expect(accepted.stdout).toMatch(/verified \d+ events/)
    expect(fs.existsSync(path.join(dataDir, DATA_LOSS_MARKER))).toBe(true)
    // The operator accepts the loss once, with the open `wo run --accept-data-loss` makes; from then on the dir is
    // served as it is.
    await Effect.runPromise(Effect.scoped(openDb(dataDir, { acceptDataLoss: true })))
    expect(fs.existsSync(path.join(dataDir, DATA_LOSS_MARKER))).toBe(false)
  })

  it("refuses a write-ahead log whose last records LevelDB would drop without a word (a damaged length field)", async () => {
    const dataDir = await buildStore()
    const log = fs.readdirSync(dataDir).find((f) => /^\d+\.log$/.test(f))!
    const file = path.join(dataDir, log)
    const bytes = fs.readFileSync(file)
    // Find the last record's header and set the high bit of its length: it now runs past the end of the file.
    let pos = 0
    let last = 0
    while (pos + 7 <= bytes.length) {
      last = pos
      pos += 7 + bytes.readUInt16LE(pos + 4)
    }
    expect(damagedTailRecord(bytes)).toBeUndefined()
    bytes[last + 5] ^= 0x40
    fs.writeFileSync(file, bytes)
    expect(damagedTailRecord(bytes)).toMatchObject({ offset: last })

    const refused = await runWo(["run", pricing, "--data", dataDir, "--listen", "127.0.0.1:0"], { timeoutMs: 30_000 })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/LevelDB would drop acknowledged writes/)
    expect(refused.stderr).toMatch(/its length field is damaged/)
    expect(fs.existsSync(file)).toBe(true) // refused before LevelDB opened (and deleted) it
  })

  it("lets a torn last record through: a write cut short by a crash was never acknowledged", () => {
    const record = Buffer.from("a whole record's payload")
    const header = Buffer.alloc(7)
    const crc = (crc32cUpdate(crc32cUpdate(-1, Buffer.from([1])), record) ^ -1) >>> 0
    const masked = ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0
    header.writeUInt32LE(masked, 0)
    header.writeUInt16LE(record.length, 4)
    header[6] = 1
    const whole = Buffer.concat([header, record])
    expect(damagedTailRecord(whole)).toBeUndefined()
    expect(damagedTailRecord(whole.subarray(0, whole.length - 5))).toBeUndefined() // torn: no alarm
    const longer = Buffer.from(whole)
    longer.writeUInt16LE(record.length + 64, 4)
    expect(damagedTailRecord(longer)).toMatchObject({ offset: 0, claimed: record.length + 64, actual: record.length })
  })
})

describe("checksummed records", () => {
  it("use the standard CRC-32C and catch a changed value or key", () => {
    expect(crc32c("123456789")).toBe(0xe3069283)
    expect(crc32c("é€😀")).toBe((crc32cUpdate(-1, Buffer.from("é€😀", "utf8")) ^ -1) >>> 0)
    const value = seal("r!products!000000000001", '{"schema":1,"row":{"id":"1","version":2,"price":12.5}}')
    expect(unseal("r!products!000000000001", value)).toContain('"price":12.5')
    expect(() => unseal("r!products!000000000001", value.replace("12.5", "12.6"))).toThrow(/checksum mismatch/)
    expect(() => unseal("r!products!000000000002", value)).toThrow(/key r!products!000000000002: checksum mismatch/)
    expect(() => unseal("m!checkpoint", "7")).toThrow(/checksum mismatch/)
  })
})
