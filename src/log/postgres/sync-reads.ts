/**
 * Synchronous statements on the PostgreSQL store, for the row cache's last resort (row-reads.ts): the reads served to
 * callers and the writer's read-ahead (commands/batch-prefetch.ts) await the store, but a decision is synchronous,
 * and a row it reads that was not read ahead (a command reading rows more steps away than the writer reads ahead),
 * like MCP's resources/list walk, is read here, as the embedded store's cache misses read classic-level with
 * `getSync`. A worker thread holds one connection to the primary and runs the statement; the calling thread blocks
 * on an `Atomics.wait` until the answer is posted (`receiveMessageOnPort` takes it without a turn of the event
 * loop), at most WO_STORE_TIMEOUT: past it, the read fails as a StoreError and the worker's connection is dropped.
 */
import { createRequire } from "node:module"
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads"
import type pg from "pg"
import { StoreFailed } from "../../domain/errors.ts"

/** The worker: CommonJS evaluated from this text, so that the built sources (one bundle) need no file of their own. */
const WORKER = `
const { workerData, parentPort } = require("node:worker_threads")
const pg = require(workerData.pg)
const { port, flag } = workerData
const signal = new Int32Array(flag)
let client
let clientKey
const drop = () => {
  if (client !== undefined) client.end().catch(() => undefined)
  client = undefined
}
parentPort.on("message", async ({ n, config, text, values }) => {
  let answer
  try {
    const key = JSON.stringify([config.host, config.port, config.database, config.user])
    if (client === undefined || key !== clientKey) {
      drop()
      const c = new pg.Client(config)
      c.on("error", () => { if (client === c) client = undefined })
      await c.connect()
      client = c
      clientKey = key
    }
    const result = await client.query({ text, values, rowMode: "array" })
    answer = { n, rows: result.rows }
  } catch (e) {
    drop()
    answer = { n, error: e instanceof Error ? e.message : String(e) }
  }
  port.postMessage(answer)
  Atomics.add(signal, 0, 1)
  Atomics.notify(signal, 0)
})
parentPort.on("close", drop)
`

export interface SyncReads {
  /** Runs one read-only statement and answers its rows as arrays of columns (text unless the driver parses them). */
  readonly query: (what: string, text: string, values?: ReadonlyArray<unknown>) => ReadonlyArray<ReadonlyArray<unknown>>
  readonly close: () => Promise<void>
}

export const makeSyncReads = (config: () => pg.ClientConfig, timeoutMs: number): SyncReads => {
  const flag = new SharedArrayBuffer(4)
  const signal = new Int32Array(flag)
  // Started on the first read: a process that never misses (a tool, a node whose reads all hit) starts no thread.
  let started: { readonly worker: Worker; readonly port: MessagePort } | undefined
  const start = () => {
    if (started !== undefined) return started
    const { port1, port2 } = new MessageChannel()
    const worker = new Worker(WORKER, {
      eval: true,
      workerData: { pg: createRequire(import.meta.url).resolve("pg"), port: port2, flag },
      transferList: [port2]
    })
    // The process never waits for it: it lives as long as the reads are wanted.
    worker.unref()
    port1.unref()
    return (started = { worker, port: port1 })
  }
  let calls = 0
  let closed = false
  const query: SyncReads["query"] = (what, text, values) => {
    if (closed) throw new StoreFailed({ reason: `${what}: the store is closed` })
    const { worker, port } = start()
    const n = ++calls
    worker.postMessage({ n, config: config(), text, values })
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const seen = Atomics.load(signal, 0)
      let got = receiveMessageOnPort(port)
      // Answers to earlier calls that timed out are dropped.
      while (got !== undefined && got.message.n !== n) got = receiveMessageOnPort(port)
      if (got !== undefined) {
        const answer = got.message as { readonly rows?: ReadonlyArray<ReadonlyArray<unknown>>; readonly error?: string }
        if (answer.error !== undefined) throw new StoreFailed({ reason: `${what}: ${answer.error}` })
        return answer.rows!
      }
      const left = deadline - Date.now()
      if (left <= 0) throw new StoreFailed({ reason: `${what}: the primary did not answer within ${timeoutMs} ms (WO_STORE_TIMEOUT)` })
      Atomics.wait(signal, 0, seen, left)
    }
  }
  return {
    query,
    close: async () => {
      closed = true
      if (started === undefined) return
      started.port.close()
      await started.worker.terminate()
    }
  }
}
