/**
 * Idempotency keys on a real server (port 0, a temp classic-level dir): a retry with the key gets the first answer
 * back byte for byte, flagged as a replay, after a restart too; the same key with another request is 422; two
 * identical keyed requests at once write once; a refusal is not recorded; both MCP eras carry the key in `_meta`;
 * expired keys are pruned; a damaged key record is named by `wo verify` and refuses its retry (503) without deciding it again.
 */
import { Effect } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { ClassicLevel } from "classic-level"
import { EventLog } from "../../src/log/event-log.ts"
import { openDb } from "../../src/log/classic-level/level-db.ts"
import * as K from "../../src/log/classic-level/log-keys.ts"
import { verifyStore } from "../../src/log/classic-level/offline/verify.ts"
import { IDEMPOTENCY_KEY_META, IDEMPOTENT_REPLAY_META } from "../../src/commands/idempotency.ts"
import { MCP_HEADERS, rpc } from "../../testkit/legacy-client.ts"
import { MODERN_META, modernHeaders } from "../../testkit/modern-client.ts"
import { apps, http, rawRequest, startServer, tempDir } from "../../testkit/server.ts"
import { library } from "../../testkit/library-app.ts"

let server: Awaited<ReturnType<typeof startServer>> | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const post = (url: string, body: unknown, key?: string, method = "POST") =>
  http(url, { method, body, headers: key === undefined ? {} : { "idempotency-key": key } })

const product = { name: "lamp", price: 10, currency: "EUR" }

/** The parts of an answer a replay must repeat exactly. */
const answer = (r: { status: number; text: string; headers: Headers }) => ({
  status: r.status,
  text: r.text,
  etag: r.headers.get("etag"),
  location: r.headers.get("location")
})

