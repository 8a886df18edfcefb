/**
 * The server's classic-level store shared with other threads of the process (level-db.ts `lendReads`), on a real
 * data dir and a real worker thread holding its own handle: a second runtime of the process on the same dir is
 * refused, and a reopen after a failed write first ends the readers it lent the store to, so that LevelDB really
 * reopens (a fresh write-ahead log). The control case shows why: a handle left open in a worker keeps the old
 * instance, and the reopen starts no new log. And on a real small tmpfs: a write fails on the full disk while a
 * reader thread holds the store; once space returns, the reopen ends the reader, and every acknowledged write is
 * there after the store is closed and opened again (mounting needs root; CI runs as root).
 */
import { Effect, Exit, Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"
import { describe, expect, it } from "vitest"
import { openDb, type LevelDbShape } from "../../src/log/classic-level/level-db.ts"
import { writeAheadLogs } from "../../testkit/dir-files.ts"
import { smallTmpfs } from "../../testkit/small-tmpfs.ts"
import { tempDir } from "../../testkit/server.ts"

const CLASSIC_LEVEL = createRequire(import.meta.url).resolve("classic-level")

/** A worker that opens `dir` as another thread of the process, posts what it reads under "k", and stays. */
const readerThread = async (dir: string) => {
  const worker = new Worker(`
    const { workerData, parentPort } = require("node:worker_threads")
    const { ClassicLevel } = require(workerData.classicLevel)
    const db = new ClassicLevel(workerData.dir, { keyEncoding: "utf8", valueEncoding: "utf8" })
    db.open({ multithreading: true, createIfMissing: false }).then(() => parentPort.postMessage(db.getSync("k") ?? null), (e) => parentPort.postMessage("failed: " + e.message))
    setInterval(() => {}, 1000)
  `, { eval: true, workerData: { dir, classicLevel: CLASSIC_LEVEL } })
  const read = await new Promise<string | null>((resolve) => worker.once("message", resolve))
  return { worker, read }
}


const open = async (dir: string) => {
  const scope = Effect.runSync(Scope.make())
  const h: LevelDbShape = await Effect.runPromise(Scope.extend(openDb(dir, { threads: true }), scope))
  return { h, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

const put = (h: LevelDbShape, key: string, value: string) => Effect.runPromise(h.write("put", (db) => db.put(key, value)))

/** A write that fails: from here on the store must reopen before it writes again. */
const failAWrite = (h: LevelDbShape) => Effect.runPromise(Effect.either(h.write("a write that fails", async () => Promise.reject(new Error("EIO: the disk said no")))))

describe("the store shared with other threads", () => {
  it("refuses a second runtime of this process on the same data dir, and takes one again once the first closed", async () => {
    const dir = tempDir("wo-level-threads-")
    const first = await open(dir)
    const second = await Effect.runPromise(Effect.either(Effect.scoped(openDb(dir, { threads: true }))))
    expect(second._tag).toBe("Left")
    expect(second._tag === "Left" && second.left.reason).toMatch(/in use by another runtime in this process/)
    await first.close()
    const again = await open(dir)
    await again.close()
  })

  it("ends the readers it lent the store to before it reopens after a failed write: LevelDB starts a fresh write-ahead log", async () => {
    const dir = tempDir("wo-level-threads-")
    const { h, close } = await open(dir)
    try {
      await put(h, "k", "written by the server")
      const reader = await readerThread(dir)
      expect(reader.read).toBe("written by the server")
      const ended: Array<string> = []
      const loan = Effect.runSync(Scope.make())
      expect(await Effect.runPromise(Scope.extend(h.lendReads!(async () => {
        ended.push("ended")
        await reader.worker.terminate()
      }), loan))).toBe(dir)
      const before = writeAheadLogs(dir)
      await failAWrite(h)
      await put(h, "k2", "after the reopen")
      expect(ended).toEqual(["ended"])
      expect(h.reopens()).toBe(1)
      expect(Math.max(...writeAheadLogs(dir))).toBeGreaterThan(Math.max(...before))
      expect(await Effect.runPromise(h.read("get", (db) => db.get("k2")))).toBe("after the reopen")
      await Effect.runPromise(Scope.close(loan, Exit.void))
    } finally {
      await close()
    }
  })

  it("(control) with a reader's handle left open, the reopen keeps the old instance: no new write-ahead log", async () => {
    const dir = tempDir("wo-level-threads-")
    const { h, close } = await open(dir)
    const reader = await readerThread(dir)
    try {
      await put(h, "k", "v")
      const before = writeAheadLogs(dir)
      await failAWrite(h)
      await put(h, "k2", "v2")
      expect(h.reopens()).toBe(1)
      expect(writeAheadLogs(dir)).toEqual(before)
    } finally {
      await reader.worker.terminate()
      await close()
    }
  })
})

const disk = smallTmpfs("the full-disk case of level-db-threads")

describe.skipIf(!disk.mounted)("the store shared with other threads, on a full disk", () => {
  it("a write fails while a reader thread holds the store; once space returns the reopen ends the reader, and nothing acknowledged is lost", async () => {
    const dir = path.join(disk.mountPoint, "data")
    fs.mkdirSync(dir)
    const { h, close } = await open(dir)
    const acknowledged: Array<string> = []
    let reader: Awaited<ReturnType<typeof readerThread>> | undefined
    try {
      await put(h, "k", "written by the server")
      reader = await readerThread(dir)
      expect(reader.read).toBe("written by the server")
      const ended: Array<string> = []
      const loan = Effect.runSync(Scope.make())
      const thread = reader.worker
      await Effect.runPromise(Scope.extend(h.lendReads!(async () => {
        ended.push("ended")
        await thread.terminate()
      }), loan))
      // 30 KiB values until the 1.2 MB disk refuses one.
      let failed: string | undefined
      for (let n = 0; n < 200 && failed === undefined; n++) {
        const written = await Effect.runPromise(Effect.either(h.write("put", (db) => db.put(`v${n}`, `${n}:${"x".repeat(30 * 1024)}`))))
        if (written._tag === "Right") acknowledged.push(`v${n}`)
        else failed = written.left.reason
      }
      expect(failed, "the 1.2 MB tmpfs never filled").toMatch(/write failed|No space|ENOSPC|IO error/i)
      expect(ended).toEqual([])
      // Space returns: the next write reopens the store, which first ends the reader.
      disk.remount("size=64m")
      await put(h, "after", "the reopen")
      acknowledged.push("after")
      expect(ended).toEqual(["ended"])
      expect(h.reopens()).toBe(1)
      await Effect.runPromise(Scope.close(loan, Exit.void))
    } finally {
      await reader?.worker.terminate()
      await close()
    }
    // Every acknowledged write, read back from a fresh open of the data dir.
    const again = await open(dir)
    try {
      for (const key of acknowledged) expect(await Effect.runPromise(again.h.read("get", (db) => db.get(key))), key).toBeDefined()
      expect(acknowledged.length).toBeGreaterThan(5)
    } finally {
      await again.close()
    }
  })
})
