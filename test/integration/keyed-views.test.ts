/**
 * Keyed views on the embedded store, through the real runtime in-process (classic-level in a temp dir, REST on
 * port 0): entries per key, written in the batch that changed them and only those, served through the KeyedViews
 * service; an evolve that changes its entry and its change in place corrupts neither the cache nor the rows; a
 * restart serves the stored entries without reading them; a new declaration is folded again in the background.
 */
import { ClassicLevel } from "classic-level"
import { Effect, Layer, ManagedRuntime } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { ClassicLevelLog } from "../../src/log/classic-level/classic-level-log.ts"
import { EventLog, type AppendBatch } from "../../src/log/event-log.ts"
import { HttpServer } from "../../src/http/server.ts"
import { writeOnceLayer } from "../../src/runtime/runtime.ts"
import { loadSettings } from "../../src/support/config.ts"
import { KeyedViews } from "../../src/projections/views/keyed-views.ts"
import { viewDefinition } from "../../src/log/view-record.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { seal } from "../../src/log/record.ts"
import { StoreFailed } from "../../src/domain/errors.ts"
import { ChangeFeed } from "../../src/subscriptions/change-feed.ts"
import type { ViewUpdate } from "../../src/subscriptions/change-feed.ts"
import { keyedTasks } from "../../testkit/keyed-tasks.ts"
import { startGatedRefold } from "../../testkit/gated-refold.ts"
import { http, tempDir } from "../../testkit/server.ts"
import { modernCall, modernRequest } from "../../testkit/modern-client.ts"

const NAME = "open_by_owner"
const batches: Array<AppendBatch> = []
/** Set: the next append fails as a full disk would, nothing written. */
let failNext = false
/** Set: the next append is written, then reported failed (a batch that lands after all). */
let landNext = false

/** The real classic-level log, each batch it is given recorded. */
const recordingLog = Layer.effect(
  EventLog,
  Effect.map(EventLog, (log) => EventLog.of({
    ...log,
    append: (batch) =>
      Effect.suspend(() => {
        batches.push(batch)
        if (landNext) {
          landNext = false
          return Effect.zipRight(log.append(batch), Effect.fail(new StoreFailed({ reason: "test: landed, reported failed" })))
        }
        if (!failNext) return log.append(batch)
        failNext = false
        return Effect.fail(new StoreFailed({ reason: "test: the disk is full" }))
      })
  }))
).pipe(Layer.provide(ClassicLevelLog))

const start = async (dataDir: string, version = 1, failOn?: string) => {
  const settings = await Effect.runPromise(loadSettings({ dataDir }, { host: "127.0.0.1", port: 0 }))
  const runtime = ManagedRuntime.make(writeOnceLayer(keyedTasks(version, failOn), settings, { log: recordingLog, signals: false }))
  const { url } = await runtime.runPromise(HttpServer)
  const keyed = await runtime.runPromise(KeyedViews)
  const notices: Array<ViewUpdate> = []
  await runtime.runPromise(Effect.flatMap(ChangeFeed, (feed) => Effect.forkDaemon(Effect.scoped(Effect.zipRight(
    feed.listen((_changes, views) => notices.push(...views)),
    Effect.never
  )))))
  return {
    url,
    keyed,
    notices,
    entry: (key: string) => runtime.runPromise(Effect.map(keyed.get(NAME, key), (e) => (e === undefined ? undefined : JSON.parse(e.json)))),
    failure: (key: string) => runtime.runPromise(Effect.flip(keyed.get(NAME, key))),
    run: <A, E>(effect: Effect.Effect<A, E>) => runtime.runPromise(effect),
    close: () => runtime.dispose()
  }
}
type Started = Awaited<ReturnType<typeof start>>

const task = async (url: string, owner: string, title: string) => {
  const res = await http(`${url}/api/tasks`, { method: "POST", body: { owner, title, done: false } })
  expect(res.status).toBe(201)
  return res.json.id as string
}

