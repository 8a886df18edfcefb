/**
 * An app command is atomic in the store: all of its events, or none. A fault while its second event is encoded
 * writes nothing of it; `kill -9` of `wo run` during a stream of `lend` commands leaves a log where every loan has
 * its book decremented and nothing else (loans per book = copies - available), every correlation whole, and
 * `wo verify` and `wo replay --app` accept it.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { loadSettings } from "../../src/support/config.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { HttpServer } from "../../src/http/server.ts"
import { ClassicLevelLog } from "../../src/log/classic-level/classic-level-log.ts"
import { EventLog } from "../../src/log/event-log.ts"
import { writeOnceLayer } from "../../src/runtime/runtime.ts"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { library } from "../../testkit/library-app.ts"
import { checkStore, readStore, type StoreSnapshot } from "../../testkit/log-reader.ts"
import { http, ROOT, runWo, spawnServer, tempDir } from "../../testkit/server.ts"

const cleanups: Array<() => Promise<unknown>> = []
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((f) => f()))
})

/** Every command's events share one correlation, and each `lend` wrote exactly its two events. */
const commandGroups = (events: ReadonlyArray<StoredEvent>) => {
  const groups = new Map<string, Array<StoredEvent>>()
  for (const e of events) {
    if (e.correlation === undefined) continue
    groups.set(e.correlation, [...(groups.get(e.correlation) ?? []), e])
  }
  return [...groups.values()]
}

/** Per book: its loans in the stored rows, and copies - available. They must be equal. */
const loansPerBook = (snapshot: StoreSnapshot) => {
  const out = new Map<string, { loans: number; lent: number }>()
  for (const [key, row] of snapshot.storedRows) {
    if (key.startsWith("books/")) out.set(row.id, { loans: out.get(row.id)?.loans ?? 0, lent: (row.copies as number) - (row.available as number) })
  }
  for (const [key, row] of snapshot.storedRows) {
    if (!key.startsWith("loans/")) continue
    const book = out.get(row.book as string)!
    out.set(row.book as string, { ...book, loans: book.loans + 1 })
  }
  return out
}

