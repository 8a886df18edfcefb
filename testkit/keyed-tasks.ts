/**
 * A to-do app with a keyed view, for the keyed views' tests: `open_by_owner` keeps, per owner, how many of their
 * tasks are open and their titles; an owner with none open has no entry. Its evolve changes its entry and its change
 * in place (what evolve must not do): the runtime must hand it copies, so neither the cache nor the rows suffer.
 */
import { Schema } from "effect"
import { defineApp, entity } from "../src/index.ts"

const tasks = entity({ fields: { owner: Schema.String, title: Schema.String, done: Schema.Boolean } })

export const OpenByOwner = Schema.Struct({ open: Schema.Int, titles: Schema.Array(Schema.String) })

export const keyedTasks = (version = 1) => defineApp({
  name: "keyed_tasks",
  entities: { tasks },
  views: (view) => ({
    open_by_owner: view({
      description: "Per owner, their open tasks.",
      schema: OpenByOwner,
      initial: { open: 0, titles: [] },
      on: { tasks: ["created", "updated", "deleted"] },
      key: ({ before, after }) => (after ?? before)!.owner,
      version,
      evolve: (entry, change) => {
        const { before, after } = change
        const titles = entry.titles as Array<string>
        let open = entry.open
        if (before !== null && !before.done) {
          open--
          titles.splice(titles.indexOf(before.title), 1)
        }
        if (after !== null && !after.done) {
          open++
          titles.push(after.title)
        }
        // In place, on purpose: copies are the runtime's job.
        ;(entry as { open: number }).open = open
        if (after !== null) (after as { title: string }).title = "changed by evolve"
        return open === 0 ? undefined : entry
      }
    })
  })
})
