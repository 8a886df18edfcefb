/**
 * Keyed views' entries stored in the PostgreSQL store (`view_entries`, keyed-pg-store.ts), on the run's shared
 * cluster (test/cluster/pg-cluster.ts), each test in a database of its own:
 *  - a node starting on a store whose entries another node stored folds only the events after their snapshot (a
 *    count, not a time) and serves every entry as a fold of the log gives it, read from the table;
 *  - two `wo` nodes writing alternately serve the same pages (cursor, limit, a filter) with entries both in memory
 *    and in the table, and a node killed with SIGKILL and started again serves the entries a fold of the log gives
 *    (the tail after the last snapshot is folded again).
 * The expected entries come from a model of the view's fold over what the test wrote.
 */
import * as path from "node:path"
import { Effect, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadSettings } from "../../src/support/config.ts"
import { HttpServer } from "../../src/http/server.ts"
import { KeyedViews } from "../../src/projections/views/keyed-views.ts"
import { writeOnceLayer } from "../../src/runtime/runtime.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"
import { keyedTasks } from "../../testkit/keyed-tasks.ts"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { http, ROOT, tempDir } from "../../testkit/server.ts"
import { runWo, spawnWo, type Spawned } from "../../testkit/spawn.ts"
import { checksum } from "../../src/log/postgres/records.ts"

warnIfSkipped("the PostgreSQL keyed entries tests")

const NAME = "open_by_owner"
const VIEWS = `/api/_views/${NAME}`

/** `open_by_owner` folded by hand: per owner, the open tasks' count and titles; an owner with none has no entry. */
const makeModel = () => {
  const owners = new Map<string, { open: number; titles: Array<string> }>()
  return {
    open: (owner: string, title: string) => {
      const e = owners.get(owner) ?? { open: 0, titles: [] }
      owners.set(owner, { open: e.open + 1, titles: [...e.titles, title] })
    },
    close: (owner: string, title: string) => {
      const e = owners.get(owner)!
      const titles = e.titles.filter((t) => t !== title)
      if (titles.length === 0) owners.delete(owner)
      else owners.set(owner, { open: e.open - 1, titles })
    },
    /** The entries in key order, as the list serves them (without seq). */
    entries: (keep: (e: { open: number }) => boolean = () => true) =>
      [...owners.entries()].filter(([, v]) => keep(v)).sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, value]) => ({ key, value }))
  }
}

type Served = { key: string; seq: number; value: { open: number; titles: Array<string> } }

/** Every page of the list at `url` (following its cursors), each page's items as served. */
const pages = async (url: string, query: string, limit: number) => {
  const out: Array<Array<Served>> = []
  let cursor: string | undefined
  do {
    const res = await http(`${url}${VIEWS}?limit=${limit}${query}${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`)
    expect(res.status, res.text).toBe(200)
    out.push(res.json.items)
    cursor = res.json.nextCursor
  } while (cursor !== undefined)
  return out
}
const withoutSeq = (items: ReadonlyArray<Served>) => items.map(({ key, value }) => ({ key, value }))

/** Polls an async check until it holds (generous: a loaded machine is slow, never wrong). */
const until = async (check: () => Promise<boolean> | boolean) => {
  for (let i = 0; i < 1500 && !(await check()); i++) await new Promise((r) => setTimeout(r, 20))
}

/** Runs `work` over `items`, `width` at a time. */
const inParallel = async <A>(items: ReadonlyArray<A>, width: number, work: (a: A) => Promise<void>) => {
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await work(items[next++])
  }))
}

const createTask = async (url: string, owner: string, title: string) => {
  const res = await http(`${url}/api/tasks`, { method: "POST", body: { owner, title, done: false } })
  expect(res.status, res.text).toBe(201)
  return res.json.id as string
}

