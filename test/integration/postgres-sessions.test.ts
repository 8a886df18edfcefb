/**
 * Legacy sessions in a PostgreSQL store (`--store`), on a real cluster (scripts/pg-cluster.sh): as in the
 * embedded store, a subscribe writes one row of its own (the session's record is never rewritten), an ended
 * session takes its subscriptions with it, and a store of format 2 (every subscription inside the session's
 * record) is upgraded to one row per subscription.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PgConnection, pgConnectionLayer } from "../../src/log/postgres/connection.ts"
import { ensureSchema, STORE_VERSION } from "../../src/log/postgres/schema.ts"
import { SessionStore, type SessionStoreShape } from "../../src/log/session-store.ts"
import { PostgresSessionStore } from "../../src/log/postgres/session-store.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the PostgreSQL session store tests")

describe.skipIf(!haveBinaries)("legacy sessions in a PostgreSQL store", () => {
  let cluster: PgCluster | undefined
  beforeAll(async () => {
    cluster = await sharedCluster()
  }, 120_000)
  afterAll(() => cluster?.stop())

  const open = async (database: string) => {
    const url = await cluster!.createDatabase(database)
    const runtime = ManagedRuntime.make(Layer.provideMerge(PostgresSessionStore, pgConnectionLayer(url)))
    const upgrade = () => runtime.runPromise(Effect.flatMap(PgConnection, ensureSchema))
    const store = <A>(f: (s: SessionStoreShape) => Effect.Effect<A, unknown>) => runtime.runPromise(Effect.flatMap(SessionStore, f))
    const sql = (text: string, values?: Array<unknown>) => cluster!.sql(database, text, values)
    return { runtime, upgrade, store, sql }
  }

  it("a subscribe writes one row and leaves the session's record as it was; unsubscribe, DELETE and expiry leave nothing", async () => {
    const { runtime, upgrade, store, sql } = await open("wo_sessions_rows")
    expect(await upgrade()).toEqual({ from: 0, to: STORE_VERSION })
    await store((s) => s.create("a", { version: "2025-11-25", createdAt: 1 }))
    const record = async () => (await sql(`select record from writeonce.sessions where id = 'a'`))[0].record
    const header = await record()
    const uris = Array.from({ length: 200 }, (_, k) => `wo://products/${k}${"9".repeat(2000)}`)
    for (const [k, uri] of uris.entries()) await store((s) => s.subscribe("a", uri, k))
    await store((s) => s.subscribe("a", uris[0], 99)) // held already: kept as it began
    expect(await record()).toBe(header)
    expect(await sql(`select count(*)::int as n from writeonce.session_subscriptions where session_id = 'a'`)).toEqual([{ n: 200 }])
    const loaded = await store((s) => s.load!("a"))
    expect(loaded?.subscriptions.size).toBe(200)
    expect(loaded?.subscriptions.get(uris[0])).toBe(0)
    expect(loaded?.subscriptions.get(uris[199])).toBe(199)

    await store((s) => s.unsubscribe("a", uris[0]))
    expect((await store((s) => s.load!("a")))?.subscriptions.has(uris[0])).toBe(false)
    await store((s) => s.remove("a"))
    expect(await sql(`select count(*)::int as n from writeonce.session_subscriptions`)).toEqual([{ n: 0 }])
    // A subscribe that races the session's end on another node stores nothing.
    await store((s) => s.subscribe("a", uris[1], 1))
    expect(await sql(`select count(*)::int as n from writeonce.session_subscriptions`)).toEqual([{ n: 0 }])

    await store((s) => s.create("idle", { version: "2025-11-25", createdAt: 1 }))
    await store((s) => s.subscribe("idle", uris[1], 1))
    await sql(`update writeonce.sessions set last_seen = 0 where id = 'idle'`)
    expect(await store((s) => s.expire!(60_000))).toBe(1)
    expect(await sql(`select count(*)::int as n from writeonce.session_subscriptions`)).toEqual([{ n: 0 }])
    await runtime.dispose()
  })

  it("a store of format 2 (subscriptions inside the session's record) is upgraded to one row per subscription", async () => {
    const { runtime, upgrade, store, sql } = await open("wo_sessions_upgrade")
    await upgrade()
    // Format 2 as an earlier writeonce left it.
    await sql(`drop table writeonce.session_subscriptions`)
    await sql(`update writeonce.log_head set store_version = 2`)
    await sql(`insert into writeonce.sessions (id, record, last_seen) values ($1, $2, $3)`, [
      "old",
      JSON.stringify({ version: "2025-11-25", createdAt: 5, subscriptions: { "wo://products/1": 3, "wo://products?name=p": 4 } }),
      Date.now()
    ])
    expect(await upgrade()).toEqual({ from: 2, to: STORE_VERSION })
    const loaded = await store((s) => s.load!("old"))
    expect(loaded).toEqual({ version: "2025-11-25", createdAt: 5, subscriptions: new Map([["wo://products/1", 3], ["wo://products?name=p", 4]]) })
    expect(JSON.parse((await sql(`select record from writeonce.sessions where id = 'old'`))[0].record)).toEqual({ version: "2025-11-25", createdAt: 5 })
    await store((s) => s.unsubscribe("old", "wo://products/1"))
    expect([...(await store((s) => s.load!("old")))!.subscriptions.keys()]).toEqual(["wo://products?name=p"])
    await runtime.dispose()
  })
})
