/**
 * Decider specs of app commands (`DeciderSpecification.forCommand`): given rows of several types, when the
 * command's params, then the events on each row, or the refusal or error; decided by the writer's pure core.
 */
import { Schema } from "effect"
import { describe, expect, it } from "vitest"
import { defineApp, entity, reject } from "../../src/domain/catalog.ts"
import { ref } from "../../src/domain/rules/refs.ts"
import { created, DeciderSpecification, type EventOf, invoked, SpecFailed, updated } from "../../src/testing/index.ts"
import library from "../../examples/library/app.ts"

type BookEvent = EventOf<typeof library, "books">
const dune: BookEvent = created({ title: "Dune", author: "Frank Herbert", copies: 0, available: 0 })
const oneCopy: ReadonlyArray<BookEvent> = [dune, invoked("add_copies", { copies: 1, available: 1 })]
const ann: EventOf<typeof library, "members"> = created({ name: "Ann" })
const lend = DeciderSpecification.forCommand(library, "lend")
const giveBack = DeciderSpecification.forCommand(library, "return")

const failure = (run: () => void): string => {
  try {
    run()
  } catch (e) {
    expect(e).toBeInstanceOf(SpecFailed)
    return (e as SpecFailed).message
  }
  throw new Error("expected the spec to fail")
}

