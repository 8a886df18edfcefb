/**
 * Schema evolution in the catalog: optional fields, defaults and nullable fields compile and work in creates,
 * patches and methods; migrations are validated at load and applied by the upcasting helpers.
 */
import { Effect, Either, Option, Schema, Stream } from "effect"
import type { EventLogShape, StoredRow } from "../../src/log/event-log.ts"
import { describe, expect, it } from "vitest"
import blog from "../../examples/blog/app.ts"
import { defineApp, entity } from "../../src/domain/catalog.ts"
import { compileApp, type CompiledType } from "../../src/domain/compile.ts"
import { decide } from "../../src/domain/decide/decider.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { mapField, renameField } from "../../src/domain/migrations.ts"
import { upcastEvent, upcastingLog, upcastRow } from "../../src/log/upcasting-log.ts"

const evolving = defineApp({
  name: "shop",
  entities: {
    products: entity({
      fields: {
        name: Schema.String.pipe(Schema.minLength(1)),
        price: Schema.Number,
        sku: Schema.String.pipe(Schema.optionalWith({ default: () => "none" })),
        note: Schema.optional(Schema.String),
        discontinued: Schema.NullOr(Schema.Boolean),
        warehouse: Schema.String.pipe(Schema.optionalWith({ nullable: true })),
        supplier: Schema.String.pipe(Schema.optionalWith({ as: "Option", nullable: true }))
      },
      methods: {
        rename: { params: { name: Schema.String }, apply: (_row, { name }) => ({ name }) },
        restock: { params: { at: Schema.String }, apply: (_row, { at }) => ({ supplier: Option.some(at), note: undefined }) },
        drop_supplier: { params: {}, apply: () => ({ supplier: Option.none() }) },
        read_sku: { params: {}, apply: (row) => ({ note: `sku ${row.sku}, supplier ${Option.getOrElse(row.supplier, () => "-")}` }) }
      }
    })
  }
})

const compiled = () => Either.getOrThrow(compileApp(evolving))
const products = (): CompiledType => compiled().types.get("products")!
const right = <A, E>(e: Either.Either<A, E>) => {
  if (Either.isLeft(e)) throw new Error(`expected Right, got ${JSON.stringify(e.left)}`)
  return e.right
}
const left = <A, E>(e: Either.Either<A, E>) => {
  if (Either.isRight(e)) throw new Error(`expected Left, got ${JSON.stringify(e.right)}`)
  return e.left
}

