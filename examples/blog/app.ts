/** The blog sample: articles with a status, tags and an embedded author, and a view counting them by status. */
import { Schema } from "effect"
import { defineApp, entity } from "writeonce"

export default defineApp({
  name: "blog",
  description: "A small blog: draft and publish articles.",
  entities: {
    articles: entity({
      description: "A blog article.",
      fields: {
        title: Schema.String.pipe(Schema.minLength(1)),
        body: Schema.String,
        status: Schema.Literal("draft", "published"),
        tags: Schema.Array(Schema.String),
        author: Schema.Struct({
          name: Schema.String,
          email: Schema.optional(Schema.String)
        })
      }
    })
  },
  // A function of `view`: each view's `on` is checked against the entities, and `evolve` sees typed rows.
  views: (view) => ({
    // A fold of the log: each change moves one article out of its old status and into its new one. Editing a
    // body leaves the counts as they were, so the view is neither rewritten nor notified.
    articles_by_status: view({
      description: "How many articles there are in each status.",
      schema: Schema.Record({ key: Schema.String, value: Schema.Int }),
      initial: { draft: 0, published: 0 },
      on: { articles: ["created", "updated", "deleted"] },
      evolve: (counts, { before, after }) => {
        const next = { ...counts }
        if (before !== null) next[String(before.status)] = (next[String(before.status)] ?? 0) - 1
        if (after !== null) next[String(after.status)] = (next[String(after.status)] ?? 0) + 1
        return next
      }
    })
  })
})
