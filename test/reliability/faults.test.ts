/**
 * Failed and torn writes. A failing durable write (LogFaults, the real classic-level store underneath) must be
 * refused on every surface, announce nothing, and leave the server serving; a damaged tail on disk must stop
 * startup with a clear message instead of being served.
 */
import { ClassicLevel } from "classic-level"
import { Effect, Layer } from "effect"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { LogFaults } from "../../testkit/log-faults.ts"
import { seal, unsealJson } from "../../src/log/record.ts"
import * as K from "../../src/log/classic-level/log-keys.ts"
import { StoreFailed } from "../../src/domain/errors.ts"
import { MCP_HEADERS, openSession } from "../../testkit/legacy-client.ts"
import { listenBody, modernCall, modernHeaders, SUBSCRIPTION_ID } from "../../testkit/modern-client.ts"
import { runWo } from "../../testkit/spawn.ts"
import { openSse } from "../../testkit/sse.ts"
import { apps, http, ROOT, spawnServer, startServer, tempDir } from "../../testkit/server.ts"
import { sessionRequest } from "../../testkit/write-traffic.ts"

const servers: Array<{ close: () => Promise<void> }> = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

const product = (n: number) => ({ name: `p${n}`, price: n, currency: "USD" })

describe("a failing durable write", () => {
  it("is refused on REST (503), legacy and modern MCP (isError), notifies nobody, and the server goes on", async () => {
    let failing = false
    const faults = Layer.succeed(LogFaults, {
      beforeWrite: () => (failing ? Effect.fail(new StoreFailed({ reason: "injected disk error" })) : Effect.void)
    })
    const server = await startServer(apps.pricing, {}, faults)
    servers.push(server)
    const url = server.url
    expect((await http(`${url}/api/products`, { method: "POST", body: product(1) })).status).toBe(201) // seq 1

    const session = await openSession(url)
    for (const uri of ["wo://products/1", "wo://products/2"]) {
      expect((await sessionRequest(url, session, "resources/subscribe", { uri })).json.result).toEqual({})
    }
    const get = await openSse(`${url}/mcp`, { headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } })
    expect(get.status).toBe(200)
    const listen = await openSse(`${url}/mcp`, {
      method: "POST",
      headers: modernHeaders("subscriptions/listen"),
      body: listenBody("L1", ["wo://products/1", "wo://products/2"], { resourcesListChanged: true })
    })
    expect((await listen.nextJson())?.json.method).toBe("notifications/subscriptions/acknowledged")

    failing = true
    const restCreate = await http(`${url}/api/products`, { method: "POST", body: product(2) })
    expect(restCreate.status).toBe(503)
    expect(restCreate.headers.get("retry-after")).toBe("1")
    expect(restCreate.json).toMatchObject({ error: "StoreUnavailable", message: expect.stringContaining("injected disk error") })
    const restMethod = await http(`${url}/api/products/1/set_price`, { method: "POST", body: { price: 9 } })
    expect(restMethod.status).toBe(503)
    expect(restMethod.json.error).toBe("StoreUnavailable")

    const legacy = await sessionRequest(url, session, "tools/call", { name: "products_set_price", arguments: { id: "1", price: 9 } })
    expect(legacy.status).toBe(200)
    expect(legacy.json.result).toMatchObject({ isError: true, content: [{ type: "text", text: expect.stringContaining("injected disk error") }] })
    expect(legacy.json.result.structuredContent).toBeUndefined()
    const modern = await modernCall(url, "products_set_price", { id: "1", price: 9 })
    expect(modern.status).toBe(200)
    expect(modern.json.result).toMatchObject({ isError: true, resultType: "complete" })
    expect(modern.json.result.content[0].text).toMatch(/injected disk error/)

    // Streamed progress: accepted and decided, never durable, then the error result.
    const progress = await openSse(`${url}/mcp`, {
      method: "POST",
      headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 77, method: "tools/call", params: { name: "products_set_price", arguments: { id: "1", price: 9 }, _meta: { progressToken: "t" } } })
    })
    const messages: Array<any> = []
    for (let m = await progress.nextJson(); m !== undefined; m = await progress.nextJson()) messages.push(m.json)
    expect(messages.filter((m) => m.method === "notifications/progress").map((m) => m.params.message)).toEqual(["accepted", "decided"])
    expect(messages.at(-1)).toMatchObject({ id: 77, result: { isError: true } })

    // Nothing was announced to either stream, and nothing changed.
    expect(await get.nextJson(500)).toBeUndefined()
    expect(await listen.nextJson(100)).toBeUndefined()
    expect(get.ended() || listen.ended()).toBe(false)
    expect((await http(`${url}/api/products/1`)).json).toMatchObject({ version: 1, price: 1 })
    expect((await http(`${url}/api/products`)).json.items).toHaveLength(1)

    // The fault clears: the server serves, the failed batches used no sequence numbers, both streams hear it.
    failing = false
    const ok = await http(`${url}/api/products/1/set_price`, { method: "POST", body: { price: 5 } })
    expect(ok.status).toBe(200)
    expect(ok.json.version).toBe(2)
    expect(await get.nextJson()).toEqual({ id: "get-2", json: { jsonrpc: "2.0", method: "notifications/resources/updated", params: { uri: "wo://products/1" } } })
    expect((await listen.nextJson())?.json).toMatchObject({ method: "notifications/resources/updated", params: { uri: "wo://products/1", _meta: { [SUBSCRIPTION_ID]: "L1" } } })
    const created = await http(`${url}/api/products`, { method: "POST", body: product(2) })
    expect(created.json).toMatchObject({ id: "2", version: 1 })
    expect((await get.nextJson())?.id).toBe("get-3")
    const after = [(await listen.nextJson())?.json.method, (await listen.nextJson())?.json.method].sort()
    expect(after).toEqual(["notifications/resources/list_changed", "notifications/resources/updated"])
    expect(await get.nextJson(300)).toBeUndefined()
    get.close()
    listen.close()
  })
})

