/** A library app that declares every kind of rule: an invariant, a guarded field and references. */
import { Schema } from "effect"
import { defineApp, entity, reject } from "../src/domain/catalog.ts"
import { ref } from "../src/domain/rules/refs.ts"

export const IN_RANGE = "available must stay between 0 and copies"

export const library = defineApp({
  name: "library",
  entities: {
    books: entity({
      fields: {
        title: Schema.String,
        copies: Schema.Int,
        // Set from its default by a create; changed by methods only.
        available: Schema.Int.pipe(Schema.optionalWith({ default: () => 1 }))
      },
      methods: {
        check_out: { params: {}, apply: (book) => (book.available === 0 ? reject("no_copies", "no copies available") : { available: book.available - 1 }) },
        // Does not look at copies: the invariant does.
        check_in: { params: {}, apply: (book) => ({ available: book.available + 1 }) }
      },
      guarded: ["available"],
      invariants: {
        available_in_range: { check: (book) => book.available >= 0 && book.available <= book.copies, message: IN_RANGE }
      }
    }),
    members: entity({ fields: { name: Schema.String } }),
    loans: entity({
      fields: {
        book: ref("books"),
        member: Schema.NullOr(ref("members")).pipe(Schema.optional),
        status: Schema.Literal("open", "returned")
      }
    }),
    // An invariant with a bug: it throws on "boom" and answers a number on "odd".
    shelves: entity({
      fields: { label: Schema.String },
      invariants: {
        labelled: {
          check: (shelf) => {
            if (shelf.label === "boom") throw new Error("check exploded")
            return (shelf.label === "odd" ? 1 : shelf.label.length > 0) as boolean
          },
          message: "a shelf needs a label"
        }
      }
    })
  }
})
