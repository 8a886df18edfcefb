/**
 * Fuzzing user code (fast-check): every callback (a method's apply, a view's evolve, a migration) throws or
 * returns hostile values: null-prototype objects, throwing getters and toString, BigInt, Symbol, functions,
 * cycles, Proxies that throw on every trap, revoked Proxies, Promises, class instances, non-finite numbers,
 * huge strings. Through a real server over a real classic-level dir: each fails alone (REST 500 MethodFailed,
 * MCP isError; a view ViewFailed; a migration a named MigrationFailed), the writer survives, later writes
 * succeed, and no bad value is stored.
 */
import { Effect, Either, Option, Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { GroupCommit } from "../../src/commands/group-commit.ts"
import { defineApp, entity, view, type ViewDef } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { MigrationFailed } from "../../src/domain/migrations.ts"
import { upcastEvent, upcastRow } from "../../src/log/upcasting-log.ts"
import { checkStore, readStore } from "../../testkit/log-reader.ts"
import { callTool } from "../../testkit/legacy-client.ts"
import { http, startServer } from "../../testkit/server.ts"

/** Hostile values, each made afresh (a Promise's rejection must not be left unhandled by the generator itself). */
const cyclic = () => {
  const a: Record<string, unknown> = { name: "loop" }
  a.self = { back: a }
  return a
}
const throwEverywhere = () =>
  new Proxy({}, new Proxy({}, { get: () => () => { throw new Error("trap") } }))
const revoked = () => {
  const { proxy, revoke } = Proxy.revocable({}, {})
  revoke()
  return proxy
}
const hugeString = () => "x".repeat(1_000_000)
const hostile: ReadonlyArray<readonly [string, () => unknown]> = [
  ["null prototype", () => Object.create(null)],
  ["null prototype holding NaN", () => Object.assign(Object.create(null), { n: Number.NaN })],
  ["throwing toString", () => ({ toString() { throw new Error("toString") } })],
  ["throwing getter", () => ({ get price() { throw new Error("getter") } })],
  ["throwing message getter", () => Object.defineProperty(new Error("x"), "message", { get() { throw new Error("message") } })],
  ["BigInt", () => 10n],
  ["Symbol", () => Symbol("s")],
  ["function", () => () => 1],
  ["cycle", cyclic],
  ["Proxy throwing on every trap", throwEverywhere],
  ["revoked Proxy", revoked],
  ["rejected Promise", () => Promise.reject(new Error("later"))],
  ["Date", () => new Date(0)],
  ["Map", () => new Map([["a", 1]])],
  ["NaN", () => Number.NaN],
  ["Infinity", () => Number.POSITIVE_INFINITY],
  ["undefined in an array", () => [1, undefined]],
  ["NaN deep inside", () => ({ a: [{ b: Number.NaN }] })],
  ["huge string", hugeString],
  ["huge-message Error", () => new Error(hugeString())]
]
/** A hostile value, thrown or returned, as the whole result or inside it. */
type Action = { readonly kind: "throw" | "return" | "return as field"; readonly value: number }
const action: fc.Arbitrary<Action> = fc.record({
  kind: fc.constantFrom("throw" as const, "return" as const, "return as field" as const),
  value: fc.nat({ max: hostile.length - 1 })
})
const perform = (a: Action, field: string): unknown => {
  const value = hostile[a.value][1]()
  if (a.kind === "throw") throw value
  return a.kind === "return" ? value : { [field]: value }
}
/**
 * Whether the action's result is in fact good data where it lands: a null-prototype object is a plain (empty)
 * object, and a huge string is a string, wherever anything is accepted (a field of Schema.Unknown, a view of
 * Schema.Any). `where`: the method's meta field, its price field, a view's value, or a migration's fields.
 */
type Where = "meta" | "price" | "view" | "migration"
const harmless = (a: Action, where: Where) => {
  const name = hostile[a.value][0]
  if (a.kind === "throw") return false
  if (name === "null prototype") return a.kind === "return" || where !== "price"
  if (name === "huge string") return a.kind === "return" ? where === "view" : where !== "price"
  return false
}

const label = (a: Action) => `${a.kind} ${hostile[a.value][0]}`
const MAX_MESSAGE = 4000

let current: Action = { kind: "throw", value: 0 }
let target = -1
const VIEWS = 25

const app = defineApp({
  name: "fuzz",
  entities: {
    products: entity({
      fields: { name: Schema.String, price: Schema.Number, meta: Schema.optional(Schema.Unknown) },
      methods: {
        set_price: { params: { price: Schema.Number }, apply: (_row, { price }) => ({ price }) },
        hostile: { params: {}, apply: () => perform(current, "meta") as never },
        hostile_price: { params: {}, apply: () => perform(current, "price") as never },
        poke: { params: {}, apply: (row) => ({ price: row.price }) }
      }
    })
  },
  // Views v0..v24, each hostile once (a failed view stays failed until a restart), and one that counts.
  views: {
    pokes: view({ schema: Schema.Int, initial: 0, on: { products: ["poke"] }, evolve: (n) => n + 1 }),
    ...Object.fromEntries(Array.from({ length: VIEWS }, (_, i): [string, ViewDef] => [`v${i}`, view({
      schema: Schema.Any,
      initial: 0,
      on: { products: ["poke"] },
      evolve: (n) => (target === i ? perform(current, "value") : n + 1)
    })]))
  }
})

const writerAlive = (server: Awaited<ReturnType<typeof startServer>>) =>
  server.runtime.runPromise(Effect.map(Effect.flatMap(GroupCommit, (w) => Effect.timeoutOption(w.died, "20 millis")), Option.isNone))

describe("fuzzing user code with hostile values (fast-check)", () => {
  it("a method's throw or result fails its own command alone; the writer survives and stores nothing bad", async () => {
    const server = await startServer(app)
    let version = 1
    let prices = 1
    let runs = 0
    try {
      expect((await http(`${server.url}/api/products`, { method: "POST", body: { name: "Pen", price: 1 } })).status).toBe(201)
      await fc.assert(fc.asyncProperty(action, fc.boolean(), fc.boolean(), async (a, onPrice, viaMcp) => {
        current = a
        runs++
        const method = onPrice ? "hostile_price" : "hostile"
        if (harmless(a, onPrice ? "price" : "meta")) {
          // Good data after all: stored like any change.
          const res = await http(`${server.url}/api/products/1/${method}`, { method: "POST", body: {} })
          expect(res.status, `${label(a)}: ${res.text.slice(0, 300)}`).toBe(200)
          expect(res.json.version).toBe(++version)
          return
        }
        if (viaMcp) {
          const res = await callTool(server.url, `products_${method}`, { id: "1" })
          expect(res.isError, label(a)).toBe(true)
          expect(res.content[0].text).toMatch(new RegExp(`^${method} failed: `))
          expect(res.content[0].text.length).toBeLessThan(MAX_MESSAGE)
        } else {
          const res = await http(`${server.url}/api/products/1/${method}`, { method: "POST", body: {} })
          expect(res.status, `${label(a)}: ${res.text.slice(0, 300)}`).toBe(500)
          expect(res.json.error).toBe("MethodFailed")
          expect(res.json.message).toMatch(new RegExp(`^${method} failed: `))
          expect(res.json.message.length).toBeLessThan(MAX_MESSAGE)
        }
        // The writer goes on: the next write succeeds at the next version.
        const next = await http(`${server.url}/api/products/1/set_price`, { method: "POST", body: { price: ++prices } })
        expect(next.status, `${label(a)}: the next write: ${next.text.slice(0, 300)}`).toBe(200)
        expect(next.json).toMatchObject({ version: ++version, price: prices })
      }), { numRuns: 80, seed: 20 })
      expect(await writerAlive(server)).toBe(true)
    } finally {
      await server.close()
    }
    expect(runs).toBe(80)
    // Only the create, the good set_price calls and the harmless changes were stored; every value reads back as written.
    const store = await readStore(server.dataDir)
    expect(checkStore(store)).toEqual([])
    expect(store.events).toHaveLength(version)
    expect(store.events.filter((e) => e.method === "set_price").map((e) => e.data.price)).toEqual(Array.from({ length: prices - 1 }, (_, i) => i + 2))
    for (const e of store.events) expect(JSON.parse(JSON.stringify(e.data)), `event ${e.seq}`).toEqual(e.data)
    expect(store.events.every((e) => Number.isFinite(e.data.price ?? 0))).toBe(true)
  })

  it("a view's evolve that throws or returns a hostile value fails that view alone; writes and other views go on", async () => {
    const server = await startServer(app)
    try {
      expect((await http(`${server.url}/api/products`, { method: "POST", body: { name: "Pen", price: 1 } })).status).toBe(201)
      let pokes = 0
      await fc.assert(fc.asyncProperty(action.filter((a) => !harmless(a, "view")), async (a) => {
        target = pokes
        current = a
        const res = await http(`${server.url}/api/products/1/poke`, { method: "POST", body: {} })
        expect(res.status, `${label(a)}: ${res.text.slice(0, 300)}`).toBe(200)
        pokes++
        const failed = await http(`${server.url}/api/_views/v${target}`)
        expect(failed.status, `${label(a)}: ${failed.text.slice(0, 300)}`).toBe(500)
        expect(failed.json.error).toBe("ViewFailed")
        expect(failed.json.message).toMatch(new RegExp(`^view v${target} failed at event \\d+ \\(products/1 poke\\): `))
        expect(failed.json.message.length).toBeLessThan(MAX_MESSAGE)
        expect((await http(`${server.url}/api/_views/pokes`)).json.value).toBe(pokes)
        // A view not yet targeted still folds every poke.
        expect((await http(`${server.url}/api/_views/v${VIEWS - 1}`)).json.value).toBe(pokes)
      }), { numRuns: VIEWS - 1, seed: 20 })
      expect(await writerAlive(server)).toBe(true)
    } finally {
      await server.close()
    }
  })

  it("a migration that throws or returns a hostile value fails the read with a MigrationFailed naming it, never anything else", () => {
    let migrate: Action = { kind: "throw", value: 0 }
    const migrated = Either.getOrThrow(compileApp(defineApp({
      name: "fuzz",
      entities: {
        products: entity({
          fields: { name: Schema.String, price: Schema.Number, meta: Schema.optional(Schema.Unknown) },
          version: 2,
          migrations: { 2: (fields) => (migrate.kind === "return as field" ? { ...fields, ...(perform(migrate, "meta") as object) } : perform(migrate, "meta")) as never }
        })
      }
    })))
    fc.assert(fc.property(action.filter((a) => !harmless(a, "migration")), fc.boolean(), (a, asRow) => {
      migrate = a
      let thrown: unknown
      try {
        if (asRow) upcastRow(migrated, { type: "products", row: { id: "7", version: 1, name: "Pen", price: 1 } })
        else upcastEvent(migrated, { seq: 3, at: 0, type: "products", id: "7", version: 1, kind: "created", data: { name: "Pen", price: 1 } })
      } catch (e) {
        thrown = e
      }
      expect(thrown, label(a)).toBeInstanceOf(MigrationFailed)
      const message = (thrown as MigrationFailed).message
      expect(message).toMatch(/^type "products", migration 2 failed: /)
      expect(message.length).toBeLessThan(MAX_MESSAGE)
    }), { numRuns: 200, seed: 20 })
  })
})