/** The `w!` keys of the view in the store, with their generation. */
const storedKeys = async (dataDir: string) => {
  const db = new ClassicLevel<string, string>(dataDir)
  const keys = await db.keys({ gte: `w!${NAME}!`, lt: `w!${NAME}"` }).all()
  await db.close()
  return keys
}

const dirs: Array<string> = []
afterAll(() => undefined)

describe("keyed views on the embedded store", () => {
  const dataDir = tempDir("wo-keyed-")
  dirs.push(dataDir)
  let server: Started
  let ids: Record<string, string> = {}

  it("folds each change into its key's entry alone, and a batch writes only the keys it changed", async () => {
    server = await start(dataDir)
    const { url } = server
    ids = { a1: await task(url, "ann", "a1"), a2: await task(url, "ann", "a2"), b1: await task(url, "bob", "b1"), c1: await task(url, "carl", "c1") }
    expect(await server.entry("ann")).toEqual({ open: 2, titles: ["a1", "a2"] })
    expect(await server.entry("bob")).toEqual({ open: 1, titles: ["b1"] })
    expect(await server.entry("nobody")).toBeUndefined()
    // evolve renamed its copy of the row: the row served is the one written.
    expect((await http(`${url}/api/tasks/${ids.a1}`)).json.title).toBe("a1")

    batches.length = 0
    const done = await http(`${url}/api/tasks/${ids.b1}`, { method: "PATCH", body: { done: true } })
    expect(done.status).toBe(200)
    // Bob has nothing open: his entry is removed, in the batch of the write, and nothing else is written.
    expect(await server.entry("bob")).toBeUndefined()
    expect(batches.map((b) => (b.viewEntries ?? []).map((e) => [e.key, e.json === undefined]))).toEqual([[["bob", true]]])

    batches.length = 0
    server.notices.length = 0
    await task(url, "ann", "a3")
    expect(batches.map((b) => (b.viewEntries ?? []).map((e) => e.key))).toEqual([["ann"]])
    // One notice, for ann's entry alone.
    expect(server.notices.map((n) => [n.uri, n.key])).toEqual([[`wo://views/${NAME}/ann`, "ann"]])
    // The entry evolve changed in place is what it returned, once: the cache holds the stored text, not its object.
    expect(await server.entry("ann")).toEqual({ open: 3, titles: ["a1", "a2", "a3"] })
    await task(url, "ann", "a4")
    expect(await server.entry("ann")).toEqual({ open: 4, titles: ["a1", "a2", "a3", "a4"] })
    expect(await server.entry("carl")).toEqual({ open: 1, titles: ["c1"] })

    // A write that fails leaves the entries as they were; the next one folds from the stored entry.
    failNext = true
    const lost = await http(`${url}/api/tasks`, { method: "POST", body: { owner: "ann", title: "lost", done: false } })
    expect(lost.status).toBeGreaterThanOrEqual(500)
    expect(await server.entry("ann")).toEqual({ open: 4, titles: ["a1", "a2", "a3", "a4"] })
    const keyOf = await task(url, "carl", "c2")
    expect(await server.entry("carl")).toEqual({ open: 2, titles: ["c1", "c2"] })
    await http(`${url}/api/tasks/${keyOf}`, { method: "DELETE" })
    expect(await server.entry("carl")).toEqual({ open: 1, titles: ["c1"] })

    // A write reported failed that landed after all: its entries landed with it, and are not folded twice.
    landNext = true
    const landed = await http(`${url}/api/tasks`, { method: "POST", body: { owner: "carl", title: "c3", done: false } })
    expect(landed.status).toBeGreaterThanOrEqual(500)
    await task(url, "carl", "c4")
    expect(await server.entry("carl")).toEqual({ open: 3, titles: ["c1", "c3", "c4"] })
    // Back to carl's one task, for the tests below.
    const carls = (await http(`${url}/api/tasks?owner=carl`)).json
    const extra = (carls.items ?? carls.data ?? carls) as Array<{ id: string; title: string }>
    for (const t of extra.filter((t) => t.title !== "c1")) expect((await http(`${url}/api/tasks/${t.id}`, { method: "DELETE" })).status).toBe(200)
    expect(await server.entry("carl")).toEqual({ open: 1, titles: ["c1"] })
  }, 60_000)

  it("lists entries in key order, filtered and by a field, with cursors", async () => {
    const { keyed } = server
    const first = await server.run(keyed.list(NAME, { limit: 1 }))
    expect(first.items.map((e) => e.key)).toEqual(["ann"])
    const second = await server.run(keyed.list(NAME, { limit: 1, after: first.next! }))
    expect(second.items.map((e) => e.key)).toEqual(["carl"])
    expect(second.next).toBeUndefined()
    const filtered = await server.run(keyed.list(NAME, { limit: 10, where: [{ field: "open", op: "range", lower: { value: 2, inclusive: true } }] }))
    expect(filtered.items.map((e) => e.key)).toEqual(["ann"])
    const byOpen = await server.run(keyed.list(NAME, { limit: 1, order: { field: "open", descending: false } }))
    expect(byOpen.items.map((e) => e.key)).toEqual(["carl"])
    const rest = await server.run(keyed.list(NAME, { limit: 1, order: { field: "open", descending: false }, after: byOpen.next! }))
    expect(rest.items.map((e) => e.key)).toEqual(["ann"])
    // A cursor of another order is refused.
    const refused = await server.run(Effect.flip(keyed.list(NAME, { limit: 1, after: first.next! , order: { field: "open", descending: false } })))
    expect(refused._tag).toBe("ValidationFailed")
  })

  it("serves the stored entries after a restart without reading them at start", async () => {
    await server.close()
    // Damage carl's entry: a start that read the entries would refuse it or fold again; this one never reads it.
    const definition = viewDefinition(compileApp(keyedTasks()).pipe((c) => (c._tag === "Right" ? c.right : undefined))!.views.get(NAME)!)
    const carl = `w!${NAME}!${definition}!carl`
    expect(await storedKeys(dataDir)).toEqual([`w!${NAME}!${definition}!ann`, carl])
    const db = new ClassicLevel<string, string>(dataDir)
    await db.put(carl, seal(carl, "not an entry"))
    await db.close()
    server = await start(dataDir)
    expect(server.keyed.recovered).toMatchObject({ loaded: 1, rebuilt: [] })
    expect(server.keyed.status(NAME)).toEqual({ name: NAME, description: "Per owner, their open tasks." })
    expect(await server.entry("ann")).toEqual({ open: 4, titles: ["a1", "a2", "a3", "a4"] })
    expect((await server.failure("carl"))._tag).toMatch(/StoreFailed|DataCorrupt/)
    await server.close()
  }, 60_000)

  it("folds a new declaration in the background while the former one's entries serve, marked stale, then swaps and clears them", async () => {
    // The fold of the new declaration waits at a gate: meanwhile the former entries serve, and writes go on.
    const gated = await startGatedRefold(keyedTasks(2), dataDir)
    try {
      const keyed = await gated.runtime.runPromise(KeyedViews)
      expect(keyed.recovered.rebuilt).toEqual([NAME])
      expect(keyed.status(NAME)?.stale).toMatch(/view open_by_owner is being folded again from the log .*its former declaration's entries serve until then/)
      const stale = await gated.runtime.runPromise(keyed.get(NAME, "ann"))
      expect(JSON.parse(stale!.json)).toEqual({ open: 4, titles: ["a1", "a2", "a3", "a4"] })
      expect(stale!.stale).toMatch(/former declaration/)
      // Marked as a whole view's older value is, on REST and MCP: the former and the next declaration, and the seq
      // the former entries are exact at (the log's head when this server started: nothing was written since).
      const definitionOf = (app: ReturnType<typeof keyedTasks>) => viewDefinition(compileApp(app).pipe((c) => (c._tag === "Right" ? c.right : undefined))!.views.get(NAME)!)
      const head = (await gated.runtime.runPromise(Effect.flatMap(EventLog, (log) => log.head))).lastSeq
      expect(head).toBeGreaterThan(0)
      const mark = { version: definitionOf(keyedTasks()), exactAt: head, nextVersion: definitionOf(keyedTasks(2)) }
      expect(stale!.mark).toEqual(mark)
      const rest = await http(`${gated.url}/api/_views/${NAME}/ann`)
      expect([rest.status, rest.headers.get("wo-view-version"), rest.headers.get("wo-view-exact-at"), rest.headers.get("wo-view-next-version"), rest.headers.get("etag")])
        .toEqual([200, mark.version, String(head), mark.nextVersion, `"${stale!.seq}@${mark.version}"`])
      const read = await modernRequest(gated.url, "resources/read", { uri: `wo://views/${NAME}/ann` }, `wo://views/${NAME}/ann`)
      expect(read.json.result.contents[0]._meta?.["writeonce/view"]).toEqual(mark)
      const tool = await modernCall(gated.url, `view_${NAME}`, { key: "ann" })
      expect([tool.json.result.isError, tool.json.result._meta["writeonce/view"]]).toEqual([undefined, mark])
      // (A page would read carl's entry, damaged above: the former entries are served as they are stored.)
      await task(gated.url, "dan", "d1")
      gated.open()
      for (let i = 0; keyed.status(NAME)?.refolding !== undefined && i < 500; i++) await new Promise((r) => setTimeout(r, 20))
      expect(keyed.status(NAME)).toEqual({ name: NAME, description: "Per owner, their open tasks." })
      const dan = await gated.runtime.runPromise(keyed.get(NAME, "dan"))
      expect(dan === undefined ? undefined : [JSON.parse(dan.json), dan.stale, dan.mark]).toEqual([{ open: 1, titles: ["d1"] }, undefined, undefined])
      // The new declaration's entries carry no mark.
      expect((await http(`${gated.url}/api/_views/${NAME}/dan`)).headers.get("wo-view-version")).toBeNull()
      await http(`${gated.url}/api/tasks/${(await http(`${gated.url}/api/tasks?owner=dan`)).json.items[0].id}`, { method: "DELETE" })
    } finally {
      await gated.close()
    }
    server = await start(dataDir, 2)
    expect(server.keyed.recovered).toMatchObject({ loaded: 1, rebuilt: [] })
    expect(server.keyed.status(NAME)).toEqual({ name: NAME, description: "Per owner, their open tasks." })
    expect(await server.entry("ann")).toEqual({ open: 4, titles: ["a1", "a2", "a3", "a4"] })
    // Folded again from the log: carl's damaged entry is whole again.
    expect(await server.entry("carl")).toEqual({ open: 1, titles: ["c1"] })
    expect(await server.entry("bob")).toBeUndefined()
    await task(server.url, "bob", "b2")
    expect(await server.entry("bob")).toEqual({ open: 1, titles: ["b2"] })
    await server.close()
    const definition = viewDefinition(compileApp(keyedTasks(2)).pipe((c) => (c._tag === "Right" ? c.right : undefined))!.views.get(NAME)!)
    expect(await storedKeys(dataDir)).toEqual(["ann", "bob", "carl"].map((k) => `w!${NAME}!${definition}!${k}`))
  }, 60_000)

  it("keeps the former declaration serving, marked stale, when the new one's fold fails, across starts", async () => {
    const dir = tempDir("wo-keyed-green-")
    const blue = await start(dir)
    await task(blue.url, "ann", "a1")
    await task(blue.url, "bob", "b1")
    await blue.close()
    for (let run = 0; run < 2; run++) {
      const green = await start(dir, 3, "b1")
      try {
        expect(green.keyed.recovered.rebuilt).toEqual([NAME])
        for (let i = 0; green.keyed.status(NAME)?.refolding !== undefined && i < 500; i++) await new Promise((r) => setTimeout(r, 20))
        expect(green.keyed.status(NAME)?.failed).toMatch(/failed at event 2 .*evolve refuses b1/)
        expect(green.keyed.status(NAME)?.stale).toMatch(/the new declaration of view open_by_owner failed .*former declaration's entries serve/)
        const page = await green.run(green.keyed.list(NAME, { limit: 10 }))
        expect(page.items.map((e) => [e.key, JSON.parse(e.json).open])).toEqual([["ann", 1], ["bob", 1]])
        expect(page.stale).toMatch(/former declaration/)
      } finally {
        await green.close()
      }
    }
  }, 60_000)

  it("fails the view alone when a key is not one, and writes go on", async () => {
    const dir = tempDir("wo-keyed-fail-")
    const failing = await start(dir)
    try {
      await task(failing.url, "ann", "a1")
      // A control character is no key: the view fails at that event, the write itself is done.
      await task(failing.url, "bad\u0001owner", "x")
      const failure = await failing.failure("ann")
      expect(failure._tag).toBe("ViewFailed")
      expect((failure as { reason: string }).reason).toMatch(/view open_by_owner failed at event 2 .*holds a control character/)
      expect(failing.keyed.status(NAME)?.failed).toMatch(/failed at event 2/)
      await task(failing.url, "ann", "a2")
      expect((await http(`${failing.url}/api/tasks/3`)).json.title).toBe("a2")
    } finally {
      await failing.close()
    }
    // Stored as failed: the next start folds it again, and fails again at the same event.
    const again = await start(dir)
    try {
      expect(again.keyed.recovered.rebuilt).toEqual([NAME])
      for (let i = 0; again.keyed.status(NAME)?.refolding !== undefined && i < 500; i++) await new Promise((r) => setTimeout(r, 20))
      expect(again.keyed.status(NAME)?.failed).toMatch(/failed at event 2/)
    } finally {
      await again.close()
    }
  }, 60_000)

  it("keeps pages stable under writes between them: each entry that stays put is listed once, in order", async () => {
    const dir = tempDir("wo-keyed-pages-")
    const paging = await start(dir)
    try {
      // 24 owners with 1 to 3 open tasks each.
      for (let i = 0; i < 24; i++) for (let n = 0; n <= i % 3; n++) await task(paging.url, `o${String(i).padStart(2, "0")}`, `t${i}-${n}`)
      for (const order of [undefined, { field: "open", descending: true }] as const) {
        const seen: Array<{ key: string; open: number }> = []
        let after: string | undefined
        let written = 0
        do {
          const page = await paging.run(paging.keyed.list(NAME, { limit: 5, ...(after === undefined ? {} : { after }), ...(order === undefined ? {} : { order }) }))
          for (const e of page.items) seen.push({ key: e.key, open: JSON.parse(e.json).open })
          after = page.next
          // Between pages: new owners sorting before and after the cursor (keys "a…" and "z…").
          await task(paging.url, `a${written}`, "new")
          await task(paging.url, `z${written++}`, "new")
        } while (after !== undefined)
        const original = seen.filter((e) => e.key.startsWith("o"))
        expect(original.map((e) => e.key).sort()).toEqual(Array.from({ length: 24 }, (_, i) => `o${String(i).padStart(2, "0")}`))
        const sorted = [...seen].sort((a, b) => (order === undefined ? 0 : b.open - a.open) || (a.key < b.key ? -1 : 1))
        expect(seen).toEqual(sorted)
      }
    } finally {
      await paging.close()
    }
  }, 120_000)
})
