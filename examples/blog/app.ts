/** The blog sample: articles with a status, tags and an embedded author. */
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
  }
})
