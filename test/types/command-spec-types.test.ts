/**
 * App command specs are typed from the app: an unknown command, an unknown type
 * in the given or decided rows, an unknown field or method in their events and a param of the wrong type are
 * compile errors. `npm run typecheck` fails on an unused `@ts-expect-error`; the runtime part runs the specs.
 */
import { describe, expect, expectTypeOf, it } from "vitest"
import type { AppDef } from "../../src/domain/catalog.ts"
import { created, DeciderSpecification, invoked, SpecFailed, type CommandName, type CommandParams } from "../../src/testing/index.ts"
import library from "../../examples/library/app.ts"

describe("command specs are typed by the app", () => {
  it("knows the app's commands and their params", () => {
    // (Both ways, as expectTypeOf's equality does not see through the mapped types.)
    expectTypeOf<CommandName<typeof library>>().toMatchTypeOf<"lend" | "return">()
    expectTypeOf<"lend" | "return">().toMatchTypeOf<CommandName<typeof library>>()
    expectTypeOf<CommandParams<typeof library, "lend">>().toMatchTypeOf<{ readonly book: string; readonly member: string }>()
    expectTypeOf<{ readonly book: string; readonly member: string }>().toMatchTypeOf<CommandParams<typeof library, "lend">>()
    expectTypeOf<CommandParams<typeof library, "lend">>().not.toBeAny()
    // @ts-expect-error: no command "lned"
    expect(() => DeciderSpecification.forCommand(library, "lned")).toThrow(SpecFailed)
  })

  it("refuses unknown types, fields and methods in rows, and wrong params, at compile time", () => {
    const lend = DeciderSpecification.forCommand(library, "lend")
    const given = lend({
      books: { "1": [created({ title: "Dune", author: "Frank Herbert", copies: 1, available: 1 })] },
      members: { "1": created({ name: "Ann" }) }
    })
    // @ts-expect-error: member is missing
    expect(() => given.when({ book: "1" }).thenFails("ValidationFailed")).not.toThrow()
    // @ts-expect-error: book is a string
    expect(() => given.when({ book: 1, member: "1" }).thenFails("ValidationFailed")).not.toThrow()
    // @ts-expect-error: lend has no param "borrower"
    expect(() => given.when({ book: "1", member: "1", borrower: "Ann" }).thenFails("ValidationFailed")).not.toThrow()
    expect(() =>
      lend({
        // @ts-expect-error: a member has no field "nmae"
        members: { "1": created({ nmae: "Ann" }) }
      })
    ).not.toThrow()
    // @ts-expect-error: no type "bokos" in the given rows
    expect(() => lend({ bokos: {} })).not.toThrow()
    const when = given.when({ book: "1", member: "1" })
    expect(() =>
      when.then({
        // @ts-expect-error: books have no method "chek_out"
        books: { "1": invoked("chek_out", { available: 0 }) },
        loans: { "1": created({ book: "1", member: "1", status: "out" }) }
      })
    ).toThrow(SpecFailed)
    expect(() =>
      when.then({
        books: { "1": invoked("check_out", { available: 0 }) },
        // @ts-expect-error: a loan's status is "out" or "returned"
        loans: { "1": created({ book: "1", member: "1", status: "lent" }) }
      })
    ).toThrow(SpecFailed)
    // @ts-expect-error: no type "lones" in the decided rows
    expect(() => when.then({ lones: {} })).toThrow(SpecFailed)
    // And the right ones compile and pass.
    when.then({ books: { "1": invoked("check_out", { available: 0 }) }, loans: { "1": created({ book: "1", member: "1", status: "out" }) } })
  })

  it("an app typed as AppDef (erased) takes any name, as before", () => {
    const erased: AppDef = library
    expectTypeOf<CommandName<typeof erased>>().toEqualTypeOf<string>()
    DeciderSpecification.forCommand(erased, "return")({ loans: { "1": created({ book: "1", member: "1", status: "returned" }) } })
      .when({ loan: "1" })
      .thenRejects("already_returned")
  })
})