describe("REST Idempotency-Key", () => {
  it("answers a retried create once, with the same bytes and Idempotent-Replayed; other keys write again", async () => {
    server = await startServer(apps.pricing)
    const first = await post(`${server.url}/api/products`, product, "create-lamp-1")
    expect(first.status).toBe(201)
    expect(first.headers.get("idempotent-replayed")).toBeNull()
    // The same body with its keys in another order is the same request.
    const again = await post(`${server.url}/api/products`, { currency: "EUR", price: 10, name: "lamp" }, "create-lamp-1")
    expect(answer(again)).toEqual(answer(first))
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    const other = await post(`${server.url}/api/products`, product, "create-lamp-2")
    expect(other.status).toBe(201)
    expect(other.json.id).not.toBe(first.json.id)
    const list = await http(`${server.url}/api/products`)
    expect(list.json.items.map((r: { id: string }) => r.id)).toEqual([first.json.id, other.json.id])
  })

  it("refuses the same key with another request (422 naming the key), writing nothing", async () => {
    server = await startServer(apps.pricing)
    const first = await post(`${server.url}/api/products`, product, "k-1")
    const reused = await post(`${server.url}/api/products`, { ...product, price: 11 }, "k-1")
    expect(reused.status).toBe(422)
    expect(reused.json.error).toBe("IdempotencyKeyReused")
    expect(reused.json.message).toContain('"k-1"')
    // Another operation under the key is another request too.
    const method = await post(`${server.url}/api/products/${first.json.id}/set_price`, { price: 12 }, "k-1")
    expect(method.status).toBe(422)
    expect((await http(`${server.url}/api/products`)).json.items).toHaveLength(1)
    expect((await http(`${server.url}/api/products/${first.json.id}`)).json.version).toBe(1)
  })

  it("refuses a malformed key with 400 before doing anything", async () => {
    server = await startServer(apps.pricing)
    for (const key of ["has space", "x".repeat(256), "naïve"]) {
      const r = await rawRequest(`${server.url}/api/products`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": Buffer.from(key, "utf8").toString("latin1") },
        body: JSON.stringify(product)
      })
      expect(r.status, key).toBe(400)
      expect(r.json.issues[0].path).toEqual(["Idempotency-Key"])
    }
    expect((await http(`${server.url}/api/products`)).json.items).toHaveLength(0)
  })

  it("two identical keyed requests at once write one event; both answers are equal, one of them a replay", async () => {
    server = await startServer(apps.pricing)
    const { json: created } = await post(`${server.url}/api/products`, product)
    const url = `${server.url}/api/products/${created.id}/set_price`
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(url, { price: 20 }, "price-20")))
    expect(new Set(answers.map((a) => a.text)).size).toBe(1)
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200))
    expect(answers.filter((a) => a.headers.get("idempotent-replayed") === "true")).toHaveLength(7)
    // One set_price: version 2, not 9.
    expect((await http(`${server.url}/api/products/${created.id}`)).json.version).toBe(2)
    // The same concurrently for creates: one row.
    const creates = await Promise.all(Array.from({ length: 8 }, () => post(`${server!.url}/api/products`, product, "one-lamp")))
    expect(new Set(creates.map((a) => a.text)).size).toBe(1)
    expect((await http(`${server.url}/api/products`)).json.items).toHaveLength(2)
  })

  it("does not record a refusal: the retry is decided again", async () => {
    server = await startServer(apps.pricing)
    const { json: created } = await post(`${server.url}/api/products`, product)
    const url = `${server.url}/api/products/${created.id}/set_price`
    const refused = await post(url, { price: -1 }, "neg")
    expect(refused.status).toBe(422)
    expect(refused.json.error).toBe("Rejected")
    const again = await post(url, { price: -1 }, "neg")
    expect(again.status).toBe(422)
    expect(again.headers.get("idempotent-replayed")).toBeNull()
  })

  it("answers from the store after a restart: same bytes, replayed, nothing written again", async () => {
    const dataDir = tempDir()
    server = await startServer(apps.pricing, { dataDir })
    const created = await post(`${server.url}/api/products`, product, "c")
    const priced = await post(`${server.url}/api/products/${created.json.id}/set_price`, { price: 30 }, "p")
    await server.close()
    server = await startServer(apps.pricing, { dataDir })
    const created2 = await post(`${server.url}/api/products`, product, "c")
    const priced2 = await post(`${server.url}/api/products/${created.json.id}/set_price`, { price: 30 }, "p")
    expect(answer(created2)).toEqual(answer(created))
    expect(answer(priced2)).toEqual(answer(priced))
    expect([created2, priced2].map((r) => r.headers.get("idempotent-replayed"))).toEqual(["true", "true"])
    expect((await http(`${server.url}/api/products/${created.json.id}`)).json.version).toBe(2)
    expect((await http(`${server.url}/api/products`)).json.items).toHaveLength(1)
  })

  it("wo verify checks the stored keys: a whole store passes, a damaged key record is named", async () => {
    const dataDir = tempDir()
    server = await startServer(apps.pricing, { dataDir })
    const created = await post(`${server.url}/api/products`, product, "v-1")
    await post(`${server.url}/api/products/${created.json.id}/set_price`, { price: 3 }, "v~2")
    await server.close()
    server = undefined
    const verify = () => Effect.runPromise(Effect.scoped(Effect.flatMap(openDb(dataDir), verifyStore)))
    expect(await verify()).toMatchObject({ events: 2, problems: [] })
    const db = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8" })
    await db.open()
    const value = (await db.get(K.idempotencyKey("v~2")))!
    await db.put(K.idempotencyKey("v~2"), value.replace('"price":3', '"price":4'))
    await db.close()
    expect((await verify()).problems).toEqual(["corrupt record at key k!v~2: checksum mismatch"])

    // A retry under the damaged key is neither answered with the altered bytes nor decided again: it is refused,
    // naming the record, and nothing is written; other keys and writes go on.
    server = await startServer(apps.pricing, { dataDir })
    const retried = await post(`${server.url}/api/products/${created.json.id}/set_price`, { price: 3 }, "v~2")
    expect(retried.status).toBe(503)
    expect(retried.text).toContain("k!v~2")
    expect(retried.text).not.toContain('"price":4')
    expect((await http(`${server.url}/api/products/${created.json.id}`)).json.version).toBe(2)
    expect((await post(`${server.url}/api/products/${created.json.id}/set_price`, { price: 5 }, "v~3")).status).toBe(200)
  })

  it("answers a retried app command with its first answer (same correlation), one loan", async () => {
    server = await startServer(library)
    const book = await post(`${server.url}/api/books`, { title: "Dune" })
    await post(`${server.url}/api/books/${book.json.id}/add_copies`, { n: 2 })
    const member = await post(`${server.url}/api/members`, { name: "Ann" })
    const lend = { book: book.json.id, member: member.json.id }
    const first = await post(`${server.url}/api/_commands/lend`, lend, "lend-1")
    expect(first.status).toBe(200)
    const again = await post(`${server.url}/api/_commands/lend`, lend, "lend-1")
    expect(again.text).toBe(first.text)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    expect((await http(`${server.url}/api/loans`)).json.items).toHaveLength(1)
    expect((await http(`${server.url}/api/books/${book.json.id}`)).json.available).toBe(1)
    const reused = await post(`${server.url}/api/_commands/lend`, { ...lend, member: "9" }, "lend-1")
    expect(reused.status).toBe(422)
    expect(reused.json.error).toBe("IdempotencyKeyReused")
  })

  it("prunes keys older than the window (WO_IDEMPOTENCY_TTL), in the background", async () => {
    server = await startServer(apps.pricing, { idempotencyTtlMs: 1000 })
    await post(`${server.url}/api/products`, product, "short-lived")
    const stored = () => server!.runtime.runPromise(Effect.flatMap(EventLog, (log) => log.storedKey!("short-lived")))
    expect(await stored()).toMatchObject({ key: "short-lived" })
    // The pruner runs every second with this window; poll (the count of rounds is not what is tested).
    let gone = false
    for (let i = 0; i < 300 && !gone; i++) {
      await new Promise((r) => setTimeout(r, 50))
      gone = (await stored()) === undefined
    }
    expect(gone).toBe(true)
    // Once pruned, the key is free: a request with it is decided as a new one.
    const reused = await post(`${server.url}/api/products`, { ...product, price: 99 }, "short-lived")
    expect(reused.status).toBe(201)
  })
})

