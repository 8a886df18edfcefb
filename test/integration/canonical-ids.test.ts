/**
 * One row, one name: an id is the canonical decimal string the store assigned, and every other spelling ("01",
 * "+1", " 1", the 12-digit padded key) is answered as no row on every surface, before the store is read. The
 * library sample (every operation exposed, so that MCP has update and delete tools). The row store pads ids to 12
 * digits; before ids had one spelling, `/api/members/01` reached row 1 while the log named entity `members/01`.
 */
import { Chunk, Effect, Stream } from "effect"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import sample from "../../examples/library/app.ts"
import type { AppDef } from "../../src/domain/catalog.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { EventLog } from "../../src/log/event-log.ts"
import { openDb } from "../../src/log/classic-level/level-db.ts"
import { verifyStore } from "../../src/log/classic-level/offline/verify.ts"
import { callTool, rpc } from "../../testkit/legacy-client.ts"
import { modernCall, modernRequest, openListen } from "../../testkit/modern-client.ts"
import { http, runWo, startServer, tempDir } from "../../testkit/server.ts"
import type { SseConnection } from "../../testkit/sse.ts"

/** The sample with every operation of every type exposed on both surfaces (no `rest` / `mcp` lists). */
const everything = (e: object) => Object.fromEntries(Object.entries(e).filter(([k]) => k !== "rest" && k !== "mcp"))
const app = {
  ...sample,
  entities: Object.fromEntries(Object.entries(sample.entities).map(([name, e]) => [name, everything(e)]))
} as unknown as AppDef

/** Twelve other spellings of a one-digit `id`: zero-padded to 2..12 digits (12: the store's own key), and signed. */
const aliasesOf = (id: string) => [...Array.from({ length: 11 }, (_, i) => id.padStart(2 + i, "0")), `+${id}`]

let server: Awaited<ReturnType<typeof startServer>>
const open: Array<SseConnection> = []

const post = (p: string, body: unknown, headers: Record<string, string> = {}) => http(`${server.url}${p}`, { method: "POST", body, headers })
const patch = (p: string, body: unknown, headers: Record<string, string> = {}) => http(`${server.url}${p}`, { method: "PATCH", body, headers })
const del = (p: string) => http(`${server.url}${p}`, { method: "DELETE" })
const get = (p: string) => http(`${server.url}${p}`)
const segment = (id: string) => encodeURIComponent(id)
const events = () =>
  server.runtime.runPromise(Effect.flatMap(EventLog, (log) => Stream.runCollect(log.readFrom(1)))).then((c) => Chunk.toReadonlyArray(c) as ReadonlyArray<StoredEvent>)
const loansOf = async (book: string) => (await get(`/api/loans?book=${book}&limit=100`)).json.items.length as number

beforeAll(async () => {
  server = await startServer(app)
  // members 1 and 2; book 1 with one copy, book 2 with three; a loan of book 2 to member 1 (so member 1 is referenced).
  expect((await post("/api/members", { name: "Ann" })).json.id).toBe("1")
  expect((await post("/api/members", { name: "Bo" })).json.id).toBe("2")
  expect((await post("/api/books", { title: "One copy", author: "A" })).json.id).toBe("1")
  expect((await post("/api/books/1/add_copies", { n: 1 })).status).toBe(200)
  expect((await post("/api/books", { title: "Three copies", author: "B" })).json.id).toBe("2")
  expect((await post("/api/books/2/add_copies", { n: 3 })).status).toBe(200)
  expect((await post("/api/_commands/lend", { book: "2", member: "1" })).status).toBe(200)
}, 60_000)

afterAll(async () => {
  for (const s of open) s.close()
  await server?.close()
})

