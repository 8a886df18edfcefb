/** The pure core of an app command: decide isolated, changes decoded as REST would, one change per row, refusals. */
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { defineApp, entity, reject, type Row } from "../../src/index.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { decideCommand } from "../../src/domain/decide/command-decider.ts"
import { library } from "../../testkit/library-app.ts"

const compiled = Either.getOrThrow(compileApp(library))
const stored: Record<string, Row> = {
  "books/1": { id: "1", version: 3, title: "Dune", copies: 2, available: 1 },
  "books/2": { id: "2", version: 2, title: "Emma", copies: 1, available: 0 },
  "members/1": { id: "1", version: 1, name: "Ann" }
}
const rows = (type: string, id: string) => stored[`${type}/${id}`]
const errorOf = <A, E>(e: Either.Either<A, E>) => Either.match(e, { onLeft: (l) => l, onRight: () => undefined })
const lend = (params: Record<string, unknown>) =>
  decideCommand(compiled, compiled.commands.get("lend")!, params, rows, (type) => (type === "loans" ? 7 : 0))

describe("decideCommand", () => {
  it("decides every change: the method on the book and the loan's create with the next id", () => {
    const drafts = Either.getOrThrow(lend({ book: "1", member: "1" }))
    expect(drafts).toEqual([
      { type: "books", id: "1", current: stored["books/1"], draft: { kind: "invoked", method: "check_out", params: {}, data: { available: 0 } } },
      { type: "loans", id: "8", current: undefined, draft: { kind: "created", data: { book: "1", member: "1", status: "out" } } }
    ])
  })

  it("a method's refusal and decide's own reject are Rejected with their code", () => {
    expect(errorOf(lend({ book: "2", member: "1" }))).toMatchObject({ _tag: "Rejected", type: "books", code: "no_copies" })
    expect(errorOf(lend({ book: "1", member: "9" }))).toMatchObject({ _tag: "Rejected", code: "no_member", type: "lend", operation: "lend" })
  })

  it("a change to a missing row is NotFound", () => {
    expect(errorOf(lend({ book: "5", member: "1" }))).toMatchObject({ _tag: "NotFound", type: "books", id: "5" })
  })

  it("the author's bugs are MethodFailed naming the command: a throw, a bad return, two changes to one row, unknown names", () => {
    const app = defineApp({
      name: "bugs",
      entities: { items: entity({ fields: { n: Schema.Int }, methods: { bump: { params: {}, apply: (i) => ({ n: i.n + 1 }) } } }) },
      commands: {
        throws: { params: {}, decide: () => { throw new Error("boom") } },
        returns_number: { params: {}, decide: () => 42 as never },
        twice: { params: {}, decide: (ctx) => [ctx.invoke("items", "1", "bump"), ctx.update("items", "1", { n: 5 })] },
        unknown_type: { params: {}, decide: (ctx) => [ctx.create("nope" as never, {})] },
        unknown_get: { params: {}, decide: (ctx) => (ctx.get("nope" as never, "1") ? [] : []) },
        function_input: { params: {}, decide: (ctx) => [ctx.create("items", { n: (() => 1) as never })] },
        bad_input: { params: {}, decide: (ctx) => [ctx.create("items", { n: "x" as never })] },
        refuses: { params: {}, decide: () => reject("nope") },
        revoked: { params: {}, decide: () => { const { proxy, revoke } = Proxy.revocable([], {}); revoke(); return proxy } },
        getter: { params: {}, decide: () => [{ get _tag(): string { throw new Error("read me not") }, type: "items", input: {} }] as never },
        promise: { params: {}, decide: (() => Promise.resolve([])) as never }
      }
    })
    const c = Either.getOrThrow(compileApp(app))
    const run = (name: string) => decideCommand(c, c.commands.get(name)!, {}, () => ({ id: "1", version: 1, n: 1 }), () => 0)
    const error = (name: string) => errorOf(run(name))
    expect(error("throws")).toMatchObject({ _tag: "MethodFailed", type: "throws", operation: "throws", reason: "boom" })
    expect(error("returns_number")).toMatchObject({ _tag: "MethodFailed", reason: expect.stringContaining("not a list of changes") })
    expect(error("twice")).toMatchObject({ _tag: "MethodFailed", reason: expect.stringContaining("items 1 twice") })
    expect(error("unknown_type")).toMatchObject({ _tag: "MethodFailed", reason: expect.stringContaining("names no type") })
    expect(error("unknown_get")).toMatchObject({ _tag: "MethodFailed", reason: expect.stringContaining("no type \"nope\"") })
    expect(error("function_input")).toMatchObject({ _tag: "MethodFailed", reason: expect.stringContaining("not JSON data") })
    expect(error("bad_input")).toMatchObject({ _tag: "ValidationFailed", type: "items" })
    expect(error("refuses")).toMatchObject({ _tag: "Rejected", code: "rejected", message: "nope" })
    // Hostile returns: whatever decide gives back is read isolated, never throws out of the Decider.
    expect(error("revoked")).toMatchObject({ _tag: "MethodFailed", type: "revoked" })
    expect(error("getter")).toMatchObject({ _tag: "MethodFailed", reason: "read me not" })
    expect(error("promise")).toMatchObject({ _tag: "MethodFailed", reason: expect.stringContaining("Promise") })
  })

  it("compile refuses bad command names, clashes with tools and types, reserved params", () => {
    const bad = compileApp(defineApp({
      name: "bad",
      entities: { items: entity({ fields: { n: Schema.Int } }) },
      commands: {
        items_create: { params: {}, decide: () => [] },
        items: { params: {}, decide: () => [] },
        Bad: { params: {}, decide: () => [] },
        reserved: { params: { id: Schema.String }, decide: () => [] },
        nodecide: { params: {} } as never
      }
    }))
    expect(Either.isLeft(bad) && bad.left.problems).toEqual([
      expect.stringContaining(`command "items_create": clashes with the MCP tool`),
      expect.stringContaining(`command "items": clashes with the type`),
      expect.stringContaining(`command "Bad": names must match`),
      expect.stringContaining(`command "reserved", param "id": the name is reserved`),
      expect.stringContaining(`command "nodecide": needs a decide function`)
    ])
  })
})
