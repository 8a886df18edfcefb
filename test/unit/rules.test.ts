/**
 * Rules no caller can bypass, without I/O: decider specs refuse what the writer refuses (invariants, guarded
 * fields), and the load-time problems of a wrong declaration, each naming the type and the rule.
 */
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { defineApp, entity, type AppDef } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { ref } from "../../src/domain/rules/refs.ts"
import { create, created, DeciderSpecification, type EventOf, invoke, invoked, update, updated } from "../../src/testing/decider-spec.ts"
import { IN_RANGE, library } from "../../testkit/library-rules.ts"

const given = DeciderSpecification.for(library, "books")
const dune: EventOf<typeof library, "books"> = created({ title: "Dune", copies: 1, available: 1 })

describe("decider specs check the rules the writer checks", () => {
  it("an invariant: thenRejects(code) for a method, an update and a create that would break it", () => {
    given([dune]).when(invoke("check_in")).thenRejects("available_in_range", IN_RANGE)
    given([dune]).when(update({ copies: 0 })).thenRejects("available_in_range")
    given([]).when(create({ title: "Dune", copies: 0 })).thenRejects("available_in_range")
    // Within the rule, the events are decided as before.
    given([dune]).when(invoke("check_out")).then([invoked("check_out", { available: 0 })])
    given([dune]).when(update({ copies: 2 })).then([updated({ copies: 2 })])
  })

  it("a guarded field: the generic update and create refuse it, naming the methods; the create sets it from its default", () => {
    given([dune]).when(update({ available: 0 })).thenRejects("guarded_field", "available is changed only by methods: check_out, check_in")
    given([]).when(create({ title: "Dune", copies: 1, available: 1 })).thenRejects("guarded_field")
    given([]).when(create({ title: "Dune", copies: 1 })).then([created({ title: "Dune", copies: 1, available: 1 })])
  })

  it("a guarded field of a type without methods says so", () => {
    const app = defineApp({
      name: "a",
      entities: { counters: entity({ fields: { n: Schema.Int.pipe(Schema.optionalWith({ default: () => 0 })) }, guarded: ["n"] }) }
    })
    DeciderSpecification.for(app, "counters")([created({ n: 0 })]).when(update({ n: 3 }))
      .thenRejects("guarded_field", "n is changed only by methods (no method of counters that changes it is exposed)")
  })

  it("a guarded field's refusal names only the exposed methods that change it; a method that sets a field its changes do not list fails", () => {
    const app = defineApp({
      name: "a",
      entities: {
        counters: entity({
          fields: { n: Schema.Int.pipe(Schema.optionalWith({ default: () => 0 })), label: Schema.String },
          guarded: ["n"],
          methods: {
            bump: { params: {}, changes: ["n"], apply: (c) => ({ n: c.n + 1 }) },
            rename: { params: { label: Schema.String }, changes: ["label"], apply: (_c, { label }) => ({ label }) },
            reset: { params: {}, changes: ["n"], apply: () => ({ n: 0 }) },
            sneaky: { params: {}, changes: ["label"], apply: (c) => ({ label: "x", n: c.n + 100 }) }
          },
          // reset changes n but is not exposed; rename is exposed but never changes n.
          rest: ["get", "update", "bump", "rename", "sneaky"]
        })
      }
    })
    const spec = DeciderSpecification.for(app, "counters")
    spec([created({ n: 0, label: "a" })]).when(update({ n: 3 })).thenRejects("guarded_field", "n is changed only by methods: bump")
    spec([created({ n: 0, label: "a" })]).when(invoke("sneaky")).thenFails("MethodFailed", /it changed n, which its changes do not list/)
  })
})

const problemsOf = (app: unknown): ReadonlyArray<string> =>
  Either.match(compileApp(app as AppDef), { onLeft: (e) => e.problems, onRight: () => [] })

