/**
 * Principals from the access file are the actors of the events they make: the history of a book names who did each
 * thing, the event tail filters by that name, and a principal that may not read a type sees neither its history
 * nor its events.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { modern, rest, startWithAccess, tokenOf } from "../../testkit/access-server.ts"
import { eventTail } from "../../testkit/sse.ts"

const PRINCIPALS = [
  { name: "librarian", grants: ["books:*", "members:*", "loans:read", "command:lend", "command:return"] },
  { name: "lending-desk", grants: ["books:read", "members:read", "loans:read", "command:lend", "command:return"] },
  { name: "members-only", grants: ["members:read"] }
]

const tail = (url: string, token: string, query = "") => eventTail(url, query, { authorization: `Bearer ${token}` })

describe("principals as actors", () => {
  let server: Awaited<ReturnType<typeof startWithAccess>>
  let book: string
  let loan: string

  beforeAll(async () => {
    server = await startWithAccess(PRINCIPALS)
    const librarian = tokenOf("librarian")
    book = (await rest(server.url, "POST", "/api/books", librarian, { title: "Dune", author: "Frank Herbert" })).json.id
    expect((await rest(server.url, "POST", `/api/books/${book}/add_copies`, librarian, { n: 2 })).status).toBe(200)
    const member = (await rest(server.url, "POST", "/api/members", librarian, { name: "Ada" })).json.id
    const lent = await rest(server.url, "POST", "/api/_commands/lend", tokenOf("lending-desk"), { book, member })
    expect(lent.status).toBe(200)
    loan = lent.json.changes.find((c: { type: string }) => c.type === "loans").id
  })
  afterAll(() => server.close())

  it("the history of a book names who did each thing", async () => {
    const history = await rest(server.url, "GET", `/api/books/${book}/history`, tokenOf("lending-desk"))
    expect(history.status).toBe(200)
    expect(history.json.items.map((e: any) => [e.version, e.kind, e.method, e.actor.principal, e.actor.client])).toEqual([
      [1, "created", undefined, "librarian", "rest"],
      [2, "invoked", "add_copies", "librarian", "rest"],
      [3, "invoked", "check_out", "lending-desk", "rest"]
    ])
  })

  it("the tail filtered by actor holds that principal's events only, the command's two among them", async () => {
    const desk = await tail(server.url, tokenOf("librarian"), "&actor=lending-desk")
    expect(desk.map((e) => [e.type, e.id, e.actor.principal])).toEqual([["books", book, "lending-desk"], ["loans", loan, "lending-desk"]])
    expect(new Set(desk.map((e) => e.correlation)).size).toBe(1)
  })

  it("a principal that may not read books sees neither a book's history (REST or MCP) nor its events", async () => {
    const history = await rest(server.url, "GET", `/api/books/${book}/history`, tokenOf("members-only"))
    expect(history.status).toBe(403)
    expect(history.json).toMatchObject({ error: "Forbidden", grant: "books:read" })
    // The same over MCP: the history resource is refused naming the grant, and read by one who may.
    const uri = `wo://books/${book}/history`
    const refused = await modern(server.url, tokenOf("members-only"), "resources/read", { uri }, uri)
    expect(refused.status).toBe(403)
    expect(refused.json.error).toMatchObject({ code: 403, data: { grant: "books:read" } })
    const read = await modern(server.url, tokenOf("lending-desk"), "resources/read", { uri }, uri)
    expect(read.status).toBe(200)
    expect(JSON.parse(read.json.result.contents[0].text).items).toHaveLength(3)
    const events = await tail(server.url, tokenOf("members-only"))
    expect(events.map((e) => e.type)).toEqual(["members"])
    expect(events[0].actor.principal).toBe("librarian")
  })
})
