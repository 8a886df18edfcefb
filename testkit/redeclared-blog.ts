/**
 * The blog (examples/blog) with its view declared again: `articles_by_status` also counts every article ever created,
 * under `counter`. Another declaration of the same view, so a store written by the blog folds it again.
 */
import { Schema } from "effect"
import { defineApp, view } from "../src/domain/catalog.ts"
import { apps } from "./server.ts"

export const blogCountingCreates = (counter: string) =>
  defineApp({
    ...apps.blog,
    views: {
      articles_by_status: view({
        schema: Schema.Record({ key: Schema.String, value: Schema.Int }),
        initial: { draft: 0, published: 0, [counter]: 0 },
        on: { articles: ["created", "updated", "deleted"] },
        evolve: (c, { before, after, event }) => {
          const next = { ...c }
          if (before !== null) next[String(before.status)] -= 1
          if (after !== null) next[String(after.status)] += 1
          if (event.kind === "created") next[counter] += 1
          return next
        }
      })
    }
  })
