/**
 * Keyed views on a PostgreSQL store (a real cluster, test/cluster/pg-cluster.ts): a node folds each commit into
 * the entries, including another node's (the tailer), and stores them as it stops; a node starting later serves
 * those (postgres-keyed-entries.test.ts covers the snapshots further). Real runtimes in this process.
 */
import { Effect, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadSettings } from "../../src/support/config.ts"
import { HttpServer } from "../../src/http/server.ts"
import { KeyedViews } from "../../src/projections/views/keyed-views.ts"
import { writeOnceLayer } from "../../src/runtime/runtime.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"
import { keyedTasks } from "../../testkit/keyed-tasks.ts"
import { http, tempDir } from "../../testkit/server.ts"

/** Polls an async check until it holds (generous: a loaded machine is slow, never wrong). */
const until = async (check: () => Promise<boolean> | boolean) => {
  for (let i = 0; i < 1500 && !(await check()); i++) await new Promise((r) => setTimeout(r, 20))
}

warnIfSkipped("the PostgreSQL keyed views tests")

const NAME = "open_by_owner"

const startNode = async (store: string) => {
  const settings = await Effect.runPromise(loadSettings({ dataDir: tempDir("wo-pg-keyed-") }, { host: "127.0.0.1", port: 0, store }))
  const runtime = ManagedRuntime.make(writeOnceLayer(keyedTasks(), settings, { logger: false, signals: false }))
  const { url } = await runtime.runPromise(HttpServer)
  const keyed = await runtime.runPromise(KeyedViews)
  const entry = (key: string) => runtime.runPromise(Effect.map(keyed.get(NAME, key), (e) => (e === undefined ? undefined : JSON.parse(e.json))))
  return { url, keyed, entry, stop: () => runtime.dispose() }
}

const task = async (url: string, owner: string, title: string) => {
  const res = await http(`${url}/api/tasks`, { method: "POST", body: { owner, title, done: false } })
  expect(res.status, res.text).toBe(201)
}

describe.skipIf(!haveBinaries)("keyed views on a PostgreSQL store", () => {
  let cluster: PgCluster
  beforeAll(async () => {
    cluster = await sharedCluster()
  }, 120_000)
  afterAll(() => cluster?.stop())

  it("folds every node's commits into the entries, and a node started later serves the entries they stored", async () => {
    const store = await cluster.createDatabase("keyed_views")
    const a = await startNode(store)
    const b = await startNode(store)
    try {
      expect(a.keyed.recovered.rebuilt).toEqual([NAME])
      await task(a.url, "ann", "a1")
      await task(b.url, "ann", "a2")
      await task(b.url, "bob", "b1")
      // Each node's own commit is read-your-writes there; the other's arrives through its tailer.
      expect(await b.entry("ann")).toEqual({ open: 2, titles: ["a1", "a2"] })
      await until(async () => (await a.entry("bob")) !== undefined)
      expect(await a.entry("ann")).toEqual({ open: 2, titles: ["a1", "a2"] })
      expect(await a.entry("bob")).toEqual({ open: 1, titles: ["b1"] })
    } finally {
      await a.stop()
      await b.stop()
    }
    // The nodes stored their entries as they stopped: a node started later serves them, with nothing to fold.
    const c = await startNode(store)
    try {
      expect(c.keyed.recovered).toMatchObject({ rebuilt: [], tailEvents: 0 })
      expect(c.keyed.status(NAME)?.refolding).toBeUndefined()
      expect(c.keyed.status(NAME)?.failed).toBeUndefined()
      expect(await c.entry("ann")).toEqual({ open: 2, titles: ["a1", "a2"] })
      expect(await c.entry("bob")).toEqual({ open: 1, titles: ["b1"] })
    } finally {
      await c.stop()
    }
  }, 180_000)
})
