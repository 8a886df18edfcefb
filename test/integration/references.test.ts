/**
 * References on the embedded store: an app command's `ref` param naming no live row is refused as a ref field
 * would be (422 `missing_reference`), and `wo verify --app` names a loan left pointing at a deleted member, planted
 * through the classic-level log's own append (which writes a batch as given), and exits non-zero.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { makeClassicLevelLog } from "../../src/log/classic-level/classic-level-log.ts"
import { LevelDb, levelDbLayer } from "../../src/log/classic-level/level-db.ts"
import { EventLog, type AppendEntry } from "../../src/log/event-log.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import library from "../../testkit/library-deletable-members.ts"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { http, ROOT, runWo, startServer, tempDir } from "../../testkit/server.ts"

describe("references on the embedded store", () => {
  it("a command's ref param naming no live row answers 422 missing_reference, and nothing is written", async () => {
    const server = await startServer(library)
    try {
      const post = (p: string, body: unknown) => http(`${server.url}${p}`, { method: "POST", body })
      const member = (await post("/api/members", { name: "Ann" })).json.id as string
      const book = (await post("/api/books", { title: "Dune", author: "Frank Herbert" })).json.id as string
      expect((await post(`/api/books/${book}/add_copies`, { n: 1 })).status).toBe(200)
      const noBook = await post("/api/_commands/lend", { book: "999", member })
      expect(noBook.status, noBook.text).toBe(422)
      expect(noBook.json).toMatchObject({ error: "Rejected", code: "missing_reference" })
      expect(noBook.text).toContain("books 999 does not exist")
      const noMember = await post("/api/_commands/lend", { book, member: "999" })
      expect(noMember.status, noMember.text).toBe(422)
      expect(noMember.json.code).toBe("missing_reference")
      // Nothing was written: the book still has its copy, and there is no loan.
      expect((await http(`${server.url}/api/books/${book}`)).json).toMatchObject({ available: 1 })
      expect((await http(`${server.url}/api/loans`)).json.items).toEqual([])
    } finally {
      await server.close()
    }
  })

  it("wo verify --app names a loan pointing at a deleted member and exits non-zero; without --app it says references were not checked", { timeout: 120_000 }, async () => {
    const dir = tempDir("wo-refs-planted-")
    const event = (seq: number, type: string, id: string, version: number, kind: "created" | "deleted", data: Record<string, unknown>): StoredEvent =>
      ({ seq, at: 1_000, type, id, version, schema: 1, kind, data })
    const created = (seq: number, type: string, data: Record<string, unknown>): AppendEntry =>
      ({ event: event(seq, type, "1", 1, "created", data), row: { id: "1", version: 1, ...data }, before: null })
    const member = { id: "1", version: 1, name: "Gone" }
    const logLayer = Layer.scoped(EventLog, Effect.flatMap(LevelDb, (db) => makeClassicLevelLog(db, { writer: { acceptDataLoss: false, ackedRecord: false } })))
    const runtime = ManagedRuntime.make(logLayer.pipe(Layer.provideMerge(levelDbLayer(dir))))
    try {
      const log = await runtime.runPromise(EventLog)
      await runtime.runPromise(log.append({
        entries: [
          created(1, "members", { name: "Gone" }),
          created(2, "books", { title: "Emma", author: "Jane Austen", copies: 1, available: 0 }),
          created(3, "loans", { book: "1", member: "1", status: "out" })
        ],
        counters: new Map([["members", 1], ["books", 1], ["loans", 1]])
      }))
      await runtime.runPromise(log.append({ entries: [{ event: event(4, "members", "1", 2, "deleted", {}), row: null, before: member }], counters: new Map() }))
    } finally {
      await runtime.dispose()
    }
    const appDir = writeAppDir(`export { default } from ${JSON.stringify(path.join(ROOT, "testkit/library-deletable-members.ts"))}\n`)
    const verified = await runWo(["verify", "--app", appDir, dir])
    expect(verified.code, verified.stdout).toBe(1)
    expect(verified.stderr).toContain("dangling reference: loans 1 field member references members 1, which was deleted")
    // Nothing else is wrong with the store.
    expect(verified.stderr).toContain("PROBLEMS (1)")
    const plain = await runWo(["verify", dir])
    expect(plain.code, plain.stderr).toBe(0)
    expect(plain.stdout).toMatch(/references not checked/)
  })
})
