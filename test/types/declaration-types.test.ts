/**
 * Types flow from the declaration to every use. The checks here are compile-time:
 * `npm run typecheck` (tsc over test/) fails on an unused `@ts-expect-error` (a hole that compiles again) and on
 * a wrong `expectTypeOf`. The runtime part only makes sure the declarations load and the specs run.
 */
import { Option, Schema } from "effect"
import { describe, expect, expectTypeOf, it } from "vitest"
import { defineApp, entity, reject, type AppDef } from "../../src/domain/catalog.ts"
import { create, created, DeciderSpecification, invoke, invoked, update, updated } from "../../src/testing/decider-spec.ts"

// An inline data-first `Schema.optionalWith` must not widen the fields to an index signature of `any` (a typo in a
// method would then compile): the fields refuse to compile, with a message that says what to write.
export const inlineDefault = entity({
  fields: {
    // @ts-expect-error: writeonce: fields not inferred; write Schema.X.pipe(Schema.optionalWith({...})), ...
    title: Schema.String,
    done: Schema.optionalWith(Schema.Boolean, { default: () => false })
  },
  methods: {
    complete: {
      params: {},
      // @ts-expect-error: no field "dnoe" (and the change below is no change of this type)
      apply: (task) => (task.dnoe ? reject("x") : { dnoe: "yes" })
    }
  }
})

export const inlineNullable = entity({
  fields: {
    // @ts-expect-error: the same for { nullable: true }
    title: Schema.String,
    due: Schema.optionalWith(Schema.String, { nullable: true })
  },
  methods: {
    // @ts-expect-error: no field "dnoe"
    touch: { params: {}, apply: (task) => ({ title: String(task.dnoe) }) }
  }
})

export const inlineParams = entity({
  fields: { title: Schema.String },
  methods: {
    // @ts-expect-error: params that could not be inferred are not `any` either
    rename: { params: { to: Schema.optionalWith(Schema.String, { exact: true }) }, apply: (_task, p) => ({ title: p.to }) }
  }
})

// Every field kind, inline, in the pipeable form: the row is what the writer passes (decoded), precisely.
const Cents = Schema.Int.pipe(Schema.nonNegative(), Schema.brand("Cents"))
export const everyKind = entity({
  fields: {
    title: Schema.String.pipe(Schema.minLength(1)),
    done: Schema.Boolean.pipe(Schema.optionalWith({ default: () => false })),
    note: Schema.optional(Schema.String),
    due: Schema.String.pipe(Schema.optionalWith({ nullable: true })),
    tag: Schema.String.pipe(Schema.optionalWith({ exact: true })),
    owner: Schema.String.pipe(Schema.optionalWith({ as: "Option" })),
    reviewer: Schema.NullOr(Schema.String),
    created: Schema.Date,
    status: Schema.Literal("open", "closed"),
    author: Schema.Struct({ name: Schema.String, email: Schema.optional(Schema.String) }),
    labels: Schema.Array(Schema.String),
    count: Schema.Int.pipe(Schema.nonNegative()),
    price: Cents
  },
  methods: {
    close: {
      params: { at: Schema.Date, reason: Schema.String.pipe(Schema.optionalWith({ default: () => "done" })) },
      apply: (row, params) => {
        expectTypeOf(row.id).toEqualTypeOf<string>()
        expectTypeOf(row.version).toEqualTypeOf<number>()
        expectTypeOf(row.title).toEqualTypeOf<string>()
        expectTypeOf(row.done).toEqualTypeOf<boolean>()
        expectTypeOf(row.note).toEqualTypeOf<string | undefined>()
        expectTypeOf(row.due).toEqualTypeOf<string | undefined>()
        expectTypeOf(row.tag).toEqualTypeOf<string | undefined>()
        expectTypeOf(row.owner).toEqualTypeOf<Option.Option<string>>()
        expectTypeOf(row.reviewer).toEqualTypeOf<string | null>()
        expectTypeOf(row.created).toEqualTypeOf<Date>()
        expectTypeOf(row.status).toEqualTypeOf<"open" | "closed">()
        expectTypeOf(row.author).toEqualTypeOf<{ readonly name: string; readonly email?: string }>()
        expectTypeOf(row.labels).toEqualTypeOf<ReadonlyArray<string>>()
        expectTypeOf(row.count).toEqualTypeOf<number>()
        expectTypeOf(row.price).toEqualTypeOf<number & import("effect").Brand.Brand<"Cents">>()
        expectTypeOf(params.at).toEqualTypeOf<Date>()
        expectTypeOf(params.reason).toEqualTypeOf<string>()
        // @ts-expect-error: no field "dnoe"
        void row.dnoe
        return row.status === "closed" ? reject("already closed") : { status: "closed", due: params.at.toISOString() }
      }
    },
    // The change a method returns is typed too.
    // @ts-expect-error: a value of the wrong type
    archive: { params: {}, apply: () => ({ status: "archived" }) },
    // @ts-expect-error: only fields the type does not have
    misspell: { params: {}, apply: () => ({ dnoe: true }) },
    // @ts-expect-error: a plain number is not a branded Cents
    reprice: { params: {}, apply: () => ({ price: 3 }) },
    // @ts-expect-error: a Date field takes a Date (the decoded form), not its JSON string
    reschedule: { params: {}, apply: () => ({ created: "2026-01-01" }) }
  }
})