describe("optional fields, defaults and nullable fields", () => {
  it("compile, and their JSON Schema requires only the required fields", () => {
    const schema = products().fieldsJsonSchema as { required: Array<string>; properties: Record<string, unknown> }
    expect(schema.required).toEqual(["name", "price", "discontinued"])
    expect(Object.keys(schema.properties)).toEqual(["name", "price", "sku", "note", "discontinued", "warehouse", "supplier"])
    expect(schema.properties.warehouse).toEqual({ anyOf: [{ type: "string" }, { type: "null" }] })
  })

  it("a create applies the default and stores the encoded form", () => {
    expect(right(products().decodeCreate({ name: "Pen", price: 2, discontinued: null }))).toEqual({ name: "Pen", price: 2, sku: "none", discontinued: null })
    expect(right(products().decodeCreate({ name: "Pen", price: 2, discontinued: false, supplier: "Acme" }))).toEqual({
      name: "Pen", price: 2, sku: "none", discontinued: false, supplier: "Acme"
    })
    expect(left(products().decodeCreate({ name: "Pen", price: 2 }))).toEqual([{ path: ["discontinued"], message: "is missing" }])
  })

  it("a patch decodes only the present fields: no default fills in what the caller left out", () => {
    const t = products()
    expect(right(t.decodePatch({ price: 3 }))).toEqual({ price: 3 })
    expect(right(t.decodePatch({ sku: "A-1", discontinued: null }))).toEqual({ sku: "A-1", discontinued: null })
    expect(right(t.decodePatch({ supplier: "Acme" }))).toEqual({ supplier: "Acme" })
    // null on an optionalWith nullable field clears it: stored as null, a valid encoded value meaning absent.
    expect(right(t.decodePatch({ warehouse: null, supplier: null }))).toEqual({ warehouse: null, supplier: null })
  })

  it("a patch refuses unknown keys and invalid values, naming each field", () => {
    const t = products()
    expect(left(t.decodePatch({ price: "x", colour: "red", name: "" }))).toEqual([
      { path: ["price"], message: "Expected number, actual \"x\"" },
      { path: ["colour"], message: expect.stringMatching(/^is unexpected, expected: "name" \| "price" \| "sku"/) },
      { path: ["name"], message: expect.stringMatching(/at least 1 character/) }
    ])
    expect(left(t.decodePatch({ note: null }))).toEqual([{ path: ["note"], message: "Expected string | undefined, actual null" }])
    expect(left(t.decodePatch([1]))).toEqual([{ path: [], message: "Expected an object, actual an array" }])
  })

  it("methods see defaults and Options, and their changes are encoded field by field", () => {
    const t = products()
    const row = { id: "1", version: 1, ...right(t.normalise({ name: "Pen", price: 2, discontinued: null })) }
    const invoke = (name: string, params: Record<string, unknown>) =>
      decide(t, "1", row, { _tag: "Invoke", method: t.methods.get(name)!, params }, undefined)
    expect(right(invoke("read_sku", {})).data).toEqual({ note: "sku none, supplier -" })
    // An undefined value means "unchanged", as it would in JSON.
    expect(right(invoke("restock", { at: "Acme" })).data).toEqual({ supplier: "Acme" })
    expect(right(invoke("drop_supplier", {})).data).toEqual({ supplier: null })
    expect(right(invoke("rename", { name: "Ink" })).data).toEqual({ name: "Ink" })
    // A change its schema refuses is the method's bug, not the caller's: the writer answers it as MethodFailed.
    expect(left(invoke("rename", { name: "" }))).toMatchObject({ _tag: "UserCodeFailure", reason: expect.stringMatching(/^it returned name: /) })
  })

  it("normalising a stored row applies defaults, drops fields no longer declared, and names what does not fit", () => {
    const t = products()
    expect(right(t.normalise({ name: "Pen", price: 2, discontinued: null, colour: "red" }))).toEqual({ name: "Pen", price: 2, sku: "none", discontinued: null })
    expect(right(t.normalise({ name: "Pen", price: 2, discontinued: null, warehouse: null }))).toEqual({ name: "Pen", price: 2, sku: "none", discontinued: null })
    expect(left(t.normalise({ name: "Pen", price: 2 }))).toEqual([{ path: ["discontinued"], message: "is missing" }])
  })

  it("leaves the blog's patches as they were, nested structs included", () => {
    const articles = Either.getOrThrow(compileApp(blog)).types.get("articles")!
    expect(right(articles.decodePatch({ author: { name: "A" } }))).toEqual({ author: { name: "A" } })
    expect(left(articles.decodePatch({ author: { email: "x" } }))).toEqual([{ path: ["author", "name"], message: "is missing" }])
  })
})

const withMigrations = (spec: { version?: number; migrations?: unknown }, retired?: unknown) =>
  compileApp(defineApp({
    name: "x",
    entities: { things: entity({ fields: { b: Schema.String }, ...(spec as object) }) },
    ...(retired === undefined ? {} : { retired: retired as Array<string> })
  }))
const problemsOf = (c: ReturnType<typeof compileApp>) => (Either.isLeft(c) ? c.left.problems : [])