describe.skipIf(!haveBinaries)("keyed views' entries in the PostgreSQL store", () => {
  let cluster: PgCluster
  beforeAll(async () => {
    cluster = await sharedCluster()
  }, 120_000)
  afterAll(() => cluster?.stop())

  const definitionOf = async (db: string) => (await cluster.sql(db, "select record::json->>'definition' as d from writeonce.views where name = $1", [NAME]))[0].d as string
  const snapshotOf = async (db: string) => {
    const [row] = await cluster.sql(db, `select at::text as at from writeonce.views where name = $1`, [NAME])
    const [head] = await cluster.sql(db, "select seq::text as seq from writeonce.log_head")
    return { at: Number(row?.at ?? 0), head: Number(head.seq) }
  }

  it("a node starts from the entries another node stored, folds only the events after them, and serves every entry from the table", async () => {
    const db = "keyed_entries_start"
    const store = await cluster.createDatabase(db)
    const startNode = async () => {
      const settings = await Effect.runPromise(loadSettings({ dataDir: tempDir("wo-pg-entries-") }, { host: "127.0.0.1", port: 0, store, viewSnapshotEvery: 100 }))
      const runtime = ManagedRuntime.make(writeOnceLayer(keyedTasks(), settings, { logger: false, signals: false }))
      const { url } = await runtime.runPromise(HttpServer)
      const keyed = await runtime.runPromise(KeyedViews)
      return { url, keyed, stop: () => runtime.dispose() }
    }
    const KEYS = 1500
    const model = makeModel()
    const a = await startNode()
    let b: Awaited<ReturnType<typeof startNode>> | undefined
    try {
      const owners = Array.from({ length: KEYS }, (_, i) => `m${String(i).padStart(5, "0")}`)
      await inParallel(owners, 16, async (owner) => {
        await createTask(a.url, owner, `first of ${owner}`)
        model.open(owner, `first of ${owner}`)
      })
      // A tail: a second task for some owners, after which node A keeps running (its last changes only in memory).
      for (const owner of owners.slice(0, 30)) {
        await createTask(a.url, owner, `second of ${owner}`)
        model.open(owner, `second of ${owner}`)
      }
      // A's snapshots come every 100 events it applies: the last one is less than 100 events behind the head.
      await until(async () => {
        const s = await snapshotOf(db)
        return s.at > 0 && s.head - s.at < 100
      })
      const { at, head } = await snapshotOf(db)
      expect(head).toBe(KEYS + 30)
      expect(at).toBeGreaterThan(0)
      const stored = await cluster.sql(db, "select count(distinct key)::int as keys from writeonce.view_entries where name = $1 and at <= $2", [NAME, at])
      expect(stored[0].keys).toBeGreaterThan(KEYS - 100)

      b = await startNode()
      // Served from the stored entries: no fold of the whole log, only the events after the snapshot.
      expect(b.keyed.recovered.rebuilt).toEqual([])
      expect(b.keyed.recovered.tailEvents).toBe(head - at)
      expect(b.keyed.status(NAME)).toEqual({ name: NAME, description: "Per owner, their open tasks." })

      const onB = (await pages(b.url, "", 500)).flat()
      expect(withoutSeq(onB)).toEqual(model.entries())
      expect(await pages(a.url, "", 500)).toEqual(await pages(b.url, "", 500))
      for (const owner of [owners[0], owners[29], owners[30], owners[KEYS - 1]]) {
        const res = await http(`${b.url}${VIEWS}/${owner}`)
        expect(res.status, res.text).toBe(200)
        expect(res.json.value).toEqual(model.entries().find((e) => e.key === owner)!.value)
      }
      expect((await http(`${b.url}${VIEWS}/nobody`)).status).toBe(404)

      // Node A's next writes, to owners whose entries B has not read: B's tailer reads them ahead of its synchronous
      // fold, in one statement per chunk, never one by one while it folds.
      for (const owner of owners.slice(1000, 1040)) {
        await createTask(a.url, owner, `third of ${owner}`)
        model.open(owner, `third of ${owner}`)
      }
      const last = owners[1039]
      await until(async () => (await http(`${b!.url}${VIEWS}/${last}`)).json?.value?.open === 2)
      expect(withoutSeq((await pages(b.url, "", 500)).flat())).toEqual(model.entries())
      expect(b.keyed.syncReads?.()).toBe(0)
    } finally {
      await b?.stop()
      await a.stop()
    }
  }, 300_000)

  describe("two wo nodes", () => {
    const db = "keyed_entries_nodes"
    const appDir = writeAppDir(`import { keyedTasks } from ${JSON.stringify(path.join(ROOT, "testkit/keyed-tasks.ts"))}\nexport default keyedTasks()\n`)
    let store = ""
    const nodes: Array<Spawned> = []
    const start = () =>
      spawnWo(["run", appDir, "--listen", "127.0.0.1:0", "--data", tempDir("wo-entries-node-"), "--store", store], {
        readyTimeoutMs: 150_000,
        env: { WO_VIEW_SNAPSHOT_EVERY: "20" }
      })
    beforeAll(async () => {
      store = await cluster.createDatabase(db)
      nodes.push(await start(), await start())
    }, 300_000)
    afterAll(async () => {
      await Promise.all(nodes.map((n) => n.stop("SIGKILL").catch(() => undefined)))
    })

    it("serve the same pages while writing alternately, and a node killed with SIGKILL folds the tail after the last snapshot again", async () => {
      const model = makeModel()
      const open: Array<{ id: string; owner: string; title: string }> = []
      // 73 writes, alternately on each node: creates for 12 owners, every fifth write closing an open task (an
      // owner whose last task closes loses its entry: a removal laid over the table's entry).
      for (let i = 0; i < 73; i++) {
        const url = nodes[i % 2].loopbackUrl
        if (i % 5 === 4) {
          const task = open.splice(i % open.length, 1)[0]
          const res = await http(`${url}/api/tasks/${task.id}`, { method: "PATCH", body: { done: true } })
          expect(res.status, res.text).toBe(200)
          model.close(task.owner, task.title)
        } else {
          const owner = `o${String(i % 12).padStart(2, "0")}`
          const title = `t${i}`
          open.push({ id: await createTask(url, owner, title), owner, title })
          model.open(owner, title)
        }
      }
      const expected = model.entries()
      for (const node of nodes) await until(async () => JSON.stringify(withoutSeq((await pages(node.loopbackUrl, "", 100)).flat())) === JSON.stringify(expected))
      const { at, head } = await snapshotOf(db)
      expect(head).toBe(73)
      // Entries both in the table (stored at the last snapshot) and in memory (changed since).
      expect(at).toBeGreaterThan(0)
      expect(at).toBeLessThan(head)
      const [a, b] = nodes.map((n) => n.loopbackUrl)
      for (const [query, limit] of [["", 5], ["", 3], ["&open[gte]=2", 2]] as const) {
        const onA = await pages(a, query, limit)
        expect(onA).toEqual(await pages(b, query, limit))
        expect(withoutSeq(onA.flat())).toEqual(model.entries((e) => query === "" || e.open >= 2))
        expect(onA.slice(0, -1).every((p) => p.length === limit)).toBe(true)
      }

      // Both killed: the events after the last snapshot are nowhere but in the log.
      await Promise.all(nodes.splice(0).map((n) => n.stop("SIGKILL")))
      const after = await snapshotOf(db)
      expect(after.head).toBe(73)
      expect(after.at).toBeLessThan(73)
      const again = await start()
      nodes.push(again)
      expect(again.output()).toContain(`served from their entries stored at seq ${after.at}; ${73 - after.at} events after it folded`)
      const served = (await pages(again.loopbackUrl, "", 4)).flat()
      expect(withoutSeq(served)).toEqual(expected)
      for (const e of expected) {
        const res = await http(`${again.loopbackUrl}${VIEWS}/${e.key}`)
        expect(res.json.value).toEqual(e.value)
      }

      // wo verify compares the stored entries with a fold of the log up to their snapshot seq, key by key.
      const { at: stored } = await snapshotOf(db)
      const verified = await runWo(["verify", "--app", appDir, "--store", store], { timeoutMs: 120_000 })
      expect(verified.code, verified.stdout + verified.stderr).toBe(0)
      const [victim] = await cluster.sql(db, "select key, at::int as at, entry from writeonce.view_entries where name = $1 and at <= $2 and entry is not null order by at desc, key limit 1", [NAME, stored])
      const forged = victim.entry.replace(/"open":(\d+)/, '"open":99')
      const sum = checksum(`w!${NAME}!${await definitionOf(db)}!${victim.key}@${victim.at}`, forged)
      await cluster.sql(db, "update writeonce.view_entries set entry = $1, checksum = $2 where name = $3 and key = $4 and at = $5", [forged, sum, NAME, victim.key, victim.at])
      const damaged = await runWo(["verify", "--app", appDir, "--store", store], { timeoutMs: 120_000 })
      expect(damaged.code).toBe(1)
      expect(damaged.stderr).toContain(`view ${NAME} key ${victim.key}: stored {"open":99`)
    }, 300_000)
  })
})
