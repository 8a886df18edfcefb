/**
 * Blue/green refolds of a keyed view on the PostgreSQL store, on the run's shared cluster (test/cluster/pg-cluster.ts),
 * each test in a database of its own. A node started with a changed declaration of `open_by_owner` folds it from the
 * log in the background (held at a gate: testkit/gated-refold.ts) and meanwhile serves the former declaration's
 * entries from the table, frozen at the seq of their snapshot, marked stale: 200, never 503. At the swap the new
 * entries serve, subscribers hear one notice, and the new generation is stored at once. A new fold that fails keeps
 * the former serving, across starts.
 */
import { Effect, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadSettings } from "../../src/support/config.ts"
import { HttpServer } from "../../src/http/server.ts"
import { KeyedViews } from "../../src/projections/views/keyed-views.ts"
import { writeOnceLayer } from "../../src/runtime/runtime.ts"
import { ChangeFeed, type ViewUpdate } from "../../src/subscriptions/change-feed.ts"
import { viewUri } from "../../src/domain/uri.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"
import { keyedTasks } from "../../testkit/keyed-tasks.ts"
import { startGatedRefold } from "../../testkit/gated-refold.ts"
import { http, tempDir } from "../../testkit/server.ts"

warnIfSkipped("the PostgreSQL keyed refold tests")

const NAME = "open_by_owner"
const VIEWS = `/api/_views/${NAME}`
/** Larger than every test's writes: the only snapshots are a node's stop and a refold's swap. */
const SNAPSHOT_EVERY = 10_000

/** Polls a check until it holds (generous: a loaded machine is slow, never wrong). */
const until = async (check: () => Promise<boolean> | boolean) => {
  for (let i = 0; i < 1500 && !(await check()); i++) await new Promise((r) => setTimeout(r, 20))
}

const createTask = async (url: string, owner: string, title: string) => {
  const res = await http(`${url}/api/tasks`, { method: "POST", body: { owner, title, done: false } })
  expect(res.status, res.text).toBe(201)
}

/** The view's notices the node publishes, from now on. */
const listen = async (runtime: ManagedRuntime.ManagedRuntime<ChangeFeed, unknown>) => {
  const notices: Array<ViewUpdate> = []
  await runtime.runPromise(Effect.flatMap(ChangeFeed, (feed) => Effect.forkDaemon(Effect.scoped(Effect.zipRight(
    feed.listen((_changes, views) => notices.push(...views)),
    Effect.never
  )))))
  return notices
}

