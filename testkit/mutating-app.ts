/**
 * An app whose user code changes in place what it is handed, in fields typed `Unknown`, `Any` and `object` (which
 * Schema's decode passes through by reference) and in plain fields. Each callback marks only rows that ask for it
 * (`meta.mutate` names the callback), so one app serves every case: `meta.touched` (and `blob.touched`,
 * `extra.inner.touched`) names the callback whose change leaked into a row or an event.
 */
import { Schema } from "effect"
import { defineApp, entity, view } from "../src/domain/catalog.ts"

type Loose = Record<string, any>

const asks = (meta: unknown, who: string) => typeof meta === "object" && meta !== null && (meta as Loose).mutate === who

/** Changes everything the row holds by reference: `meta` (Unknown), `blob` (object), `extra.inner` (Any in a struct). */
const touch = (row: Loose, who: string) => {
  row.meta.touched = who
  if (typeof row.blob === "object" && row.blob !== null) row.blob.touched = who
  if (typeof row.extra?.inner === "object" && row.extra.inner !== null) row.extra.inner.touched = who
}

export default defineApp({
  name: "mutating",
  entities: {
    notes: entity({
      fields: {
        title: Schema.String,
        meta: Schema.Unknown,
        blob: Schema.optional(Schema.Object),
        extra: Schema.optional(Schema.Struct({ inner: Schema.Any }))
      },
      invariants: {
        never_refused: {
          check: (row) => {
            if (asks(row.meta, "invariant")) touch(row as Loose, "invariant")
            return true
          },
          message: "never refused"
        }
      },
      methods: {
        retitle: {
          params: { title: Schema.String },
          apply: (row, { title }) => {
            if (asks(row.meta, "method")) touch(row as Loose, "method")
            return { title }
          }
        },
        annotate: {
          params: { note: Schema.Unknown },
          apply: (_row, { note }) => {
            ;(note as Loose).touched = "method"
            return { title: "annotated" }
          }
        }
      }
    })
  },
  commands: {
    peek: {
      description: "Reads a note and changes nothing.",
      params: { note: Schema.String },
      decide: (ctx, { note: id }) => {
        const note = ctx.get("notes", id)
        if (note !== undefined && asks(note.meta, "command")) touch(note as Loose, "command")
        return []
      }
    }
  },
  views: {
    notes_seen: view({
      schema: Schema.Number,
      initial: 0,
      on: { notes: ["created", "retitle"] },
      evolve: (n, { event, before, after }) => {
        if (after !== null && asks(after.meta, "view")) {
          touch(after as Loose, "view")
          ;(after as Loose).title = "changed by a view"
          ;(event.data as Loose).title = "changed by a view"
          if (before !== null) (before as Loose).title = "changed by a view"
        }
        return n + 1
      }
    })
  }
})
