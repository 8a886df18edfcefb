/**
 * examples/library as it was before keyed views: `loans_by_member` one whole value (every member's loans in one
 * record, copied by each evolve and written whole in each batch). The "before" column of
 * bench/scenarios/keyed-views.ts; the entities and commands are the sample's own.
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
      description: "The loans each member still has out, by member id.",
      schema: Schema.Record({ key: Schema.String, value: Schema.Array(Schema.String) }),
      initial: {},
      on: { loans: ["created", "updated", "invoked", "deleted"] },
      evolve: (byMember, { before, after }) => {
        const next: Record<string, ReadonlyArray<string>> = { ...byMember }
        if (before !== null && before.status === "out") {
          const member = String(before.member)
          const left = (next[member] ?? []).filter((id) => id !== before.id)
          if (left.length === 0) delete next[member]
          else next[member] = left
        }
        if (after !== null && after.status === "out") {
          const member = String(after.member)
          next[member] = [...(next[member] ?? []), after.id]
        }
        return next
      }
    })
  })
})
