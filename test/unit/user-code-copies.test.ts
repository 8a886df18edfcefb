/**
 * Every callback of user code gets values of its own, fields typed Unknown, Any and object (which Schema's decode
 * passes through by reference) and anything nested under them included: an invariant's check, a method's apply
 * (row and params), an app command's decide (its params and the rows ctx.get reads), a view's evolve (the event,
 * before and after) and a migration (the fields as read). What they change in place is theirs alone.
 */
import { Either, Schema } from "effect"
import { describe, expect, it } from "vitest"
import { defineApp, entity, view, type Row, type ViewChange } from "../../src/index.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { decideCommand } from "../../src/domain/decide/command-decider.ts"
import { decide } from "../../src/domain/decide/decider.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { copyData, reachesOpaque } from "../../src/domain/codecs.ts"
import { upcastEvent } from "../../src/log/upcasting-log.ts"

type Loose = Record<string, any>

/** Sets `touched` on every object it reaches (the row's fields, nested ones too): what a careless callback does. */
const touchAll = (value: unknown): void => {
  if (typeof value !== "object" || value === null) return
  if (Array.isArray(value)) return value.forEach(touchAll)
  for (const v of Object.values(value)) touchAll(v)
  ;(value as Loose).touched = true
}

const fields = {
  title: Schema.String,
  meta: Schema.Unknown,
  any: Schema.Any,
  blob: Schema.Object,
  nested: Schema.Struct({ inner: Schema.Unknown }),
  list: Schema.Array(Schema.Unknown),
  record: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  tags: Schema.Array(Schema.String)
}

/** Fresh stored fields, and a frozen-in-JSON copy of them to compare with. */
const storedFields = () => ({
  title: "a",
  meta: { m: { deep: [1, { x: 1 }] } },
  any: { a: 1 },
  blob: { b: 1 },
  nested: { inner: { i: 1 } },
  list: [{ l: 1 }],
  record: { k: { r: 1 } },
  tags: ["t"]
})

const seen: Array<string> = []
const app = Either.getOrThrow(compileApp(defineApp({
  name: "copies",
  entities: {
    notes: entity({
      fields,
      invariants: {
        touches: {
          check: (row) => {
            touchAll(row)
            return true
          },
          message: "never refused"
        }
      },
      methods: {
        poke: {
          params: { note: Schema.Unknown, list: Schema.Array(Schema.Unknown) },
          apply: (row, params) => {
            touchAll(row)
            touchAll(params)
            return { title: "poked" }
          }
        }
      }
    }),
    plain: entity({ fields: { meta: Schema.Unknown } })
  },
  commands: {
    peek: {
      params: { note: Schema.String, extra: Schema.Unknown },
      decide: (ctx, params) => {
        touchAll(ctx.get("notes", params.note))
        touchAll(params)
        return []
      }
    }
  },
  views: {
    touching: view({
      schema: Schema.Number,
      initial: 0,
      on: { notes: ["created", "poke"] },
      evolve: (n, change) => {
        seen.push(JSON.stringify(change))
        touchAll(change)
        return n + 1
      }
    })
  }
})))
const notes = app.types.get("notes")!

describe("the decode user code sees", () => {
  it("finds the fields whose decode passes objects through, nested under structs, arrays and records too", () => {
    const opaque = Object.entries(fields).filter(([name, f]) => reachesOpaque(Schema.Struct({ [name]: f }).ast)).map(([name]) => name)
    expect(opaque).toEqual(["meta", "any", "blob", "nested", "list", "record"])
  })

  it("decodeStored shares no object with the stored fields", () => {
    const stored = storedFields()
    const decoded = notes.decodeStored(stored)
    touchAll(decoded)
    expect(stored).toEqual(storedFields())
  })

  it("a field that reaches a declared type but stores a string (Schema.Date) still decodes to its type", () => {
    const dated = Either.getOrThrow(compileApp(defineApp({ name: "d", entities: { events: entity({ fields: { when: Schema.Date, meta: Schema.Unknown } }) } })))
    const decoded = dated.types.get("events")!.decodeStored({ when: "2020-01-02T00:00:00.000Z", meta: null })
    expect(decoded.when).toBeInstanceOf(Date)
    expect((decoded.when as Date).toISOString()).toBe("2020-01-02T00:00:00.000Z")
    expect(decoded.meta).toBeNull()
  })

  it("copyData copies plain data deeply, keeps an own __proto__ key a key, and keeps class instances", () => {
    const input = JSON.parse('{"a":[{"b":1}],"__proto__":{"polluted":true}}')
    const copy = copyData(input) as Loose
    expect(copy).toEqual(input)
    expect(copy.a[0]).not.toBe(input.a[0])
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
    expect(Object.hasOwn(copy, "__proto__")).toBe(true)
    const date = new Date(0)
    expect(copyData({ date }) as Loose).toEqual({ date })
  })
})