describe("migration declarations", () => {
  it("accepts versions with one migration per step from 2", () => {
    expect(problemsOf(withMigrations({ version: 3, migrations: { 2: renameField("a", "b"), 3: (f: object) => f } }))).toEqual([])
    expect(Either.getOrThrow(withMigrations({})).types.get("things")!.version).toBe(1)
  })

  it("names a missing step, a step that is not a function, one beyond the version, and a bad version", () => {
    expect(problemsOf(withMigrations({ version: 3, migrations: { 3: (f: object) => f } }))).toEqual([
      expect.stringMatching(/^type "things", migration 2: missing; version 3 needs one migration for each version from 2 to 3/)
    ])
    expect(problemsOf(withMigrations({ version: 2, migrations: { 2: "rename" } }))).toEqual([
      'type "things", migration 2: not a function'
    ])
    expect(problemsOf(withMigrations({ migrations: { 2: (f: object) => f } }))).toEqual([
      'type "things", migration 2: beyond the declared version 1 (declare version: 2)'
    ])
    expect(problemsOf(withMigrations({ version: 2, migrations: { 1: (f: object) => f, 2: (f: object) => f } }))).toEqual([
      'type "things", migration "1": migrations are keyed by the version they produce, from 2'
    ])
    expect(problemsOf(withMigrations({ version: 0 }))).toEqual(["type \"things\": version must be a whole number from 1, got 0"])
    expect(problemsOf(withMigrations({ version: 2.5 }))).toEqual(["type \"things\": version must be a whole number from 1, got 2.5"])
  })

  it("names retired types that are still declared or not type names", () => {
    expect(problemsOf(withMigrations({}, ["old_things"]))).toEqual([])
    expect(Either.getOrThrow(withMigrations({}, ["old_things"])).retired).toEqual(new Set(["old_things"]))
    expect(problemsOf(withMigrations({}, ["things", "Bad-Name"]))).toEqual([
      'retired type "things": the app still declares it; remove it from entities or from retired',
      'retired type "Bad-Name": not a type name (/^[a-z][a-z0-9_]*$/)'
    ])
  })
})

describe("upcasting", () => {
  const app = Either.getOrThrow(compileApp(defineApp({
    name: "x",
    entities: {
      articles: entity({
        fields: { headline: Schema.String, price: Schema.Number },
        version: 3,
        migrations: { 2: renameField("title", "headline"), 3: mapField("price", (p) => Math.round((p as number) * 100)) }
      })
    }
  })))
  // Version 2 renamed title to headline; version 3 counts the price in cents.
  const v3 = app.types.get("articles")!
  const event = (over: Partial<StoredEvent>): StoredEvent =>
    ({ seq: 1, at: 0, type: "articles", id: "1", version: 1, kind: "created", data: {}, ...over })

  it("brings a create's fields, and an update's changed fields only, to the current version", () => {
    expect(v3.upcast({ title: "Hi", price: 1.5 }, 1)).toEqual({ headline: "Hi", price: 150 })
    expect(v3.upcast({ price: 2 }, 2)).toEqual({ price: 200 })
    expect(v3.upcast({ headline: "Hi" }, 3)).toEqual({ headline: "Hi" })
    expect(upcastEvent(app, event({ kind: "updated", data: { title: "New" } }))).toMatchObject({ data: { headline: "New" }, schema: 3 })
    expect(upcastEvent(app, event({ kind: "deleted", data: {}, schema: 1 })).data).toEqual({})
  })

  it("leaves current events, and types the app does not declare, as written (the same object)", () => {
    const current = event({ data: { headline: "x" }, schema: 3 })
    expect(upcastEvent(app, current)).toBe(current)
    const retired = event({ type: "gone", data: { title: "x" } })
    expect(upcastEvent(app, retired)).toBe(retired)
  })

  it("upcasts a stored row's fields from the version it was written with", () => {
    expect(upcastRow(app, { type: "articles", row: { id: "4", version: 2, title: "T", price: 1 } })).toEqual({
      type: "articles", row: { id: "4", version: 2, headline: "T", price: 100 }, schema: 3
    })
  })

  it("names the type and migration when a migration throws or returns no object", () => {
    const broken = Either.getOrThrow(compileApp(defineApp({
      name: "x",
      entities: { things: entity({ fields: { a: Schema.String }, version: 2, migrations: { 2: () => null as never } }) }
    })))
    expect(() => broken.types.get("things")!.upcast({ a: "x" }, 1)).toThrow('type "things", migration 2 failed: it must return an object of fields')
  })

  it("checks what a migration returns like a method's change: plain JSON data, and a stored row's fields fit the schema", () => {
    const priced = (migration: (fields: Readonly<Record<string, unknown>>) => Record<string, unknown>) =>
      Either.getOrThrow(compileApp(defineApp({
        name: "x",
        entities: { items: entity({ fields: { name: Schema.String, price: Schema.Number }, version: 2, migrations: { 2: migration } }) }
      })))
    // NaN would be served as a number and stored as null; a string is not a number.
    const nan = priced(mapField("price", () => Number.NaN))
    expect(() => upcastEvent(nan, event({ type: "items", kind: "invoked", data: { price: 1 } })))
      .toThrow('type "items", migration 2 failed: it returned price: must be a finite number')
    const text = priced(mapField("price", (p) => `${p as number} EUR`))
    expect(() => upcastRow(text, { type: "items", row: { id: "4", version: 1, name: "Pen", price: 1 } }))
      .toThrow('type "items", migration 2 failed: its result does not fit the schema: price: Expected number, actual "1 EUR"')
    // The copy is what is stored and served: a getter is read once.
    let reads = 0
    const getter = priced((fields) => ({ ...fields, get price() { return ++reads } }))
    expect(upcastRow(getter, { type: "items", row: { id: "4", version: 1, name: "Pen", price: 1 } }).row).toEqual({ id: "4", version: 1, name: "Pen", price: 1 })
    expect(reads).toBe(1)
  })
})