describe("an id spelled another way is no row (REST)", () => {
  it("GET, PATCH, DELETE and a method through an alias are 404 NotFound, and nothing is written", async () => {
    const before = (await events()).length
    const member = (await get("/api/members/1")).json
    for (const alias of [...aliasesOf("1"), " 1", "1 ", "1.0", "1e0", "0x1"]) {
      const p = `/api/members/${segment(alias)}`
      for (const res of [await get(p), await patch(p, { name: "Eve" }), await del(p), await post(`/api/books/${segment(alias)}/add_copies`, { n: 1 })]) {
        expect(res.status, `${alias}: ${res.text}`).toBe(404)
        expect(res.json.error).toBe("NotFound")
      }
    }
    expect((await events()).length).toBe(before)
    expect((await get("/api/members/1")).json).toEqual(member)
  })

  it("a referenced row cannot be deleted through an alias: the alias is 404, the id itself 422 still_referenced", async () => {
    for (const alias of ["01", "001", "000000000001"]) expect((await del(`/api/members/${alias}`)).status).toBe(404)
    const canonical = await del("/api/members/1")
    expect(canonical.status).toBe(422)
    expect(canonical.json.code).toBe("still_referenced")
    expect((await get("/api/members/1")).status).toBe(200)
  })

  it("a ref field or a ref param holding an alias is 422 missing_reference, and nothing is written", async () => {
    const before = (await events()).length
    const refused = [
      await post("/api/loans", { book: "02", member: "1" }),
      await post("/api/loans", { book: "2", member: "+1" }),
      await patch("/api/loans/1", { member: "0002" }),
      await post("/api/_commands/lend", { book: "02", member: "1" }),
      await post("/api/_commands/lend", { book: "2", member: "0001" }),
      await post("/api/_commands/return", { loan: "01" })
    ]
    for (const res of refused) {
      expect(res.status, res.text).toBe(422)
      expect(res.json.code).toBe("missing_reference")
    }
    expect((await events()).length).toBe(before)
    expect((await get("/api/books/2")).json.available).toBe(2)
  })
})

describe("an id spelled another way is no row (MCP, both eras)", () => {
  const modern = async (tool: string, args: Record<string, unknown>) => (await modernCall(server.url, tool, args)).json.result
  const legacy = (tool: string, args: Record<string, unknown>) => callTool(server.url, tool, args)

  for (const [era, call] of [["legacy", legacy], ["modern", modern]] as const) {
    it(`${era}: get, update, delete and a method tool answer an alias as a missing row; lend refuses alias params`, async () => {
      const before = (await events()).length
      const missing = await call("members_get", { id: "999" })
      expect(missing.isError).toBe(true)
      expect(missing.content[0].text).toBe("members 999 not found (NotFound). Find an existing id with members_list.")
      for (const alias of ["01", "002", "+1", "000000000001"]) {
        for (const [tool, args] of [
          ["members_get", { id: alias }],
          ["members_update", { id: alias, name: "Eve" }],
          ["members_delete", { id: alias }],
          ["books_add_copies", { id: alias, n: 1 }]
        ] as const) {
          const result = await call(tool, args)
          expect(result.isError, `${tool} ${alias}`).toBe(true)
          const type = tool.startsWith("books") ? "books" : "members"
          expect(result.content[0].text).toBe(`${type} ${alias} not found (NotFound). Find an existing id with ${type}_list.`)
        }
        const lend = await call("lend", { book: alias, member: "1" })
        expect(lend.isError).toBe(true)
        expect(lend._meta["writeonce/refusal"].code).toBe("missing_reference")
      }
      expect((await events()).length).toBe(before)
    })
  }

  it("resources/read of an alias URI is not found, in both eras", async () => {
    const legacyRead = (uri: string) => rpc(server.url, "resources/read", { uri })
    const modernRead = (uri: string) => modernRequest(server.url, "resources/read", { uri }, uri)
    expect((await legacyRead("wo://members/1")).json.result.contents[0].text).toContain('"id":"1"')
    for (const read of [legacyRead, modernRead]) {
      const missing = (await read("wo://members/999")).json.error
      for (const alias of ["wo://members/01", "wo://members/000000000001", "wo://members/+1"]) {
        expect((await read(alias)).json.error).toEqual({ ...missing, message: missing.message.replace("wo://members/999", alias), data: { uri: alias } })
      }
    }
  })
})

describe("cursors carry only ids the store can key", () => {
  const cursor = (position: object) => Buffer.from(JSON.stringify(position)).toString("base64url")
  it("a list cursor past the store's ids is refused as a cursor, not read (REST and the MCP list tool)", async () => {
    for (const a of [1e21, 1_000_000_000_000]) {
      const rest = await get(`/api/members?cursor=${cursor({ t: "members", a })}`)
      expect(rest.status, rest.text).toBe(400)
      const tool = await callTool(server.url, "members_list", { cursor: cursor({ t: "members", a }) })
      expect(tool.isError).toBe(true)
    }
    expect((await get(`/api/members?cursor=${cursor({ t: "members", a: 1 })}`)).json.items.map((m: any) => m.id)).toEqual(["2"])
  })

  it("a resources/list cursor naming a row position before 0 is refused", async () => {
    const refused = await rpc(server.url, "resources/list", { cursor: cursor({ p: 0, a: -5 }) })
    expect(refused.json.error.code).toBe(-32602)
  })
})

