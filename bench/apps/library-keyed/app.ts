/**
 * examples/library with `loans_by_member` keyed by member: one entry per member (the ids of the loans it still has
 * out), stored on its own, so that a lend writes one member's entry whatever the number of members. The keyed side
 * of bench/scenarios/keyed-views.ts; the entities and commands are the sample's own.
 */
import { Schema } from "effect"
import { defineApp } from "writeonce"
import library from "../../../examples/library/app.ts"

export default defineApp({
  name: "library",
  description: library.description,
  entities: library.entities,
  commands: library.commands,
  views: (view) => ({
    loans_by_member: view({
      description: "The loans a member still has out, keyed by member id.",
      schema: Schema.Struct({ loans: Schema.Array(Schema.String) }),
      initial: { loans: [] },
      on: { loans: ["created", "updated", "invoked", "deleted"] },
      // A loan's member never changes: the row before or after names it.
      key: ({ before, after }) => String((after ?? before)!.member),
      evolve: (entry, { before, after }) => {
        let loans = entry.loans
        if (before !== null && before.status === "out") loans = loans.filter((id) => id !== before.id)
        if (after !== null && after.status === "out") loans = [...loans, after.id]
        return loans.length === 0 ? undefined : { loans }
      }
    })
  })
})
