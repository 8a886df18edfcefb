/**
 * Rules no caller can bypass, through a real server: invariants checked on the row after every
 * command, guarded fields only methods change, references checked against live rows. REST answers 422 Rejected with
 * the rule's code; MCP (both eras) isError with the same refusal; nothing is written for a refused command.
 */
import { Effect, Either, Layer, Logger } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Commands, type Command } from "../../src/commands/commands.ts"
import { IN_RANGE, library } from "../../testkit/library-rules.ts"
import { LogFaults } from "../../testkit/log-faults.ts"
import { openSession, rawMcp, rpc } from "../../testkit/legacy-client.ts"
import { MODERN_META, modernHeaders, modernRequest } from "../../testkit/modern-client.ts"
import { http, rawRequest, startServer } from "../../testkit/server.ts"
import { waitFor } from "../../testkit/wait.ts"

const logs: Array<string> = []
const capturingLogger = Logger.replace(
  Logger.defaultLogger,
  Logger.make(({ logLevel, message }) => {
    logs.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
  })
)

let server: Awaited<ReturnType<typeof startServer>>
beforeAll(async () => {
  server = await startServer(library, {}, capturingLogger)
})
afterAll(async () => {
  await server?.close()
})

const post = (path: string, body: unknown) => http(`${server.url}/api/${path}`, { method: "POST", body })
const patch = (path: string, body: unknown) => http(`${server.url}/api/${path}`, { method: "PATCH", body })
const del = (path: string) => http(`${server.url}/api/${path}`, { method: "DELETE" })
const get = (path: string) => http(`${server.url}/api/${path}`)
const count = async (type: string) => ((await get(`${type}?limit=1000`)).json.items as Array<unknown>).length

const book = async (copies = 1) => {
  const created = await post("books", { title: "Dune", copies })
  expect(created.status).toBe(201)
  return created.json.id as string
}
const loan = async (bookId: string) => {
  const created = await post("loans", { book: bookId, status: "open" })
  expect(created.status).toBe(201)
  return created.json.id as string
}

let nextId = 1
const toolCall = (tool: string, args: object, meta?: object) =>
  JSON.stringify({ jsonrpc: "2.0", id: nextId++, method: "tools/call", params: { name: tool, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) } })

