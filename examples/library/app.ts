/**
 * The library sample: books, members and loans. The rules live in the declaration and no caller can go around
 * them: `available` and `copies` change only through the books' methods, an invariant keeps `available` between 0
 * and `copies`, loans reference live books and members, and lending or returning a book is one command across
 * two entity types, written atomically.
 */
import { Schema } from "effect"
import { defineApp, entity, ref, reject } from "writeonce"

/** More copies of one book than any library holds: a request past it is a mistake, refused before the sum overflows. */
const MAX_COPIES = 1_000_000

const books = entity({
  description: "A book the library owns: how many copies, and how many are on the shelf.",
  fields: {
    title: Schema.String.pipe(Schema.minLength(1)),
    author: Schema.String.pipe(Schema.minLength(1)),
    copies: Schema.Int.pipe(Schema.optionalWith({ default: () => 0 })),
    available: Schema.Int.pipe(Schema.optionalWith({ default: () => 0 }))
  },
  // Only the methods below change these: a create starts them at 0, and a PATCH naming them is refused.
  guarded: ["copies", "available"],
  invariants: {
    available_in_range: {
      check: (book) => book.available >= 0 && book.available <= book.copies,
      message: "available must stay between 0 and the number of copies"
    }
  },
  methods: {
    add_copies: {
      description: "Add copies of the book to the shelf.",
      params: { n: Schema.Int.pipe(Schema.positive()) },
      changes: ["copies", "available"],
      apply: (book, { n }) =>
        book.copies + n > MAX_COPIES
          ? reject("too_many_copies", `a book has at most ${MAX_COPIES} copies: it has ${book.copies}, and ${n} more is too many`)
          : { copies: book.copies + n, available: book.available + n }
    },
    check_out: {
      description: "Take one copy off the shelf.",
      params: {},
      changes: ["available"],
      apply: (book) =>
        book.available === 0 ? reject("no_copies", `no copy of "${book.title}" is available`) : { available: book.available - 1 }
    },
    check_in: {
      description: "Put one copy back on the shelf.",
      params: {},
      changes: ["available"],
      // No check here: a copy the library does not own coming back breaks the invariant, which refuses it.
      apply: (book) => ({ available: book.available + 1 })
    }
  },
  // Books are checked out and in only through the lend and return commands, which also keep the loans.
  rest: ["list", "get", "create", "update", "add_copies"],
  mcp: ["list", "get", "create", "add_copies"]
})

const members = entity({
  description: "Someone who borrows books.",
  fields: { name: Schema.String.pipe(Schema.minLength(1)) },
  rest: ["list", "get", "create", "update"],
  mcp: ["list", "get", "create"]
})

const loans = entity({
  description: "A book lent to a member.",
  fields: {
    book: ref("books"),
    member: ref("members"),
    status: Schema.Literal("out", "returned").pipe(Schema.optionalWith({ default: () => "out" as const }))
  },
  guarded: ["status"],
  methods: {
    close: {
      description: "Mark the loan returned.",
      params: {},
      changes: ["status"],
      apply: (loan) => (loan.status === "returned" ? reject("already_returned", "the loan is already returned") : { status: "returned" })
    }
  },
  // Read-only from outside: loans are opened by lend and closed by return.
  rest: ["list", "get"],
  mcp: ["list", "get"]
})

export default defineApp({
  name: "library",
  description: "A lending library: books, members and their loans.",
  entities: { books, members, loans },
  commands: {
    lend: {
      description: "Lend a book to a member: one copy leaves the shelf and a loan opens, in one atomic write.",
      params: { book: ref("books"), member: ref("members") },
      decide: (ctx, { book, member }) => [
        ctx.invoke("books", book, "check_out"),
        ctx.create("loans", { book, member })
      ]
    },
    return: {
      description: "Take a lent book back: the loan is closed and the copy is back on the shelf, in one atomic write.",
      params: { loan: ref("loans") },
      decide: (ctx, { loan }) => {
        const lent = ctx.get("loans", loan)
        if (lent === undefined) return reject("missing_reference", `loans ${loan} does not exist`)
        return [ctx.invoke("loans", loan, "close"), ctx.invoke("books", lent.book, "check_in")]
      }
    }
  },
  // A function of `view`: each view's `on` is checked against the entities, and `evolve` sees typed rows.
  views: (view) => ({
    // Keyed by member: one entry per member with loans out, the ids of those loans and how many. A lend or a return
    // changes the entry of its loan's member alone; a member's last return removes the entry.
    loans_by_member: view({
      description: "The loans each member still has out: one entry per member, keyed by member id.",
      schema: Schema.Struct({ out: Schema.Int, loans: Schema.Array(Schema.String) }),
      initial: { out: 0, loans: [] },
      on: { loans: ["created", "updated", "invoked", "deleted"] },
      key: ({ before, after }) => String((after ?? before)!.member),
      evolve: (entry, { before, after }) => {
        let loans = entry.loans
        if (before !== null && before.status === "out") loans = loans.filter((id) => id !== before.id)
        if (after !== null && after.status === "out") loans = [...loans, after.id]
        return loans.length === 0 ? undefined : { out: loans.length, loans }
      }
    })
  })
})
