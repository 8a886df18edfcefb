/**
 * A stopped pricing store whose acknowledged writes all sit in LevelDB's write-ahead log (one server session on a
 * new dir), for the tests that damage that log: products created by concurrent clients, some repriced, the last
 * write a set_price; and a copy of the log taken halfway (an "older .log" to put back).
 */
import { ClassicLevel } from "classic-level"
import * as fs from "node:fs"
import * as path from "node:path"
import * as K from "../src/log/classic-level/log-keys.ts"
import { runWo } from "./spawn.ts"
import { http, ROOT, spawnServer, tempDir } from "./server.ts"

export const pricing = path.join(ROOT, "examples/pricing")

export interface AckedStore {
  readonly dataDir: string
  /** Every event acknowledged (the seq of the last one). */
  readonly acked: number
  /** The highest product id handed out. */
  readonly maxId: number
  /** The last acknowledged write: a set_price. */
  readonly lastPrice: { readonly id: string; readonly price: number }
  /** The write-ahead log as it was after the first half of the creates. */
  readonly olderLog: Buffer
  readonly logName: string
}

const product = (n: number) => ({ name: `product ${n} ${"-".repeat(120)}`, price: n, currency: "USD" })

const createMany = async (url: string, from: number, to: number, inFlight = 16) => {
  let next = from
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next <= to) {
      const n = next++
      const res = await http(`${url}/api/products`, { method: "POST", body: product(n) })
      if (res.status !== 201) throw new Error(`create ${n}: ${res.status} ${res.text}`)
    }
  }))
}

export const writeAheadLog = (dataDir: string) => {
  const logs = fs.readdirSync(dataDir).filter((f) => /^\d+\.log$/.test(f))
  if (logs.length !== 1) throw new Error(`expected one write-ahead log in ${dataDir}, found ${logs.join(", ")}`)
  return path.join(dataDir, logs[0])
}

export const buildAckedStore = async (products = 400): Promise<AckedStore> => {
  const dataDir = tempDir("wo-acked-")
  const server = await spawnServer(pricing, dataDir)
  let olderLog: Buffer
  let lastPrice: { id: string; price: number }
  try {
    await createMany(server.url, 1, products / 2)
    olderLog = fs.readFileSync(writeAheadLog(dataDir))
    await createMany(server.url, products / 2 + 1, products)
    for (let id = 1; id <= 50; id++) {
      const res = await http(`${server.url}/api/products/${id}/set_price`, { method: "POST", body: { price: 1000 + id } })
      if (res.status !== 200) throw new Error(`set_price ${id}: ${res.status} ${res.text}`)
    }
    lastPrice = { id: "7", price: 4242 }
    const last = await http(`${server.url}/api/products/7/set_price`, { method: "POST", body: { price: lastPrice.price } })
    if (last.status !== 200) throw new Error(`set_price: ${last.status} ${last.text}`)
  } finally {
    await server.stop()
  }
  return { dataDir, acked: products + 51, maxId: products, lastPrice, olderLog, logName: path.basename(writeAheadLog(dataDir)) }
}

export const copyDir = (dataDir: string, prefix = "wo-acked-copy-") => {
  const copy = tempDir(prefix)
  fs.cpSync(dataDir, copy, { recursive: true })
  return copy
}

/** The head a damaged dir opens at, read on a throwaway copy (LevelDB's open rewrites the dir). */
export const headOf = async (dataDir: string) => {
  const copy = copyDir(dataDir, "wo-acked-peek-")
  const db = new ClassicLevel<string, string>(copy, { keyEncoding: "utf8", valueEncoding: "utf8" })
  await db.open()
  try {
    for await (const key of db.keys({ gte: K.EVENTS_START, lt: K.EVENTS_END, reverse: true, limit: 1 })) return K.seqOfEventKey(key)
    return 0
  } finally {
    await db.close()
    fs.rmSync(copy, { recursive: true, force: true })
  }
}

/** `wo run` on the dir, expected to exit (refused) rather than serve. */
export const startRefused = (dataDir: string) => runWo(["run", pricing, "--data", dataDir, "--listen", "127.0.0.1:0"], { timeoutMs: 30_000 })
