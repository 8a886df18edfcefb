/**
 * The `view_entries` table as nodes write and read it (log/postgres/view-entries.ts), on the run's shared cluster:
 * a read at a node's own snapshot seq answers the version exact there, never a newer one another node stored
 * further on; a removal hides older versions; superseded versions are pruned; a damaged version is a StoreError
 * naming it, on the asynchronous and the synchronous reads alike.
 */
import { Effect, Either, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EventLog } from "../../src/log/event-log.ts"
import { postgresLogLayer } from "../../src/log/postgres/postgres-log.ts"
import { viewEntryJson } from "../../src/log/view-entry-record.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the PostgreSQL view entries tests")

const entry = (key: string, seq: number, open: number) => ({ name: "v", definition: "d1", key, text: viewEntryJson(seq, JSON.stringify({ open })) })
const removed = (key: string) => ({ name: "v", definition: "d1", key, text: undefined })
const record = { name: "v", json: '{"definition":"d1","seq":0,"keyed":true}' }

describe.skipIf(!haveBinaries)("keyed views' entries in the PostgreSQL store", () => {
  let cluster: PgCluster
  beforeAll(async () => {
    cluster = await sharedCluster()
  }, 120_000)
  afterAll(() => cluster?.stop())

  it("answers each key's latest version at or before the reader's snapshot, prunes superseded versions, and refuses a damaged one", async () => {
    const db = "view_entries_versions"
    const store = await cluster.createDatabase(db)
    const rt = ManagedRuntime.make(postgresLogLayer(store))
    try {
      const entries = (await rt.runPromise(EventLog)).viewEntries!
      const run = <A, E>(e: Effect.Effect<A, E>) => rt.runPromise(e)
      // Node A's snapshot at 10, then node B's at 30 (it folded further): ann changed at 25, bob removed at 28.
      await run(entries.store([entry("ann", 5, 1), entry("bob", 7, 1), entry("cy", 9, 1)], [record], 10, 0))
      await run(entries.store([entry("ann", 25, 2), removed("bob")], [record], 30, 0))
      expect(await run(entries.watermarks)).toEqual(new Map([["v", 30]]))

      // A reader whose own last snapshot is 10 (it has not folded seq 25 yet) gets the versions exact at 10.
      expect(await run(entries.read("v", "d1", ["ann", "bob", "cy", "dan"], 10))).toEqual(new Map([
        ["ann", viewEntryJson(5, '{"open":1}')],
        ["bob", viewEntryJson(7, '{"open":1}')],
        ["cy", viewEntryJson(9, '{"open":1}')]
      ]))
      expect(entries.readNow("v", "d1", "ann", 10)).toBe(viewEntryJson(5, '{"open":1}'))
      // At 30: ann's new version, bob's removal (null), cy unchanged.
      expect(await run(entries.read("v", "d1", ["ann", "bob", "cy"], 30))).toEqual(new Map([
        ["ann", viewEntryJson(25, '{"open":2}')],
        ["bob", null],
        ["cy", viewEntryJson(9, '{"open":1}')]
      ]))
      expect(entries.readNow("v", "d1", "bob", 30)).toBeNull()
      expect(entries.readNow("v", "d1", "dan", 30)).toBeUndefined()
      expect(await run(entries.range("v", "d1", undefined, 10, 30))).toEqual([
        { key: "ann", text: viewEntryJson(25, '{"open":2}') },
        { key: "bob", text: null },
        { key: "cy", text: viewEntryJson(9, '{"open":1}') }
      ])
      expect(await run(entries.range("v", "d1", "ann", 1, 10))).toEqual([{ key: "bob", text: viewEntryJson(7, '{"open":1}') }])
      // An older snapshot arriving late adds its versions but never moves the record back.
      await run(entries.store([entry("ann", 12, 3)], [record], 20, 0))
      expect(await run(entries.watermarks)).toEqual(new Map([["v", 30]]))
      expect(await run(entries.read("v", "d1", ["ann"], 22))).toEqual(new Map([["ann", viewEntryJson(12, '{"open":3}')]]))

      // A snapshot at 50 prunes, for the keys it writes, the versions a version at or before 30 supersedes.
      await run(entries.store([entry("ann", 40, 4), entry("bob", 45, 1)], [record], 50, 30))
      const versions = await cluster.sql(db, "select key, at::int as at from writeonce.view_entries order by key, at")
      expect(versions).toEqual([
        { key: "ann", at: 30 }, { key: "ann", at: 50 },
        { key: "bob", at: 30 }, { key: "bob", at: 50 },
        { key: "cy", at: 10 }
      ])

      // A damaged version is refused by name.
      await cluster.sql(db, "update writeonce.view_entries set entry = replace(entry, '\"open\":1', '\"open\":9') where key = 'cy'")
      const damaged = await rt.runPromise(Effect.either(entries.read("v", "d1", ["cy"], 50)))
      expect(Either.isLeft(damaged) && damaged.left.reason).toContain("w!v!d1!cy@10")
      expect(() => entries.readNow("v", "d1", "cy", 50)).toThrow(/w!v!d1!cy@10/)
    } finally {
      await rt.dispose()
    }
  }, 120_000)
})