/** The same tool call in both MCP eras: the legacy 2025-11-25 session and the modern 2026-07-28 stateless request. */
const bothEras = async (tool: string, args: object) => {
  const session = await openSession(server.url)
  const legacy = await rawMcp(server.url, toolCall(tool, args), { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" })
  const modern = await rawRequest(`${server.url}/mcp`, { method: "POST", headers: modernHeaders("tools/call", tool), body: toolCall(tool, args, MODERN_META) })
  return { legacy: legacy.json.result, modern: modern.json.result }
}

/**
 * MCP refuses as REST did: isError, REST's body as the refusal in `_meta`, and as the text the model reads, REST's
 * message with the code, then `next` (the step the app's tools allow), or nothing.
 */
const expectSameRefusal = async (tool: string, args: object, rest: { status: number; json: any }, next?: string) => {
  expect(rest.status).toBe(422)
  for (const [era, result] of Object.entries(await bothEras(tool, args))) {
    expect(result.isError, era).toBe(true)
    expect(result.content[0].text, era).toBe(`${rest.json.message} (Rejected: ${rest.json.code}).${next === undefined ? "" : ` ${next}`}`)
    expect(result._meta["writeonce/refusal"], era).toEqual(rest.json)
  }
}

describe("invariants", () => {
  it("refuse a create, an update and a method whose row after would break one, with the invariant's code; nothing is written", async () => {
    const books = await count("books")
    const refusedCreate = await post("books", { title: "Dune", copies: 0 })
    expect(refusedCreate.status).toBe(422)
    expect(refusedCreate.json).toEqual({ error: "Rejected", code: "available_in_range", message: IN_RANGE })
    expect(await count("books")).toBe(books)

    const id = await book(1)
    const refusedUpdate = await patch(`books/${id}`, { copies: 0 })
    expect(refusedUpdate.json).toEqual({ error: "Rejected", code: "available_in_range", message: IN_RANGE })
    // check_in itself does not look at copies: the invariant catches it.
    const refusedMethod = await post(`books/${id}/check_in`, {})
    expect(refusedMethod.status).toBe(422)
    expect(refusedMethod.json).toEqual({ error: "Rejected", code: "available_in_range", message: IN_RANGE })
    expect((await get(`books/${id}`)).json).toEqual({ id, version: 1, title: "Dune", copies: 1, available: 1 })

    // A command that keeps the invariant goes through.
    expect((await post(`books/${id}/check_out`, {})).json).toMatchObject({ version: 2, available: 0 })
    expect((await patch(`books/${id}`, { copies: 3 })).json).toMatchObject({ version: 3, copies: 3, available: 0 })
  })

  it("MCP refuses with the same code and message as REST, in both eras", async () => {
    const id = await book(1)
    await expectSameRefusal("books_check_in", { id }, await post(`books/${id}/check_in`, {}), `Read books ${id} with books_get to see its current state before trying again.`)
    await expectSameRefusal("books_create", { title: "Dune", copies: 0 }, await post("books", { title: "Dune", copies: 0 }))
    expect((await get(`books/${id}`)).json.version).toBe(1)
  })

  it("an invariant that throws or answers a non-boolean is the author's bug: 500 MethodFailed naming it, an ERROR line, nothing written", async () => {
    const shelves = await count("shelves")
    const thrown = await post("shelves", { label: "boom" })
    expect(thrown.status).toBe(500)
    expect(thrown.json).toEqual({ error: "MethodFailed", message: "create failed: invariant labelled threw: check exploded" })
    const odd = await post("shelves", { label: "odd" })
    expect(odd.status).toBe(500)
    expect(odd.json).toEqual({ error: "MethodFailed", message: "create failed: invariant labelled returned 1, not a boolean" })
    expect(await count("shelves")).toBe(shelves)
    expect(await waitFor(() => logs.some((l) => /^ERROR shelves \d+: create failed: invariant labelled threw/.test(l)))).toBe(true)
    // A sane row still goes through, and a false check is the ordinary refusal.
    expect((await post("shelves", { label: "fiction" })).status).toBe(201)
    expect((await post("shelves", { label: "" })).json).toEqual({ error: "Rejected", code: "labelled", message: "a shelf needs a label" })
  })
})

describe("guarded fields", () => {
  const GUARDED = { error: "Rejected", code: "guarded_field", message: "available is changed only by methods: check_out, check_in" }

  it("the generic update and create refuse them, naming the methods; a create sets them from their default; methods change them", async () => {
    const id = await book(2)
    expect((await get(`books/${id}`)).json.available).toBe(1)
    const refused = await patch(`books/${id}`, { available: 99 })
    expect(refused.status).toBe(422)
    expect(refused.json).toEqual(GUARDED)
    // Even alongside a field that may change: nothing of it is written.
    expect((await patch(`books/${id}`, { title: "Emma", available: 1 })).json).toEqual(GUARDED)
    const books = await count("books")
    expect((await post("books", { title: "Dune", copies: 5, available: 5 })).json).toEqual(GUARDED)
    expect(await count("books")).toBe(books)
    expect((await get(`books/${id}`)).json).toMatchObject({ version: 1, title: "Dune", available: 1 })
    expect((await post(`books/${id}/check_in`, {})).json).toMatchObject({ version: 2, available: 2 })
    expect((await patch(`books/${id}`, { title: "Emma" })).json).toMatchObject({ version: 3, title: "Emma", available: 2 })
  })

  it("MCP refuses them the same way in both eras, and the create and update tools' inputSchemas leave them out", async () => {
    const id = await book(2)
    await expectSameRefusal("books_update", { id, available: 99 }, await patch(`books/${id}`, { available: 99 }), "Call books_check_out or books_check_in instead.")
    await expectSameRefusal("books_create", { title: "Dune", copies: 2, available: 2 }, await post("books", { title: "Dune", copies: 2, available: 2 }), "Call books_check_out or books_check_in instead.")
    const legacy = (await rpc(server.url, "tools/list")).json.result.tools
    const modern = (await modernRequest(server.url, "tools/list")).json.result.tools
    for (const [era, tools] of Object.entries({ legacy, modern })) {
      const tool = (name: string) => (tools as Array<{ name: string; inputSchema: { properties: object; required?: Array<string> } }>).find((t) => t.name === name)!
      expect(Object.keys(tool("books_update").inputSchema.properties).sort(), era).toEqual(["copies", "expectedVersion", "id", "title"])
      expect(Object.keys(tool("books_create").inputSchema.properties).sort(), era).toEqual(["copies", "title"])
      expect(tool("books_create").inputSchema.required, era).not.toContain("available")
      expect((tool("books_update") as any).description, era).toContain("available: changed by methods only.")
      // The row they answer with still has the field.
      expect(Object.keys((tool("books_update") as any).outputSchema.properties), era).toContain("available")
    }
  })
})

describe("references", () => {
  it("a create or update that sets a ref to no live row is refused, naming type and id; null and absent are fine", async () => {
    const loans = await count("loans")
    const missing = await post("loans", { book: "999", status: "open" })
    expect(missing.status).toBe(422)
    expect(missing.json).toEqual({ error: "Rejected", code: "missing_reference", message: "books 999 does not exist" })
    expect((await post("loans", { book: await book(), member: "42", status: "open" })).json)
      .toEqual({ error: "Rejected", code: "missing_reference", message: "members 42 does not exist" })
    expect(await count("loans")).toBe(loans)
    const member = (await post("members", { name: "Ada" })).json.id as string
    expect((await post("loans", { book: await book(), member, status: "open" })).status).toBe(201)
    expect((await post("loans", { book: await book(), member: null, status: "open" })).status).toBe(201)
    const id = await loan(await book())
    expect((await patch(`loans/${id}`, { book: "998" })).json).toEqual({ error: "Rejected", code: "missing_reference", message: "books 998 does not exist" })
    expect((await patch(`loans/${id}`, { status: "returned" })).json).toMatchObject({ version: 2, status: "returned" })
    await expectSameRefusal("loans_create", { book: "999", status: "open" }, await post("loans", { book: "999", status: "open" }), "Find an existing id with books_list.")
  })

  it("deleting a row live rows reference is refused, naming the first few; once they are gone it is allowed", async () => {
    const target = await book()
    const [a, b, c, d] = [await loan(target), await loan(target), await loan(target), await loan(target)]
    const refused = await del(`books/${target}`)
    expect(refused.status).toBe(422)
    expect(refused.json).toEqual({ error: "Rejected", code: "still_referenced", message: `loans ${a}, loans ${b}, loans ${c} and 1 more still reference books ${target}` })
    await expectSameRefusal("books_delete", { id: target }, refused)
    // Moving a loan to another book and deleting others frees the book, one by one.
    expect((await patch(`loans/${a}`, { book: await book() })).status).toBe(200)
    expect((await del(`loans/${b}`)).status).toBe(200)
    expect((await del(`loans/${c}`)).status).toBe(200)
    expect((await del(`books/${target}`)).json).toEqual({ error: "Rejected", code: "still_referenced", message: `loans ${d} still references books ${target}` })
    expect((await del(`loans/${d}`)).status).toBe(200)
    expect((await del(`books/${target}`)).status).toBe(200)
    expect((await get(`books/${target}`)).status).toBe(404)
  })
})

describe("references within one batch", () => {
  it("see the rows created and deleted earlier in the same batch", async () => {
    // Hold one write so that the commands below queue up and are decided together, in one batch.
    let holding = false
    let held = 0
    let release: () => void = () => undefined
    const gate = new Promise<void>((r) => (release = r))
    const batches: Array<number> = []
    const faults = Layer.succeed(LogFaults, {
      beforeWrite: (events: number) => {
        batches.push(events)
        return holding ? Effect.promise(() => (held++, gate)) : Effect.void
      }
    })
    const own = await startServer(library, {}, faults)
    try {
      const at = (path: string, body: unknown, method = "POST") => http(`${own.url}/api/${path}`, { method, body })
      expect((await at("books", { title: "kept", copies: 1 })).json.id).toBe("1")
      expect((await at("books", { title: "to delete", copies: 1 })).json.id).toBe("2")
      holding = true
      const blocker = at("members", { name: "blocker" })
      expect(await waitFor(() => held === 1)).toBe(true)
      holding = false
      let accepted = 0
      const run = (command: Command) =>
        own.runtime.runPromise(Effect.either(Effect.flatMap(Commands, (c) => c.execute(command, { onStage: (s) => void (s === "accepted" && accepted++) }))))
      const batch = [
        run({ _tag: "Create", type: "books", input: { title: "new", copies: 1 } }), // books 3
        run({ _tag: "Create", type: "loans", input: { book: "3", status: "open" } }), // refers to the book created just before
        run({ _tag: "Delete", type: "books", id: "2" }),
        run({ _tag: "Create", type: "loans", input: { book: "2", status: "open" } }), // the book deleted just before
        run({ _tag: "Create", type: "loans", input: { book: "1", status: "open" } }),
        run({ _tag: "Delete", type: "books", id: "1" }) // referenced by the loan created just before
      ]
      expect(await waitFor(() => accepted === batch.length)).toBe(true)
      batches.length = 0
      release()
      expect((await blocker).status).toBe(201)
      const results = await Promise.all(batch)
      const outcome = results.map((r) => (Either.isRight(r) ? `${r.right.event.kind} ${r.right.event.type} ${r.right.event.id}` : `${r.left._tag} ${"code" in r.left ? r.left.code : ""}: ${r.left.message}`))
      expect(outcome).toEqual([
        "created books 3",
        "created loans 1",
        "deleted books 2",
        "Rejected missing_reference: books 2 does not exist",
        "created loans 2",
        "Rejected still_referenced: loans 2 still references books 1"
      ])
      expect(batches).toEqual([4])
    } finally {
      await own.close()
    }
  })
})