describe("DeciderSpecification.forCommand", () => {
  it("given rows of several types, when params, then the events on each row (a create takes the next id)", () => {
    lend({ books: { "1": oneCopy }, members: { "1": ann }, loans: { "4": created({ book: "1", member: "1", status: "returned" }) } })
      .when({ book: "1", member: "1" })
      .then({
        books: { "1": [invoked("check_out", { available: 0 }, {})] },
        loans: { "5": created({ book: "1", member: "1", status: "out" }) }
      })
  })

  it("says how the events differ, with a diff, naming the type and the id", () => {
    const when = lend({ books: { "1": oneCopy }, members: { "1": ann } }).when({ book: "1", member: "1" })
    const wrongData = failure(() => when.then({
      books: { "1": invoked("check_out", { available: 1 }) },
      loans: { "1": created({ book: "1", member: "1", status: "out" }) }
    }))
    expect(wrongData).toContain("the decided events differ (- expected, + actual)")
    expect(wrongData).toMatch(/^\s+- +"available": 1$/m)
    expect(wrongData).toMatch(/^\s+\+ +"available": 0$/m)
    // A row the command changes but `then` does not name fails too: `then` names every changed row.
    const missingRow = failure(() => when.then({ books: { "1": invoked("check_out", { available: 0 }) } }))
    expect(missingRow).toMatch(/^\s+\+ +"loans": \{$/m)
    // And so does a row named at the wrong id.
    const wrongId = failure(() => when.then({
      books: { "1": invoked("check_out", { available: 0 }) },
      loans: { "2": created({ book: "1", member: "1", status: "out" }) }
    }))
    expect(wrongId).toMatch(/^\s+- +"2": \[$/m)
    expect(wrongId).toMatch(/^\s+\+ +"1": \[$/m)
  })

  it("thenRejects: a method's refusal inside the command, and the command's own reject, by code", () => {
    const lentOut: ReadonlyArray<BookEvent> = [...oneCopy, invoked("check_out", { available: 0 })]
    lend({ books: { "1": lentOut }, members: { "1": ann } }).when({ book: "1", member: "1" }).thenRejects("no_copies", `no copy of "Dune"`)
    giveBack({}).when({ loan: "3" }).thenRejects("missing_reference", "loans 3 does not exist")
    expect(failure(() => lend({ books: { "1": lentOut }, members: { "1": ann } }).when({ book: "1", member: "1" }).thenRejects("other")))
      .toBe(`expected Rejected with code "other", got Rejected with code "no_copies": no copy of "Dune" is available`)
    expect(failure(() => lend({ books: { "1": oneCopy }, members: { "1": ann } }).when({ book: "1", member: "1" }).thenRejects("no_copies")))
      .toMatch(/^expected Rejected with code "no_copies", but the command decided:\n[\s\S]*"loans"[\s\S]*"status": "out"/)
  })

  it("thenFails: params decoded by the command's schema, the author's bugs; a missing ref param is a refusal", () => {
    // @ts-expect-error: book is a string (a ref); the runtime refuses it for untyped callers
    lend({}).when({ book: 1, member: "1" }).thenFails("ValidationFailed", "book")
    // A ref param naming no live row is refused as a reference, before the command's code runs.
    lend({ members: { "1": ann } }).when({ book: "9", member: "1" }).thenRejects("missing_reference", "books 9 does not exist")
    const buggy = defineApp({
      name: "buggy",
      entities: { notes: entity({ fields: { text: Schema.String } }) },
      commands: {
        boom: { params: {}, decide: () => { throw new Error("kaput") } },
        twice: { params: {}, decide: (ctx) => [ctx.update("notes", "1", { text: "a" }), ctx.update("notes", "1", { text: "b" })] },
        fine: { params: {}, decide: (ctx) => (ctx.get("notes", "1") === undefined ? reject("no_note", "no note 1") : [ctx.update("notes", "1", { text: "b" })]) }
      }
    })
    DeciderSpecification.forCommand(buggy, "boom")().when().thenFails("MethodFailed", "kaput")
    DeciderSpecification.forCommand(buggy, "twice")({ notes: { "1": created({ text: "a" }) } }).when().thenFails("MethodFailed", "twice")
    DeciderSpecification.forCommand(buggy, "fine")({ notes: { "1": created({ text: "a" }) } }).when().then({ notes: { "1": updated({ text: "b" }) } })
    expect(failure(() => DeciderSpecification.forCommand(buggy, "fine")().when().thenFails("NotFound")))
      .toBe("expected NotFound, got Rejected: no note 1")
  })

  it("checks references as the writer does, against the given rows and the command's own earlier changes", () => {
    lend({ books: { "1": oneCopy } }).when({ book: "1", member: "9" }).thenRejects("missing_reference", "members 9 does not exist")
    // A member deleted before is no member either.
    lend({ books: { "1": oneCopy }, members: { "9": [ann, { kind: "deleted" }] } })
      .when({ book: "1", member: "9" })
      .thenRejects("missing_reference", "members 9 does not exist")
    // A row the command creates can be referenced by a later change of the same command.
    const shelf = defineApp({
      name: "shelf",
      entities: {
        shelves: entity({ fields: { name: Schema.String } }),
        books: entity({ fields: { title: Schema.String, shelf: ref("shelves") } })
      },
      commands: {
        shelve: {
          params: { title: Schema.String },
          decide: (ctx, { title }) => [ctx.create("shelves", { name: "new" }), ctx.create("books", { title, shelf: "3" })]
        }
      }
    })
    DeciderSpecification.forCommand(shelf, "shelve")({ shelves: { "2": created({ name: "old" }) } })
      .when({ title: "Dune" })
      .then({ shelves: { "3": created({ name: "new" }) }, books: { "1": created({ title: "Dune", shelf: "3" }) } })
    // With no shelf given, the new one is shelf 1, and shelf 3 does not exist.
    DeciderSpecification.forCommand(shelf, "shelve")()
      .when({ title: "Dune" })
      .thenRejects("missing_reference", "shelves 3 does not exist")
  })

  it("checks the given rows against their types, and names what the app does not have", () => {
    expect(failure(() =>
      // @ts-expect-error: a created member needs a name; the runtime checks for untyped callers
      lend({ members: { "1": created({}) } }).when({ book: "1", member: "1" }).thenFails()
    )).toMatch(/^given event 1 of members 1 \(created\) does not fit members: /)
    expect(failure(() =>
      // @ts-expect-error: no type "bokos"
      lend({ bokos: { "1": dune } }).when({ book: "1", member: "1" }).thenFails()
    )).toBe(`given rows of "bokos": app "library" has no such type (it has: books, members, loans)`)
    expect(failure(() => lend({ members: { ann } }).when({ book: "1", member: "1" }).thenFails()))
      .toBe(`given row members "ann": ids are the store's, positive integers ("1", "2", ...)`)
    // @ts-expect-error: no command "lned"
    expect(() => DeciderSpecification.forCommand(library, "lned")).toThrow(`app "library" has no command "lned" (it has: lend, return)`)
  })
})
