/**
 * Views on a PostgreSQL store, on a real 3-server cluster (test/cluster/pg-cluster.ts): a node stores its views as a
 * snapshot exact at the seq it applied (every WO_VIEW_SNAPSHOT_EVERY events, and at shutdown), and a node starting later loads it and folds only the
 * events after it, whichever node wrote them; a changed declaration and a corrupt snapshot are folded again from
 * the whole log in the background, the corrupt one never served (the changed one's older value is, marked stale). Counts of events read, no timing. Real runtimes in this process
 * (the same layer `wo run --store` builds), each serving HTTP on port 0.
 */
import { Effect, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadSettings, type SettingsInput } from "../../src/support/config.ts"
import { HttpServer } from "../../src/http/server.ts"
import { Views, type ViewsRecovery } from "../../src/projections/views/views.ts"
import { writeOnceLayer } from "../../src/runtime/runtime.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"
import { apps, http, tempDir } from "../../testkit/server.ts"
import { blogCountingCreates } from "../../testkit/redeclared-blog.ts"

warnIfSkipped("the PostgreSQL views tests")

const article = (title: string, status: "draft" | "published" = "draft") => ({ title, body: "text", status, tags: [], author: { name: "Ann" } })

/** The blog's view, declared again: it also counts every article ever created. */
const redeclared = blogCountingCreates("created")

/** A node on the store, as `wo run --store` builds it, serving on port 0. */
const startNode = async (store: string, app = apps.blog, overrides: SettingsInput = {}) => {
  const settings = await Effect.runPromise(loadSettings({ dataDir: tempDir("wo-pg-views-") }, { host: "127.0.0.1", port: 0, store, ...overrides }))
  const runtime = ManagedRuntime.make(writeOnceLayer(app, settings, { logger: false, signals: false }))
  const { url } = await runtime.runPromise(HttpServer)
  const recovered: ViewsRecovery = runtime.runSync(Effect.map(Views, (v) => v.recovered))
  return { url, recovered, stop: () => runtime.dispose() }
}

/**
 * The view's current value once served (503 ViewRefolding while it is folded again, or, when its declaration
 * changed, the older value marked stale by WO-View-Exact-At; never another value meanwhile).
 */
