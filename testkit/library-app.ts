/**
 * A library with a command across entity types: `lend` checks a book out (its method refuses at 0 copies) and
 * creates a loan, atomically; `return_book` marks the loan returned and gives the copy back. Books get their
 * copies through `add_copies`, so the app means the same with or without guarded fields.
 */
import { Schema } from "effect"
import { defineApp, entity, reject } from "../src/index.ts"
import { ref } from "../src/domain/rules/refs.ts"

const books = entity({
  fields: {
    title: Schema.String,
    copies: Schema.Int.pipe(Schema.optionalWith({ default: () => 0 })),
    available: Schema.Int.pipe(Schema.optionalWith({ default: () => 0 }))
  },
  methods: {
    check_out: { params: {}, apply: (b) => (b.available === 0 ? reject("no_copies", "no copies available") : { available: b.available - 1 }) },
    give_back: { params: {}, apply: (b) => ({ available: b.available + 1 }) },
    add_copies: { params: { n: Schema.Int }, apply: (b, p) => ({ copies: b.copies + p.n, available: b.available + p.n }) },
    set_title: { params: { title: Schema.String }, apply: (_b, p) => ({ title: p.title }) }
  }
})
const members = entity({ fields: { name: Schema.String } })
const loans = entity({ fields: { book: ref("books"), member: ref("members"), status: Schema.Literal("out", "returned") } })

export const library = defineApp({
  name: "library",
  entities: { books, members, loans },
  commands: {
    lend: {
      description: "Lend a book to a member: one copy fewer, one loan more.",
      params: { book: Schema.String, member: Schema.String },
      decide: (ctx, p) => {
        if (ctx.get("members", p.member) === undefined) return reject("no_member", `no member ${p.member}`)
        return [ctx.invoke("books", p.book, "check_out"), ctx.create("loans", { book: p.book, member: p.member, status: "out" })]
      }
    },
    lend_pair: {
      description: "Lend two books at once, or neither.",
      params: { book: Schema.String, other: Schema.String, member: Schema.String },
      decide: (ctx, p) => [
        ctx.invoke("books", p.book, "check_out"),
        ctx.create("loans", { book: p.book, member: p.member, status: "out" }),
        ctx.invoke("books", p.other, "check_out"),
        ctx.create("loans", { book: p.other, member: p.member, status: "out" })
      ]
    },
    return_book: {
      params: { loan: Schema.String },
      decide: (ctx, p) => {
        const loan = ctx.get("loans", p.loan)
        if (loan === undefined) return reject("no_loan", `no loan ${p.loan}`)
        if (loan.status === "returned") return reject("returned", "this loan was returned already")
        return [ctx.update("loans", p.loan, { status: "returned" }), ctx.invoke("books", loan.book, "give_back")]
      }
    },
    hidden: { params: {}, rest: false, mcp: false, decide: () => [] },
    /** The author's bug: decide throws after reading a row. */
    broken: { params: { book: Schema.String }, decide: (ctx, p) => { throw new Error(`cannot lend ${ctx.get("books", p.book)?.title}`) } }
  }
})

export default library