describe("the upcasting EventLog", () => {
  /** An in-memory log: enough to see what the decorator does to what the store yields. */
  const memoryLog = (events: ReadonlyArray<StoredEvent>, rows: ReadonlyArray<StoredRow>): EventLogShape => ({
    append: () => Effect.void,
    head: Effect.succeed({ lastSeq: events.length, checkpoint: events.length, counters: new Map() }),
    readFrom: (from) => Stream.fromIterable(events.filter((e) => e.seq >= from)),
    storedRows: Stream.fromIterable(rows),
    stats: Effect.succeed({ syncWrites: 0, eventsWritten: 0 })
  })
  const app = (migration: (f: Readonly<Record<string, unknown>>) => Record<string, unknown>) =>
    Either.getOrThrow(compileApp(defineApp({
      name: "x",
      entities: { articles: entity({ fields: { headline: Schema.String }, version: 2, migrations: { 2: migration } }) }
    })))
  const events: ReadonlyArray<StoredEvent> = [
    { seq: 1, at: 0, type: "articles", id: "1", version: 1, kind: "created", data: { title: "Old" } },
    { seq: 2, at: 0, type: "articles", id: "1", version: 2, kind: "updated", data: { title: "Older" }, schema: 1 },
    { seq: 3, at: 0, type: "articles", id: "1", version: 3, kind: "updated", data: { headline: "New" }, schema: 2 }
  ]
  const rows: ReadonlyArray<StoredRow> = [{ type: "articles", row: { id: "1", version: 1, title: "Old" } }]

  it("yields every event and stored row in the current version", async () => {
    const log = upcastingLog(memoryLog(events, rows), app(renameField("title", "headline")))
    const read = await Effect.runPromise(Stream.runCollect(log.readFrom(2)))
    expect([...read].map((e) => [e.seq, e.schema, e.data])).toEqual([[2, 2, { headline: "Older" }], [3, 2, { headline: "New" }]])
    const stored = await Effect.runPromise(Stream.runCollect(log.storedRows))
    expect([...stored]).toEqual([{ type: "articles", row: { id: "1", version: 1, headline: "Old" }, schema: 2 }])
  })

  it("is the store's own log when every type is at version 1", () => {
    const store = memoryLog(events, rows)
    expect(upcastingLog(store, Either.getOrThrow(compileApp(defineApp({ name: "x", entities: { articles: entity({ fields: { title: Schema.String } }) } }))))).toBe(store)
  })

  it("fails the read with StoreFailed naming the event and the migration when a migration throws", async () => {
    const log = upcastingLog(memoryLog(events, rows), app(() => {
      throw new Error("boom")
    }))
    const failed = await Effect.runPromise(Effect.flip(Stream.runDrain(log.readFrom(1))))
    expect(failed._tag).toBe("StoreFailed")
    expect(failed.message).toBe('the store is unavailable: cannot read event 1 (articles/1): type "articles", migration 2 failed: boom')
  })
})