/** A store with four events (3 creates and a set_price), closed. */
const storeWithFourEvents = async () => {
  const dataDir = tempDir("wo-torn-")
  const server = await startServer(apps.pricing, { dataDir })
  for (let i = 1; i <= 3; i++) await http(`${server.url}/api/products`, { method: "POST", body: product(i) })
  await http(`${server.url}/api/products/2/set_price`, { method: "POST", body: { price: 42 } })
  await server.close()
  return dataDir
}

/** Edits a closed data dir with classic-level directly (the key layout of src/log/classic-level/log-keys.ts). */
const damage = async (dataDir: string, edit: (db: ClassicLevel<string, string>) => Promise<unknown>) => {
  const db = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8" })
  await db.open()
  await edit(db)
  await db.close()
}

const pricing = path.join(ROOT, "examples/pricing")
const start = (dataDir: string) => runWo(["run", pricing, "--data", dataDir, "--listen", "127.0.0.1:0"], { timeoutMs: 30_000 })
const STACK_FRAME = /^\s+at /m

describe.concurrent("a damaged tail on disk stops startup with a clear message", () => {
  const cases: ReadonlyArray<readonly [string, (db: ClassicLevel<string, string>) => Promise<unknown>, RegExp]> = [
    [
      "the last event is torn (half a record)",
      async (db) => db.put(K.eventKey(4), (await db.get(K.eventKey(4)))!.slice(0, 25)),
      /corrupt record at key e!0000000000000004: checksum mismatch/
    ],
    [
      "the last event holds another seq than its key",
      async (db) =>
        db.put(K.eventKey(4), seal(K.eventKey(4), JSON.stringify({ ...unsealJson<object>(K.eventKey(4), (await db.get(K.eventKey(4)))!), seq: 9 }))),
      /corrupt log: key e!0000000000000004 holds event seq 9/
    ],
    [
      "the last event is missing (the checkpoint is past the log)",
      (db) => db.del(K.eventKey(4)),
      /corrupt store: checkpoint 4 is past the last event 3/
    ],
    [
      "an event past the checkpoint (the tail startup folds onto the stored rows) is torn",
      async (db) => {
        await db.put(K.CHECKPOINT_KEY, seal(K.CHECKPOINT_KEY, "2"))
        await db.put(K.eventKey(3), "{\"seq\":3,\"at\":")
      },
      /corrupt record at key e!0000000000000003: checksum mismatch/
    ]
  ]
  for (const [name, edit, message] of cases) {
    it(name, async ({ expect }) => {
      const dataDir = await storeWithFourEvents()
      await damage(dataDir, edit)
      const run = await start(dataDir)
      expect(run.timedOut, "the server started serving a damaged store").toBe(false)
      expect(run.stdout).not.toMatch(/serving app/)
      expect(run.code).toBe(1)
      expect(run.stderr).toMatch(message)
      expect(run.stderr).toMatch(/^wo: .*corrupt/m) // one line, from the CLI, not a crash
      expect(run.stderr).not.toMatch(STACK_FRAME)
    })
  }

  it("wo replay names a torn record in one line and exits non-zero", async ({ expect }) => {
    const dataDir = await storeWithFourEvents()
    await damage(dataDir, async (db) => db.put(K.eventKey(4), (await db.get(K.eventKey(4)))!.slice(0, 25)))
    const replay = await runWo(["replay", dataDir])
    expect(replay.code).toBe(1)
    expect(replay.stderr).toMatch(/^wo: .*corrupt record at key e!0000000000000004/m)
    expect(replay.stderr).not.toMatch(STACK_FRAME)
  })

  it("the same store undamaged starts, serves its rows and replays (the failures above are the damage's)", async ({ expect }) => {
    const dataDir = await storeWithFourEvents()
    const server = await spawnServer(pricing, dataDir)
    try {
      expect((await http(`${server.url}/api/products`)).json.items.map((r: any) => r.version)).toEqual([1, 2, 1])
    } finally {
      expect(await server.stop()).toBe(0)
    }
    const replay = await runWo(["replay", dataDir])
    expect(replay.code).toBe(0)
    expect(replay.stdout).toMatch(/replayed 4 events into 3 rows/)
  })
})
