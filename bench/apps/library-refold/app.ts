/**
 * bench/apps/library-keyed with a second view, `loans_by_book`, whose declaration changes with BENCH_REFOLD_VERSION
 * (its `version`): started again with another version, it is folded again from the whole log in the background
 * while `loans_by_member` serves. What bench/scenarios/keyed-views.ts reads during a refold.
 */
import { Schema } from "effect"
import { defineApp } from "writeonce"
import keyed from "../library-keyed/app.ts"

const version = Number(process.env.BENCH_REFOLD_VERSION ?? 1)

export default defineApp({
  name: keyed.name,
  description: keyed.description,
  entities: keyed.entities,
  commands: keyed.commands,
  views: (view) => ({
    ...keyed.views,
    loans_by_book: view({
      description: "How many loans each book has out, by book id.",
      version,
      schema: Schema.Record({ key: Schema.String, value: Schema.Int }),
      initial: {},
      on: { loans: ["created", "invoked", "deleted"] },
      evolve: (byBook, { before, after }) => {
        const next: Record<string, number> = { ...byBook }
        if (before !== null && before.status === "out") next[String(before.book)] = (next[String(before.book)] ?? 1) - 1
        if (after !== null && after.status === "out") next[String(after.book)] = (next[String(after.book)] ?? 0) + 1
        return next
      }
    })
  })
})
