/**
 * Actors on the PostgreSQL store: a store of format 7 (before actors, as the previous release left it) is upgraded
 * in place by a `wo run --store` node (an added nullable column); its old event reads with no actor and keeps its
 * checksum, new events record theirs (REST, the legacy and modern MCP eras through the official SDK clients), a
 * row's history serves both, across a restart of the node, and `wo verify` / `wo replay` accept the mixed log. The
 * checksum covers the actor: a changed one is named. On the run's shared cluster, in a database of its own.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from "@modelcontextprotocol/client"
import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport as TransportV1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PgConnection, pgConnectionLayer } from "../../src/log/postgres/connection.ts"
import { ensureSchema } from "../../src/log/postgres/schema.ts"
import { eventColumns, rowKey, rowPayload, checksum, typeKey, typePayload } from "../../src/log/postgres/records.ts"
import { http, tempDir } from "../../testkit/server.ts"
import { runWo, spawnWo, type Spawned } from "../../testkit/spawn.ts"
import { STORE_VERSION } from "../../src/log/postgres/schema.ts"
import { haveBinaries, sharedCluster, warnIfSkipped, type PgCluster } from "../cluster/pg-cluster.ts"

warnIfSkipped("the PostgreSQL actor tests")

describe.skipIf(!haveBinaries)("actors on a PostgreSQL store upgraded from format 7", () => {
  const DB = "wo_actors"
  let cluster: PgCluster
  let store = ""
  let node: Spawned | undefined
  let legacySession: string | undefined
  const start = async () => {
    node = await spawnWo(["run", "examples/pricing", "--listen", "127.0.0.1:0", "--data", tempDir("wo-node-"), "--store", store])
    return node.loopbackUrl
  }

  beforeAll(async () => {
    cluster = await sharedCluster()
    store = await cluster.createDatabase(DB)
    // A store of format 7: this release's tables without the actor column.
    const runtime = ManagedRuntime.make(pgConnectionLayer(store))
    await runtime.runPromise(Effect.flatMap(PgConnection, ensureSchema))
    await runtime.dispose()
    await cluster.sql(DB, "alter table writeonce.events drop column actor")
    await cluster.sql(DB, "update writeonce.log_head set store_version = 7")
    // One product written by that release: its event's payload and checksum have no actor.
    const old = { name: "Lamp", price: 10, currency: "EUR" }
    const e = eventColumns({ seq: 1, at: 1, type: "products", id: "1", version: 1, schema: 1, kind: "created", data: old })
    expect(e.actor).toBeNull()
    await cluster.sql(DB, "insert into writeonce.events (seq, type, id, version, kind, schema, at, method, params, data, checksum) values (1, 'products', '1', 1, 'created', 1, 1, null, null, $1::json, $2)", [e.data, e.checksum])
    const rowJson = JSON.stringify({ id: "1", version: 1, ...old })
    await cluster.sql(DB, "insert into writeonce.rows (type, id, version, schema, row, checksum) values ('products', '1', 1, 1, $1::json, $2)", [rowJson, checksum(rowKey("products", "1"), rowPayload(1, 1, rowJson))])
    await cluster.sql(DB, "insert into writeonce.types (type, last_id, row_count, checksum) values ('products', 1, 1, $1)", [checksum(typeKey("products"), typePayload(1, 1))])
    await cluster.sql(DB, "update writeonce.log_head set seq = 1")
  }, 120_000)

  afterAll(async () => {
    await node?.stop().catch(() => undefined)
    cluster?.stop()
  })

  const expected = () => [
    undefined,
    { client: "rest" },
    { client: { name: "legacy-agent", version: "1.2.3", session: legacySession } },
    { client: { name: "modern-agent", version: "2.0.0" } }
  ]

  it("upgrades the store; new events record their actor, the old one has none; the history serves both, after a restart too", async () => {
    let url = await start()
    const [{ store_version }] = await cluster.sql(DB, "select store_version from writeonce.log_head")
    // Format 8 records actors; later formats keep them.
    expect(store_version).toBeGreaterThanOrEqual(8)
    expect(store_version).toBe(STORE_VERSION)
    expect((await http(`${url}/api/products/1/set_price`, { method: "POST", body: { price: 11 } })).status).toBe(200)
    const legacy = new ClientV1({ name: "legacy-agent", version: "1.2.3" })
    const transport = new TransportV1(new URL(`${url}/mcp`))
    await legacy.connect(transport)
    legacySession = transport.sessionId
    expect((await legacy.callTool({ name: "products_set_price", arguments: { id: "1", price: 12 } })).isError).toBeFalsy()
    await legacy.close()
    const modern = new ClientV2({ name: "modern-agent", version: "2.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } })
    await modern.connect(new TransportV2(new URL(`${url}/mcp`)))
    expect((await modern.callTool({ name: "products_set_price", arguments: { id: "1", price: 13 } })).isError).toBeFalsy()
    await modern.close()

    const history = (await http(`${url}/api/products/1/history?limit=3`)).json
    expect(history.items.map((e: any) => [e.version, e.actor])).toEqual(expected().slice(0, 3).map((a, i) => [i + 1, a]))
    const rest = (await http(`${url}/api/products/1/history?cursor=${encodeURIComponent(history.nextCursor)}`)).json
    expect(rest.items.map((e: any) => e.actor)).toEqual([expected()[3]])
    // Stored as written: the column holds the actor's JSON, NULL for the old event.
    const stored = await cluster.sql(DB, "select seq, actor::text as actor from writeonce.events order by seq")
    expect(stored.map((r) => (r.actor === null ? undefined : JSON.parse(r.actor)))).toEqual(expected())

    await node!.stop()
    url = await start()
    const again = (await http(`${url}/api/products/1/history`)).json.items
    expect(again.map((e: any) => e.actor)).toEqual(expected())
    await node!.stop()
    node = undefined
  }, 120_000)

  it("wo verify --store and wo replay --store accept the mixed log; a changed actor is named", async () => {
    const verify = await runWo(["verify", "--store", store], { timeoutMs: 60_000 })
    expect(verify.code, verify.stderr).toBe(0)
    expect(verify.stdout).toMatch(/^verified 4 events and 1 rows/m)
    const replayed = await runWo(["replay", "--app", "examples/pricing", "--store", store], { timeoutMs: 60_000 })
    expect(replayed.code, replayed.stderr).toBe(0)
    expect(replayed.stdout).toMatch(/OK: the stored rows equal the log's fold/)
    await cluster.sql(DB, `update writeonce.events set actor = '{"client":"in-process"}' where seq = 2`)
    const damaged = await runWo(["verify", "--store", store], { timeoutMs: 60_000 })
    expect(damaged.code).toBe(1)
    expect(damaged.stderr).toMatch(/corrupt record at key e!2: checksum mismatch/)
  }, 120_000)
})
