/**
 * The hold `wo backup` takes (LevelDbShape.whileNoWrites, backup/pin-files.ts): it waits for the write in flight,
 * holds the writes that start meanwhile until it returns, and the files it pins are one state: a copy of them
 * holds the writes finished before the hold and none of those after, even when the writes after it go on while the
 * pinned files are copied.
 */
import { ClassicLevel } from "classic-level"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { openDb } from "../../src/log/classic-level/level-db.ts"
import { copyPinned, pinFiles } from "../../src/backup/pin-files.ts"
import { tempDir } from "../../testkit/server.ts"

describe("whileNoWrites", () => {
  it("waits for the write in flight and holds new writes until it returns; the pinned files are that state", async () => {
    const dir = tempDir("wo-hold-")
    const copy = path.join(tempDir("wo-hold-copy-"), "copy")
    fs.mkdirSync(copy)
    const order: Array<string> = []
    await Effect.runPromise(Effect.scoped(Effect.gen(function* () {
      const h = yield* openDb(dir)
      for (let i = 0; i < 100; i++) yield* h.write("seed", (db) => db.put(`k${String(i).padStart(4, "0")}`, "before", { sync: true }))
      let open!: () => void
      const gate = new Promise<void>((resolve) => (open = resolve))
      const inFlight = Effect.runPromise(h.write("slow", async (db) => {
        await gate
        await db.put("slow", "before", { sync: true })
        order.push("write in flight done")
      }))
      let later: Promise<void> | undefined
      const pinned = Effect.runPromise(h.whileNoWrites!(async () => {
        order.push("hold")
        // A write asked for during the hold waits for it.
        later = Effect.runPromise(h.write("later", async (db) => {
          order.push("write after the hold")
          await db.put("later", "after", { sync: true })
        }))
        await new Promise((r) => setTimeout(r, 50))
        return pinFiles(dir)
      }))
      yield* Effect.promise(() => new Promise((r) => setTimeout(r, 20)))
      order.push("gate opened")
      open()
      const files = yield* Effect.promise(() => pinned)
      yield* Effect.promise(() => inFlight)
      yield* Effect.promise(() => later!)
      // More writes while the pinned files are copied: none of them is in the copy.
      for (let i = 0; i < 50; i++) yield* h.write("more", (db) => db.put(`z${i}`, "after", { sync: true }))
      yield* Effect.promise(() => copyPinned(files, copy))
    })))
    expect(order).toEqual(["gate opened", "write in flight done", "hold", "write after the hold"])
    const db = new ClassicLevel<string, string>(copy, { createIfMissing: false })
    await db.open()
    try {
      const entries = await db.iterator().all()
      expect(entries.filter(([, v]) => v === "after")).toEqual([])
      expect(entries.length).toBe(101)
      expect(await db.get("slow")).toBe("before")
    } finally {
      await db.close()
    }
  })
})