// `defineApp` keeps the app's type, and the decider specs check names and values against it.
const Book = { title: Schema.String, copies: Schema.Int, available: Schema.Int }
const library = defineApp({
  name: "library",
  entities: {
    books: entity({
      fields: Book,
      methods: {
        check_out: { params: { copies: Schema.Int }, apply: (book, p) => (book.available < p.copies ? reject("none left") : { available: book.available - p.copies }) },
        check_in: { params: {}, apply: (book) => ({ available: book.available + 1 }) }
      }
    }),
    members: entity({ fields: { name: Schema.String } })
  }
})

describe("types flow from the declaration", () => {
  it("defineApp keeps entity names, fields and methods, and stays an AppDef", () => {
    expectTypeOf(library.entities.books.fields).toEqualTypeOf<typeof Book>()
    expectTypeOf<keyof typeof library.entities.books.methods>().toEqualTypeOf<"check_out" | "check_in">()
    expectTypeOf(library).toMatchTypeOf<AppDef>()
    type CheckOut = typeof library.entities.books.methods.check_out.apply
    expectTypeOf<Parameters<CheckOut>[0]["available"]>().toEqualTypeOf<number>()
    expectTypeOf<Parameters<CheckOut>[1]>().toEqualTypeOf<{ readonly copies: number }>()
  })

  it("decider specs refuse unknown types, methods and fields, and wrong values, at compile time", () => {
    // @ts-expect-error: no type "bokos"
    expect(() => DeciderSpecification.for(library, "bokos")).toThrow(`no type "bokos"`)
    const given = DeciderSpecification.for(library, "books")
    const book = created({ title: "Dune", copies: 2, available: 2 })
    expect(() => given([
      // @ts-expect-error: a created event needs every required field...
      created({ title: "Dune" }),
      // @ts-expect-error: ...and knows no "avialable"
      updated({ avialable: 1 }),
      // @ts-expect-error: no method "renw"
      invoked("renw", {})
    ])).not.toThrow()
    const when = given([created({ title: "Dune", copies: 2, available: 2 })])
    // @ts-expect-error: no method "renw"
    expect(() => when.when(invoke("renw")).thenFails("ValidationFailed", /no method/)).not.toThrow()
    // @ts-expect-error: copies is a number
    when.when(invoke("check_out", { copies: "1" })).thenFails("ValidationFailed")
    // @ts-expect-error: check_out has no param "borower"
    when.when(invoke("check_out", { copies: 1, borower: "ann" })).thenFails("ValidationFailed")
    // @ts-expect-error: check_in takes no params (at run time they are ignored: see the report)
    when.when(invoke("check_in", { copies: 1 }))
    // @ts-expect-error: no field "borower"
    when.when(create({ title: "Dune", copies: 1, available: 1, borower: "ann" })).thenFails("ValidationFailed")
    // @ts-expect-error: copies is a number
    when.when(update({ copies: "2" })).thenFails("ValidationFailed")
    // @ts-expect-error: the event names a field the type does not have
    expect(() => when.when(invoke("check_out", { copies: 1 })).then([invoked("check_out", { avialable: 1 })])).toThrow()
    // And the right ones compile and pass.
    when.when(invoke("check_out", { copies: 1 })).then([invoked("check_out", { available: 1 }, { copies: 1 })])
    expectTypeOf(book).not.toBeAny()
  })

  it("an app typed as AppDef (erased) still takes any name, as before", () => {
    const erased: AppDef = library
    DeciderSpecification.for(erased, "books")([created({ title: "Dune", copies: 1, available: 1 })])
      .when(invoke("check_out", { copies: 1 }))
      .then(invoked("check_out", { available: 0 }))
  })
})