describe("an app command in the store", () => {
  it("a fault while its second event is encoded writes nothing of it; the next command is whole", async () => {
    const dataDir = tempDir("wo-cmd-fault-")
    let armed = false
    // The real classic-level log; armed, the batch it gets has a second entry whose event throws when read.
    const faultyLog = Layer.effect(
      EventLog,
      Effect.gen(function* () {
        const log = yield* EventLog
        return EventLog.of({
          ...log,
          append: (batch) => {
            if (!armed || !batch.entries.some((e) => e.event.command !== undefined)) return log.append(batch)
            armed = false
            const entries = batch.entries.map((e, i) =>
              i === 1
                ? { row: e.row, rowJson: e.rowJson, get event(): StoredEvent { throw new Error("injected: the second entry cannot be encoded") } }
                : e)
            return log.append({ ...batch, entries })
          }
        })
      })
    ).pipe(Layer.provide(ClassicLevelLog))
    const settings = await Effect.runPromise(loadSettings({ dataDir }, { host: "127.0.0.1", port: 0 }))
    const runtime = ManagedRuntime.make(writeOnceLayer(library, settings, { log: faultyLog }))
    cleanups.push(() => runtime.dispose())
    const { url } = await runtime.runPromise(HttpServer)
    const post = (p: string, body: unknown) => http(`${url}${p}`, { method: "POST", body })
    await post("/api/books", { title: "Dune" })
    await post("/api/books/1/add_copies", { n: 2 })
    await post("/api/members", { name: "Ann" })

    armed = true
    const failed = await post("/api/_commands/lend", { book: "1", member: "1" })
    expect(failed.status).toBe(503)
    expect(failed.json.message).toMatch(/injected/)
    expect((await http(`${url}/api/books/1`)).json).toMatchObject({ version: 2, available: 2 })
    expect((await http(`${url}/api/loans`)).json.items).toEqual([])

    const lent = await post("/api/_commands/lend", { book: "1", member: "1" })
    expect(lent.status).toBe(200)
    expect(lent.json.changes.map((c: any) => [c.type, c.id, c.version])).toEqual([["books", "1", 3], ["loans", "1", 1]])
    await runtime.dispose()

    const snapshot = await readStore(dataDir)
    expect(checkStore(snapshot)).toEqual([])
    expect(snapshot.events.map((e) => [e.seq, e.type, e.kind, e.command])).toEqual([
      [1, "books", "created", undefined],
      [2, "books", "invoked", undefined],
      [3, "members", "created", undefined],
      [4, "books", "invoked", "lend"],
      [5, "loans", "created", "lend"]
    ])
  })

  it("kill -9 during a stream of lend commands: every loan has its book decremented and nothing else; verify and replay accept the log", async () => {
    const appDir = writeAppDir(`export { default } from ${JSON.stringify(path.join(ROOT, "testkit/library-app.ts"))}\n`)
    const dataDir = tempDir("wo-cmd-kill-")
    const server = await spawnServer(appDir, dataDir)
    cleanups.push(() => server.stop("SIGKILL"))
    const post = (p: string, body: unknown) => http(`${server.url}${p}`, { method: "POST", body })
    const BOOKS = 4
    for (let b = 1; b <= BOOKS; b++) {
      await post("/api/books", { title: `b${b}` })
      await post(`/api/books/${b}/add_copies`, { n: 30 })
    }
    await post("/api/members", { name: "Ann" })

    // 16 clients lend in a loop; the kill comes right after the 60th acknowledged lend, the others in flight.
    const acked: Array<{ loan: string; book: string }> = []
    const unexpected: Array<string> = []
    let killed = false
    let n = 0
    const killAt = 60
    const client = async () => {
      while (!killed) {
        const book = String((n++ % BOOKS) + 1)
        try {
          const res = await post("/api/_commands/lend", { book, member: "1" })
          if (res.status === 200) acked.push({ loan: res.json.changes[1].id, book })
          else unexpected.push(`${res.status} ${res.text}`)
          if (unexpected.length > 0) return
          if (acked.length >= killAt && !killed) {
            killed = true
            await server.stop("SIGKILL")
          }
        } catch {
          return // the server is gone
        }
      }
    }
    await Promise.all(Array.from({ length: 16 }, client))
    expect(unexpected).toEqual([])
    expect(killed).toBe(true)

    const snapshot = await readStore(dataDir)
    expect(checkStore(snapshot)).toEqual([])
    const groups = commandGroups(snapshot.events)
    expect(groups.length).toBeGreaterThanOrEqual(killAt)
    for (const g of groups) expect(g.map((e) => `${e.type}/${e.kind}/${e.command}`)).toEqual(["books/invoked/lend", "loans/created/lend"])
    for (const [book, { loans, lent }] of loansPerBook(snapshot)) expect(loans, `book ${book}`).toBe(lent)
    const loans = new Set([...snapshot.storedRows.keys()].filter((k) => k.startsWith("loans/")))
    for (const { loan } of acked) expect(loans.has(`loans/${loan}`), `acknowledged loan ${loan}`).toBe(true)

    const verify = await runWo(["verify", dataDir])
    expect(verify.code, verify.stderr).toBe(0)
    const replay = await runWo(["replay", "--app", appDir, dataDir])
    expect(replay.code, replay.stderr).toBe(0)
    expect(replay.stdout).toMatch(new RegExp(`replayed ${snapshot.events.length} events`))

    // Restarted, it serves the same: every loan's book decremented.
    const again = await spawnServer(appDir, dataDir)
    cleanups.push(() => again.stop())
    const books = (await http(`${again.url}/api/books`)).json.items as Array<any>
    const served = (await http(`${again.url}/api/loans?limit=1000`)).json.items as Array<any>
    expect(served.length).toBe(loans.size)
    for (const b of books) expect(served.filter((l) => l.book === b.id).length).toBe(b.copies - b.available)
    expect((await http(`${again.url}/api/_commands/lend`, { method: "POST", body: { book: "1", member: "1" } })).status).toBe(200)
  })
})