describe("MCP _meta idempotency key", () => {
  it("legacy era: a retried tools/call gets the same result, flagged in _meta; another request under the key is refused", async () => {
    server = await startServer(apps.pricing)
    const { json: created } = await post(`${server.url}/api/products`, product)
    const call = (price: number) =>
      rpc(server!.url, "tools/call", { name: "products_set_price", arguments: { id: created.id, price }, _meta: { [IDEMPOTENCY_KEY_META]: "mcp-legacy-1" } })
    const first = (await call(40)).json.result
    const again = (await call(40)).json.result
    expect(first.isError).toBeUndefined()
    expect(first._meta?.[IDEMPOTENT_REPLAY_META]).toBeUndefined()
    expect(again._meta[IDEMPOTENT_REPLAY_META]).toBe(true)
    const { _meta, ...rest } = again
    expect(rest).toEqual(first)
    const reused = (await call(41)).json.result
    expect(reused.isError).toBe(true)
    expect(reused._meta["writeonce/refusal"]).toMatchObject({ error: "IdempotencyKeyReused", key: "mcp-legacy-1" })
    expect((await http(`${server.url}/api/products/${created.id}`)).json).toMatchObject({ version: 2, price: 40 })
    // A key is one per request whatever the surface: the REST retry of the same set_price is a replay.
    const rest2 = await post(`${server.url}/api/products/${created.id}/set_price`, { price: 40 }, "mcp-legacy-1")
    expect(rest2.headers.get("idempotent-replayed")).toBe("true")
    expect(rest2.text).toBe(first.content[0].text)
    const bad = await rpc(server.url, "tools/call", { name: "products_set_price", arguments: { id: created.id, price: 1 }, _meta: { [IDEMPOTENCY_KEY_META]: "" } })
    expect(bad.json.error.code).toBe(-32602)
  })

  it("modern era: the same, with the key beside the protocol's own _meta", async () => {
    server = await startServer(apps.pricing)
    const { json: created } = await post(`${server.url}/api/products`, product)
    let id = 1
    const call = async (price: number) => {
      const r = await rawRequest(`${server!.url}/mcp`, {
        method: "POST",
        headers: modernHeaders("tools/call", "products_set_price"),
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: id++,
          method: "tools/call",
          params: { name: "products_set_price", arguments: { id: created.id, price }, _meta: { ...MODERN_META, [IDEMPOTENCY_KEY_META]: "mcp-modern-1" } }
        })
      })
      expect(r.status).toBe(200)
      return r.json.result
    }
    const first = await call(50)
    const again = await call(50)
    expect(first.resultType).toBe("complete")
    expect(first._meta[IDEMPOTENT_REPLAY_META]).toBeUndefined()
    expect(again._meta[IDEMPOTENT_REPLAY_META]).toBe(true)
    const strip = ({ _meta: { [IDEMPOTENT_REPLAY_META]: _flag, ...meta }, ...rest }: any) => ({ ...rest, _meta: meta })
    expect(strip(again)).toEqual(strip(first))
    const reused = await call(51)
    expect(reused.isError).toBe(true)
    expect(reused._meta["writeonce/refusal"].error).toBe("IdempotencyKeyReused")
    expect((await http(`${server.url}/api/products/${created.id}`)).json.version).toBe(2)
    void MCP_HEADERS
  })
})