describe("load-time problems", () => {
  const base = { title: Schema.String, copies: Schema.Int }

  it("an invariant without a check or a message, or with a code clients cannot branch on", () => {
    expect(problemsOf({
      name: "a",
      entities: {
        books: {
          fields: base,
          methods: {},
          invariants: { no_check: { message: "x" }, no_message: { check: () => true }, "Bad-Code": { check: () => true, message: "x" } }
        }
      }
    })).toEqual([
      'type "books", invariant "no_check": needs a check function, (row) => boolean',
      'type "books", invariant "no_message": needs a message (what the refusal says)',
      'type "books", invariant "Bad-Code": codes must match /^[a-z][a-z0-9_]*$/ (clients branch on them)'
    ])
  })

  it("an index on a field lists cannot filter or order by, or not a field or a pair", () => {
    expect(problemsOf({
      name: "a",
      entities: { books: { fields: { ...base, tags: Schema.Array(Schema.String) }, methods: {}, indexes: ["title", ["title", "copies"], "tags", "nope", ["title", "copies", "title"]] } }
    })).toEqual([
      'type "books", index "tags": lists can only filter and order by scalar and literal fields',
      'type "books", index "nope": lists can only filter and order by scalar and literal fields',
      'type "books", index ["title","copies","title"]: a field, or a pair [filter, order]'
    ])
    expect(problemsOf({ name: "a", entities: { books: { fields: base, methods: {}, indexes: "title" } } })).toEqual([
      'type "books": indexes must be a list of field names (or [filter, order] pairs)'
    ])
  })

  it("a guarded name that is no field, or a guarded field a create could not set", () => {
    expect(problemsOf({ name: "a", entities: { books: { fields: base, methods: {}, guarded: ["nope", "copies"] } } })).toEqual([
      'type "books", guarded field "nope": not a field of the type',
      'type "books", guarded field "copies": a create cannot set it, so it needs a default (Schema.optionalWith(..., { default })) or must be optional'
    ])
    // Optional fields and fields with a default may be guarded.
    expect(problemsOf({
      name: "a",
      entities: { books: { fields: { ...base, a: Schema.optional(Schema.Int), b: Schema.optionalWith(Schema.Int, { default: () => 0 }) }, methods: {}, guarded: ["a", "b"] } }
    })).toEqual([])
  })

  it("a ref to a type the app does not declare", () => {
    expect(problemsOf({ name: "a", entities: { loans: { fields: { book: ref("books"), other: Schema.NullOr(ref("nowhere")) }, methods: {} } } })).toEqual([
      'type "loans", field "book": ref("books") names no entity type of the app',
      'type "loans", field "other": ref("nowhere") names no entity type of the app'
    ])
  })
})

describe("references are recorded per type, through optional and NullOr wrappers", () => {
  it("each type knows its ref fields, and which fields reference it", () => {
    const compiled = Either.getOrThrow(compileApp(defineApp({
      name: "a",
      entities: {
        books: entity({ fields: { title: Schema.String } }),
        members: entity({ fields: { name: Schema.String } }),
        loans: entity({
          fields: {
            book: ref("books"),
            member: ref("members").pipe(Schema.optional),
            second: Schema.NullOr(ref("books")),
            third: ref("books").pipe(Schema.optionalWith({ nullable: true })),
            previous: Schema.NullOr(ref("loans")).pipe(Schema.optional),
            note: Schema.String
          }
        })
      }
    })))
    const rules = (t: string) => compiled.types.get(t)!.rules
    expect([...rules("loans").refs]).toEqual([["book", "books"], ["member", "members"], ["second", "books"], ["third", "books"], ["previous", "loans"]])
    expect(rules("books").referencedBy).toEqual([{ type: "loans", field: "book" }, { type: "loans", field: "second" }, { type: "loans", field: "third" }])
    expect(rules("members").referencedBy).toEqual([{ type: "loans", field: "member" }])
    expect(rules("loans").referencedBy).toEqual([{ type: "loans", field: "previous" }])
  })
})
