/** The grant module: the grammar checked against the catalog, and the one decision every surface asks. */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import library from "../../examples/library/app.ts"
import { allows, compileGrants, grantFor, grantsOf, Op, type Grants } from "../../src/access/grants.ts"
import { ANY, requestOperation, uriOperation } from "../../src/access/operations.ts"
import { may } from "../../src/access/principal.ts"
import { compileApp } from "../../src/domain/compile.ts"

const app = Either.getOrThrow(compileApp(library))
const grants = (...declared: Array<string>): Grants => Either.getOrThrow(compileGrants(app, declared))

describe("compileGrants", () => {
  it("accepts every grant the catalog allows", () => {
    expect(Either.isRight(compileGrants(app, grantsOf(app)))).toBe(true)
    expect(grantsOf(app)).toContain("books:check_out")
    expect(grantsOf(app)).toContain("command:lend")
    expect(grantsOf(app)).toContain("view:loans_by_member")
  })

  it("refuses an unknown type, method, command or view by name, every one of them", () => {
    const refused = compileGrants(app, ["magazines:read", "books:burn", "command:steal", "view:nothing", "root", "books:", "loans:read"])
    expect(Either.isLeft(refused)).toBe(true)
    const problems = Either.getLeft(refused).pipe((o) => (o._tag === "Some" ? o.value : []))
    expect(problems).toHaveLength(6)
    expect(problems.join("\n")).toMatch(/no type named magazines/)
    expect(problems.join("\n")).toMatch(/books has no operation named burn/)
    expect(problems.join("\n")).toMatch(/no command named steal/)
    expect(problems.join("\n")).toMatch(/no view named nothing/)
    expect(problems.join("\n")).toMatch(/"root" is not one of/)
  })
})

describe("allows", () => {
  it("admin allows everything, the console and metrics included", () => {
    const g = grants("admin")
    for (const op of [Op.read("books"), Op.write("books", "delete"), Op.command("lend"), Op.view("loans_by_member"), Op.metrics, Op.admin]) {
      expect(allows(g, op)).toBe(true)
    }
  })

  it("read allows every type's reads and every view, no write, command, metrics or admin", () => {
    const g = grants("read")
    expect(allows(g, Op.read("books"))).toBe(true)
    expect(allows(g, Op.read("loans"))).toBe(true)
    expect(allows(g, Op.view("loans_by_member"))).toBe(true)
    expect(allows(g, Op.write("books", "create"))).toBe(false)
    expect(allows(g, Op.command("lend"))).toBe(false)
    expect(allows(g, Op.metrics)).toBe(false)
    expect(allows(g, Op.admin)).toBe(false)
  })

  it("<type>:read reads that type only; <type>:<method> runs that method only", () => {
    const g = grants("books:read", "books:add_copies")
    expect(allows(g, Op.read("books"))).toBe(true)
    expect(allows(g, Op.read("members"))).toBe(false)
    expect(allows(g, Op.write("books", "add_copies"))).toBe(true)
    expect(allows(g, Op.write("books", "check_out"))).toBe(false)
    expect(allows(g, Op.write("books", "update"))).toBe(false)
    expect(allows(g, Op.view("loans_by_member"))).toBe(false)
  })

  it("<type>:* is every operation of the type, reads included, and nothing of another", () => {
    const g = grants("books:*")
    for (const action of ["create", "update", "delete", "add_copies", "check_out", "check_in"]) expect(allows(g, Op.write("books", action))).toBe(true)
    expect(allows(g, Op.read("books"))).toBe(true)
    expect(allows(g, Op.write("members", "create"))).toBe(false)
    expect(allows(g, Op.read("members"))).toBe(false)
  })

  it("command:<name> runs that command only, without any grant on the types it touches", () => {
    const g = grants("command:lend")
    expect(allows(g, Op.command("lend"))).toBe(true)
    expect(allows(g, Op.command("return"))).toBe(false)
    expect(allows(g, Op.write("books", "check_out"))).toBe(false)
  })

  it("view:<name> and metrics allow just that", () => {
    expect(allows(grants("view:loans_by_member"), Op.view("loans_by_member"))).toBe(true)
    expect(allows(grants("view:loans_by_member"), Op.read("loans"))).toBe(false)
    expect(allows(grants("metrics"), Op.metrics)).toBe(true)
    expect(allows(grants("metrics"), Op.read("books"))).toBe(false)
  })

  it("no grants allow nothing; no principal (no credential required) allows everything", () => {
    expect(allows(grants(), Op.read("books"))).toBe(false)
    expect(may({ name: "nobody" }, Op.read("books"))).toBe(false)
    expect(may(undefined, Op.admin)).toBe(true)
  })

  it("grantFor names the narrowest grant an operation needs", () => {
    expect(grantFor(Op.read("books"))).toBe("books:read")
    expect(grantFor(Op.write("books", "add_copies"))).toBe("books:add_copies")
    expect(grantFor(Op.command("lend"))).toBe("command:lend")
    expect(grantFor(Op.view("v"))).toBe("view:v")
    expect(grantFor(Op.metrics)).toBe("metrics")
  })
})