describe("races through aliases", () => {
  it("12 concurrent lends of a one-copy book through 12 spellings: exactly one loan", async () => {
    const spellings = ["1", ...aliasesOf("1").slice(0, 11)]
    const answers = await Promise.all(spellings.map((book) => post("/api/_commands/lend", { book, member: "2" })))
    expect(answers.filter((a) => a.status === 200).length).toBe(1)
    expect(answers.filter((a) => a.status === 422 && a.json.code === "missing_reference").length).toBe(11)
    expect(await loansOf("1")).toBe(1)
    expect((await get("/api/books/1")).json).toMatchObject({ copies: 1, available: 0 })
    // And again, the book now out: none succeeds.
    const again = await Promise.all(spellings.map((book) => post("/api/_commands/lend", { book, member: "2" })))
    expect(again.filter((a) => a.status === 200).length).toBe(0)
    expect(await loansOf("1")).toBe(1)
  })

  it("12 concurrent PATCHes with one If-Match through 12 spellings: exactly one succeeds", async () => {
    const version = (await get("/api/members/2")).json.version as number
    const spellings = ["2", ...aliasesOf("2").slice(0, 11)]
    const answers = await Promise.all(spellings.map((id, i) => patch(`/api/members/${segment(id)}`, { name: `Bo ${i}` }, { "if-match": `"${version}"` })))
    expect(answers.filter((a) => a.status === 200).length).toBe(1)
    expect(answers.filter((a) => a.status === 404).length).toBe(11)
    expect((await get("/api/members/2")).json).toMatchObject({ version: version + 1, name: "Bo 0" })
  })
})

describe("subscriptions hear one name", () => {
  it("a listener on wo://members/1 hears a change made through the accepted spelling; the alias is refused and writes nothing", async () => {
    const listen = await openListen(server.url, "ids-1", ["wo://members/1"])
    open.push(listen)
    expect((await listen.nextJson(10_000))?.json.params.notifications).toEqual({ resourceSubscriptions: ["wo://members/1"] })
    const before = (await events()).length
    expect((await patch("/api/members/01", { name: "Ann through an alias" })).status).toBe(404)
    expect((await events()).length).toBe(before)
    expect((await get("/api/members/1")).json.name).toBe("Ann")
    expect((await patch("/api/members/1", { name: "Ann again" })).status).toBe(200)
    const heard = await listen.nextJson(10_000)
    expect(heard?.json.method).toBe("notifications/resources/updated")
    expect(heard?.json.params.uri).toBe("wo://members/1")

    // Subscribing to the alias URI is refused, naming it (it would never hear anything).
    const refusal = (await modernRequest(server.url, "subscriptions/listen", { notifications: { resourceSubscriptions: ["wo://members/01"] } })).json
    expect(refusal.error.code).toBe(-32602)
    expect(refusal.error.message).toContain("wo://members/01")
    const legacy = await rpc(server.url, "resources/subscribe", { uri: "wo://members/01" })
    expect(legacy.json.error.code).toBe(-32602)
  })
})

describe("bounded answers", () => {
  it("a 1 MB id gets a small NotFound (MCP tools in both eras, REST, a ref param)", async () => {
    const huge = "7".repeat(1 << 20)
    const legacy = await callTool(server.url, "members_get", { id: huge })
    expect(legacy.isError).toBe(true)
    expect(JSON.stringify(legacy).length).toBeLessThan(1000)
    const update = await callTool(server.url, "members_update", { id: huge, name: "x" })
    expect(JSON.stringify(update).length).toBeLessThan(1000)
    const modern = await modernCall(server.url, "members_delete", { id: huge })
    expect(modern.text.length).toBeLessThan(1000)
    const lend = await post("/api/_commands/lend", { book: huge, member: "1" })
    expect(lend.status).toBe(422)
    expect(lend.text.length).toBeLessThan(1000)
    // A path is bounded by the HTTP header limit: an 8,000-digit id.
    const rest = await get(`/api/members/${"7".repeat(8000)}`)
    expect(rest.status).toBe(404)
    expect(rest.text.length).toBeLessThan(1000)
  })
})

describe("after all of that", () => {
  it("wo verify is clean, and a backup taken afterwards restores", { timeout: 180_000 }, async () => {
    await server.close()
    const dataDir = server.dataDir
    const report = await Effect.runPromise(Effect.scoped(Effect.flatMap(openDb(dataDir), verifyStore)))
    expect(report.problems).toEqual([])
    const backup = path.join(tempDir("wo-ids-backup-"), "copy")
    const taken = await runWo(["backup", dataDir, backup])
    expect(taken.code, taken.stderr).toBe(0)
    const target = path.join(tempDir("wo-ids-restore-"), "data")
    const restored = await runWo(["restore", backup, target])
    expect(restored.code, restored.stderr).toBe(0)
    expect(restored.stdout).toContain("restored seq")
  })
})