describe("user code changing what it is handed in place", () => {
  it("an invariant's check on a create changes neither the intent's fields nor the draft", () => {
    const fieldsIn = storedFields()
    const d = Either.getOrThrow(decide(notes, "1", undefined, { _tag: "Create", fields: fieldsIn }, undefined))
    expect(d.data).toEqual(storedFields())
    expect(fieldsIn).toEqual(storedFields())
  })

  it("a method's apply (and the invariant after it) changes neither the current row nor the params the event stores", () => {
    const current: Row = { id: "1", version: 1, ...storedFields() }
    const params = { note: { n: 1 }, list: [{ l: 1 }] }
    const d = Either.getOrThrow(decide(notes, "1", current, { _tag: "Invoke", method: notes.methods.get("poke")!, params }, undefined))
    expect(d).toEqual({ kind: "invoked", method: "poke", params: { note: { n: 1 }, list: [{ l: 1 }] }, data: { title: "poked" } })
    expect(current).toEqual({ id: "1", version: 1, ...storedFields() })
  })

  it("an app command's decide changes neither the rows ctx.get reads nor its params", () => {
    const current: Row = { id: "1", version: 1, ...storedFields() }
    const params = { note: "1", extra: { e: { f: 1 } } }
    const drafts = Either.getOrThrow(decideCommand(app, app.commands.get("peek")!, params, (type, id) => (type === "notes" && id === "1" ? current : undefined), () => 0))
    expect(drafts).toEqual([])
    expect(current).toEqual({ id: "1", version: 1, ...storedFields() })
    expect(params).toEqual({ note: "1", extra: { e: { f: 1 } } })
  })

  it("a view's evolve changes neither the event nor the rows before and after", () => {
    const event: StoredEvent = { seq: 2, at: 0, type: "notes", id: "1", version: 2, kind: "invoked", method: "poke", params: { note: { n: 1 } }, data: { title: "poked" } }
    const before: Row = { id: "1", version: 1, ...storedFields() }
    const after: Row = { ...before, version: 2, title: "poked" }
    const change: ViewChange = { event, before, after }
    const text = JSON.stringify(change)
    seen.length = 0
    expect(app.views.get("touching")!.evolve(0, change)).toBe(1)
    // evolve saw the change as it is, and changed only its copy.
    expect(seen).toEqual([text])
    expect(JSON.stringify(change)).toBe(text)
  })

  it("a migration changes neither the event as read nor the fields another reader upcasts", () => {
    const migrated = Either.getOrThrow(compileApp(defineApp({
      name: "migrated",
      entities: {
        notes: entity({
          fields: { meta: Schema.Unknown, n: Schema.Number },
          version: 2,
          migrations: {
            2: (f) => {
              const meta = f.meta as Loose
              meta.count = (meta.count ?? 0) + 1
              return { ...f, n: meta.count }
            }
          }
        })
      }
    })))
    const read: StoredEvent = { seq: 1, at: 0, type: "notes", id: "1", version: 1, schema: 1, kind: "created", data: { meta: { count: 0 } } }
    const once = upcastEvent(migrated, read)
    const twice = upcastEvent(migrated, read)
    expect(read.data).toEqual({ meta: { count: 0 } })
    expect(once.data).toEqual({ meta: { count: 1 }, n: 1 })
    expect(twice.data).toEqual(once.data)
  })
})