const served = async (url: string) => {
  for (let polls = 0; ; polls++) {
    const res = await http(`${url}/api/_views/articles_by_status`)
    if ((res.status === 200 && res.headers.get("wo-view-exact-at") === null) || polls >= 500) {
      expect(res.status, res.text).toBe(200)
      return res.json.value as Record<string, number>
    }
    if (res.status !== 200) {
      expect(res.status, res.text).toBe(503)
      expect(res.json.error).toBe("ViewRefolding")
    }
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe.skipIf(!haveBinaries)("views on a PostgreSQL store", () => {
  let cluster: PgCluster
  beforeAll(async () => {
    cluster = await sharedCluster()
  }, 120_000)
  afterAll(() => cluster?.stop())

  it("a node starts from the snapshot another node stored and folds only the events after it; a corrupt snapshot or a changed declaration is folded again, the corrupt one never served", async () => {
    const store = await cluster.createDatabase("views_snapshot")
    const headOf = async () => Number((await cluster.sql("views_snapshot", "select seq from writeonce.log_head"))[0].seq)

    // Node A writes 30 articles (10 published) and stops: it stores its views at the seq it applied.
    const a = await startNode(store)
    const ids: Array<string> = []
    for (let i = 0; i < 30; i++) ids.push((await http(`${a.url}/api/articles`, { method: "POST", body: article(`a${i}`, i % 3 === 0 ? "published" : "draft") })).json.id)
    expect(await served(a.url)).toEqual({ draft: 20, published: 10 })
    await a.stop()
    const first = await headOf()
    expect(first).toBe(30)
    const stored = await cluster.sql("views_snapshot", "select name, at::text as at from writeonce.views")
    expect(stored).toEqual([{ name: "articles_by_status", at: "30" }])

    // Node B loads it: nothing to fold. It writes 20 more events, 10 of them updates of A's articles (the tail's
    // rows before them are rebuilt from their own events), and keeps running: its snapshot is not stored yet.
    const b = await startNode(store)
    expect(b.recovered).toMatchObject({ loaded: 1, tailEvents: 0, rebuilt: [] })
    for (let i = 0; i < 10; i++) await http(`${b.url}/api/articles/${ids[i * 3 + 1]}`, { method: "PATCH", body: { status: "published" } })
    for (let i = 0; i < 10; i++) await http(`${b.url}/api/articles`, { method: "POST", body: article(`b${i}`) })
    const expected = { draft: 20, published: 20 }
    expect(await served(b.url)).toEqual(expected)
    expect(await headOf()).toBe(50)

    // Node C starts while B runs: A's snapshot at 30, then only the 20 events B wrote.
    const c = await startNode(store)
    expect(c.recovered).toMatchObject({ loaded: 1, tailEvents: 20, rebuilt: [] })
    expect(await served(c.url)).toEqual(expected)
    // It stored what it folded at once: the next start folds nothing.
    expect(await cluster.sql("views_snapshot", "select at::text as at from writeonce.views")).toEqual([{ at: "50" }])
    await c.stop()
    await b.stop()

    // A corrupt snapshot (its checksum flipped, then its bytes changed under a good-looking one) is folded again.
    await cluster.sql("views_snapshot", "update writeonce.views set checksum = '00000000'")
    const d = await startNode(store)
    expect(d.recovered).toMatchObject({ loaded: 0, rebuilt: ["articles_by_status"] })
    expect(await served(d.url)).toEqual(expected)
    await d.stop()
    const [row] = await cluster.sql("views_snapshot", "select record from writeonce.views")
    expect(JSON.parse(row.record)).toMatchObject({ at: 50, value: expected })
    await cluster.sql("views_snapshot", `update writeonce.views set record = replace(record, '"published":20', '"published":99')`)
    const e = await startNode(store)
    expect(e.recovered).toMatchObject({ loaded: 0, rebuilt: ["articles_by_status"] })
    expect(await served(e.url)).toEqual(expected)
    await e.stop()

    // A changed declaration: folded again from the whole log, in the background (its older value marked stale meanwhile), then served.
    const f = await startNode(store, redeclared)
    expect(f.recovered).toMatchObject({ loaded: 0, tailEvents: 0, rebuilt: ["articles_by_status"] })
    expect(await served(f.url)).toEqual({ ...expected, created: 40 })
    await f.stop()
    // And stored: the next node of that declaration loads it.
    const g = await startNode(store, redeclared)
    expect(g.recovered).toMatchObject({ loaded: 1, tailEvents: 0, rebuilt: [] })
    expect(await served(g.url)).toEqual({ ...expected, created: 40 })
    await g.stop()
  }, 120_000)

  it("a running node stores its views every WO_VIEW_SNAPSHOT_EVERY events it applies, with no shutdown; a node starting meanwhile folds only the events after the last", async () => {
    const store = await cluster.createDatabase("views_every")
    const snapshots = () => cluster.sql("views_every", "select at::text as at, record from writeonce.views")
    /** The stored snapshot once it is at `at` (stored in the background, after the write that reached it). */
    const storedAt = async (at: number) => {
      for (let polls = 0; polls < 500; polls++) {
        const rows = await snapshots()
        if (rows.length === 1 && Number(rows[0].at) >= at) return rows
        await new Promise((r) => setTimeout(r, 20))
      }
      return snapshots()
    }
    const a = await startNode(store, apps.blog, { viewSnapshotEvery: 10 })
    const write = async (count: number) => {
      for (let i = 0; i < count; i++) expect((await http(`${a.url}/api/articles`, { method: "POST", body: article(`n${i}`) })).status).toBe(201)
    }
    try {
      await write(9)
      // Nine events: below the interval, nothing stored yet (writes never store a PostgreSQL node's views).
      expect(await snapshots()).toEqual([])
      await write(1)
      const [tenth] = await storedAt(10)
      expect(tenth.at).toBe("10")
      expect(JSON.parse(tenth.record)).toMatchObject({ at: 10, value: { draft: 10, published: 0 } })
      await write(9)
      expect((await snapshots()).map((r) => r.at)).toEqual(["10"])
      await write(1)
      expect((await storedAt(20)).map((r) => r.at)).toEqual(["20"])
      await write(3)
      // A node starting now loads the snapshot at 20 and folds only the three events after it.
      const b = await startNode(store)
      expect(b.recovered).toMatchObject({ loaded: 1, tailEvents: 3, rebuilt: [] })
      expect(await served(b.url)).toEqual({ draft: 23, published: 0 })
      await b.stop()
    } finally {
      await a.stop()
    }
  }, 120_000)
})