describe("operations of requests and URIs", () => {
  const op = (method: string, path: string) => requestOperation(method, path, "/metrics")
  it("REST: reads, the generic writes, methods, commands, views, the console, metrics", () => {
    expect(op("GET", "/api/books")).toEqual(Op.read("books"))
    expect(op("POST", "/api/books")).toEqual(Op.write("books", "create"))
    expect(op("GET", "/api/books/1")).toEqual(Op.read("books"))
    expect(op("PATCH", "/api/books/1")).toEqual(Op.write("books", "update"))
    expect(op("DELETE", "/api/books/1")).toEqual(Op.write("books", "delete"))
    expect(op("POST", "/api/books/1/add_copies")).toEqual(Op.write("books", "add_copies"))
    expect(op("GET", "/api/books/1/history")).toEqual(Op.read("books"))
    expect(op("POST", "/api/_commands/lend")).toEqual(Op.command("lend"))
    expect(op("GET", "/api/_views/loans_by_member")).toEqual(Op.view("loans_by_member"))
    // One entry of a keyed view is read under the view's grant, whatever its key.
    expect(op("GET", "/api/_views/loans_by_member/1")).toEqual(Op.view("loans_by_member"))
    expect(op("GET", "/api/_views/loans_by_member/a%2Fb")).toEqual(Op.view("loans_by_member"))
    expect(op("GET", "/api/_views")).toBe(ANY)
    expect(op("GET", "/api/_events")).toBe(ANY)
    expect(op("GET", "/api/_rows")).toEqual(Op.admin)
    expect(op("GET", "/api/_catalog")).toEqual(Op.admin)
    expect(op("GET", "/metrics")).toEqual(Op.metrics)
    expect(op("POST", "/mcp")).toBe(ANY)
    expect(op("GET", "/")).toBeUndefined()
    // An escaped segment is read as the name it spells.
    expect(op("GET", "/api/%62ooks")).toEqual(Op.read("books"))
  })

  it("URIs: rows, lists and schemas read their type; views their view", () => {
    expect(uriOperation("wo://books/1")).toEqual(Op.read("books"))
    expect(uriOperation("wo://books?author=x")).toEqual(Op.read("books"))
    expect(uriOperation("wo://schema/books")).toEqual(Op.read("books"))
    expect(uriOperation("wo://views/loans_by_member")).toEqual(Op.view("loans_by_member"))
    expect(uriOperation("wo://views/loans_by_member/1")).toEqual(Op.view("loans_by_member"))
    expect(uriOperation("wo://views/loans_by_member/a%2Fb%20c")).toEqual(Op.view("loans_by_member"))
    expect(uriOperation("wo://schema/_commands")).toBeUndefined()
    expect(uriOperation("https://example.com")).toBeUndefined()
  })
})