describe.skipIf(!haveBinaries)("a keyed view folded again on the PostgreSQL store", () => {
  let cluster: PgCluster
  beforeAll(async () => {
    cluster = await sharedCluster()
  }, 120_000)
  afterAll(() => cluster?.stop())

  const recordOf = async (db: string) => {
    const [row] = await cluster.sql(db, "select record::json->>'definition' as definition, record::json->>'failed' as failed, at::int as at from writeonce.views where name = $1", [NAME])
    return row as { definition: string; failed: string | null; at: number }
  }

  /** A node of the first declaration writes ann's two tasks, bob's and carl's, and stops: its snapshot stores them. */
  const blue = async (db: string) => {
    const store = await cluster.createDatabase(db)
    const settings = await Effect.runPromise(loadSettings({ dataDir: tempDir("wo-pg-blue-") }, { host: "127.0.0.1", port: 0, store, viewSnapshotEvery: SNAPSHOT_EVERY }))
    const runtime = ManagedRuntime.make(writeOnceLayer(keyedTasks(1), settings, { logger: false, signals: false }))
    const { url } = await runtime.runPromise(HttpServer)
    for (const [owner, title] of [["ann", "a1"], ["ann", "a2"], ["bob", "b1"], ["carl", "c1"]]) await createTask(url, owner, title)
    await runtime.dispose()
    const record = await recordOf(db)
    expect(record.at).toBe(4)
    return { store, record }
  }

  it("serves the former declaration's entries while the new one is folded, then swaps with one notice and stores the new entries", async () => {
    const db = "keyed_refold_swap"
    const { store, record: former } = await blue(db)
    const green = await startGatedRefold(keyedTasks(2), tempDir("wo-pg-green-"), { store, viewSnapshotEvery: SNAPSHOT_EVERY })
    try {
      const keyed = await green.runtime.runPromise(KeyedViews)
      const notices = await listen(green.runtime)
      expect(keyed.recovered.rebuilt).toEqual([NAME])
      expect(keyed.status(NAME)?.refolding).toBeDefined()
      expect(keyed.status(NAME)?.stale).toMatch(/view open_by_owner is being folded again from the log .*its former declaration's entries serve until then/)

      // The former entries, from the table, as they were at its snapshot (seq 4): an entry, a page, a missing key.
      const ann = await http(`${green.url}${VIEWS}/ann`)
      expect(ann.status, ann.text).toBe(200)
      expect(ann.json).toEqual({ name: NAME, key: "ann", seq: 2, value: { open: 2, titles: ["a1", "a2"] } })
      expect((await green.runtime.runPromise(keyed.get(NAME, "ann")))?.stale).toMatch(/former declaration/)
      // Marked as on the embedded store: the former entries are exact at the seq of their snapshot (4).
      expect([ann.headers.get("wo-view-exact-at"), ann.headers.get("wo-view-version") !== null, ann.headers.get("wo-view-version") !== ann.headers.get("wo-view-next-version")]).toEqual(["4", true, true])
      const page = await http(`${green.url}${VIEWS}?limit=2`)
      expect(page.status, page.text).toBe(200)
      expect([page.headers.get("wo-view-exact-at"), page.headers.get("wo-view-version")]).toEqual(["4", ann.headers.get("wo-view-version")])
      expect(page.json.items.map((e: { key: string; value: { open: number } }) => [e.key, e.value.open])).toEqual([["ann", 2], ["bob", 1]])
      const rest = await http(`${green.url}${VIEWS}?limit=2&cursor=${encodeURIComponent(page.json.nextCursor)}`)
      expect(rest.json.items.map((e: { key: string }) => e.key)).toEqual(["carl"])
      expect((await green.runtime.runPromise(keyed.list(NAME, { limit: 10 }))).stale).toMatch(/former declaration/)

      // Writes go on; the former entries stay frozen at their snapshot (dan's task is not in them).
      await createTask(green.url, "dan", "d1")
      await createTask(green.url, "ann", "a3")
      expect((await http(`${green.url}${VIEWS}/dan`)).status).toBe(404)
      expect((await http(`${green.url}${VIEWS}/ann`)).json.value).toEqual({ open: 2, titles: ["a1", "a2"] })
      expect(notices.filter((n) => n.key === undefined)).toEqual([])

      green.open()
      await until(() => keyed.status(NAME)?.refolding === undefined)
      expect(keyed.status(NAME)).toEqual({ name: NAME, description: "Per owner, their open tasks." })
      const dan = await http(`${green.url}${VIEWS}/dan`)
      expect(dan.status, dan.text).toBe(200)
      expect(dan.json.value).toEqual({ open: 1, titles: ["d1"] })
      expect((await http(`${green.url}${VIEWS}/ann`)).json.value).toEqual({ open: 3, titles: ["a1", "a2", "a3"] })
      expect((await green.runtime.runPromise(keyed.get(NAME, "ann")))?.stale).toBeUndefined()
      // One notice of the whole view, at the swap.
      expect(notices.filter((n) => n.key === undefined)).toEqual([{ name: NAME, uri: viewUri(NAME), seq: 6 }])

      // Stored at the swap, not at the next interval: the record names the new declaration, exact at the head.
      await until(async () => (await recordOf(db)).definition !== former.definition)
      const swapped = await recordOf(db)
      expect(swapped).toMatchObject({ failed: null, at: 6 })
      const stored = await cluster.sql(db, "select key from writeonce.view_entries where name = $1 and definition = $2 and entry is not null order by key", [NAME, swapped.definition])
      expect(stored.map((r) => r.key)).toEqual(["ann", "bob", "carl", "dan"])
    } finally {
      await green.close()
    }
  }, 180_000)

  it("keeps the former declaration serving when the new one's fold fails, across starts", async () => {
    const db = "keyed_refold_fails"
    const { store, record: former } = await blue(db)
    for (let run = 0; run < 2; run++) {
      const green = await startGatedRefold(keyedTasks(3, "b1"), tempDir("wo-pg-failing-"), { store, viewSnapshotEvery: SNAPSHOT_EVERY })
      try {
        const keyed = await green.runtime.runPromise(KeyedViews)
        expect(keyed.recovered.rebuilt).toEqual([NAME])
        expect((await http(`${green.url}${VIEWS}/bob`)).status).toBe(200)
        green.open()
        await until(() => keyed.status(NAME)?.refolding === undefined)
        expect(keyed.status(NAME)?.failed).toMatch(/failed at event 3 .*evolve refuses b1/)
        expect(keyed.status(NAME)?.stale).toMatch(/the new declaration of view open_by_owner failed .*former declaration's entries serve/)
        const page = await http(`${green.url}${VIEWS}?limit=10`)
        expect(page.status, page.text).toBe(200)
        expect(page.json.items.map((e: { key: string; value: { open: number } }) => [e.key, e.value.open])).toEqual([["ann", 2], ["bob", 1], ["carl", 1]])
        expect((await http(`${green.url}${VIEWS}/carl`)).json.value).toEqual({ open: 1, titles: ["c1"] })
        // A write: the node's stop takes a snapshot, which leaves this view's record alone.
        await createTask(green.url, `eve${run}`, "e1")
      } finally {
        await green.close()
      }
      // The former's record stays, stop snapshot included: the next start folds the new declaration again beside it.
      expect(await recordOf(db)).toEqual(former)
    }
  }, 180_000)
})
