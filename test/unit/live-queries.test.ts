/**
 * The live-query index against a brute-force oracle (every query checked against every change), and the
 * views' declaration checks, each problem named.
 */
import { Either, Schema } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { defineApp, entity, view, type Row } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { LiveQueryIndex, touches, type LiveQuery } from "../../src/subscriptions/live-queries.ts"

const statuses = ["draft", "published", "archived"] as const
const queryArb: fc.Arbitrary<LiveQuery> = fc
  .record({
    status: fc.option(fc.constantFrom(...statuses), { nil: undefined }),
    n: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }),
    type: fc.constantFrom("articles", "notes")
  })
  .map(({ status, n, type }) => {
    const where = [...(status === undefined ? [] : [{ field: "status", value: status }]), ...(n === undefined ? [] : [{ field: "n", value: n }])]
    return { uri: `wo://${type}?${where.map((f) => `${f.field}=${f.value}`).join("&")}`, type, where }
  })
const rowArb = fc.option(fc.record({ status: fc.constantFrom(...statuses), n: fc.integer({ min: 0, max: 3 }) }), { nil: null })
  .map((r): Row | null => (r === null ? null : { id: "1", version: 1, ...r }))

describe("the live-query index", () => {
  it("finds exactly the queries whose result a change touches, as checking every query would", () => {
    fc.assert(
      fc.property(fc.uniqueArray(queryArb, { maxLength: 40, selector: (q) => q.uri }), fc.array(fc.integer({ min: 0, max: 39 }), { maxLength: 10 }), fc.constantFrom("articles", "notes"), rowArb, rowArb,
        (queries, removed, type, before, after) => {
          const index = new LiveQueryIndex()
          for (const q of queries) index.add(q)
          const gone = new Set(removed.filter((i) => i < queries.length).map((i) => queries[i]))
          for (const q of gone) index.remove(q)
          const live = queries.filter((q) => !gone.has(q))
          expect(index.size).toBe(live.length)
          const expected = live.filter((q) => q.type === type && touches(q, before, after)).map((q) => q.uri).sort()
          expect(index.affected(type, before, after)).toEqual(expected)
        }),
      { numRuns: 500, seed: 16 }
    )
  })

  it("looks at the queries of the row's values only, not at every query", () => {
    const index = new LiveQueryIndex()
    let checked = 0
    for (let k = 0; k < 1000; k++) {
      const where = [{ field: "name", value: `item-${k}` }]
      // Count how often a query's filters are read: a scan of all queries would read all 1,000.
      const counted = new Proxy(where, { get: (t, p, r) => (p === "0" && checked++, Reflect.get(t, p, r)) })
      index.add({ uri: `wo://products?name=item-${k}`, type: "products", where: counted })
    }
    checked = 0
    const before: Row = { id: "7", version: 1, name: "item-7", price: 1 }
    expect(index.affected("products", before, { ...before, version: 2, price: 2 })).toEqual(["wo://products?name=item-7"])
    expect(checked).toBeLessThanOrEqual(2)
    checked = 0
    expect(index.affected("products", before, { ...before, version: 2, name: "item-8" })).toEqual(["wo://products?name=item-7", "wo://products?name=item-8"])
    expect(checked).toBeLessThanOrEqual(4)
  })
})

describe("view declarations", () => {
  const articles = entity({ fields: { title: Schema.String, status: Schema.Literal("draft", "published") } })
  const problemsOf = (views: Record<string, unknown>) =>
    Either.match(compileApp(defineApp({ name: "t", entities: { articles }, views: views as never })), { onLeft: (e) => e.problems, onRight: () => [] })
  const good = { schema: Schema.Struct({ n: Schema.Int }), initial: { n: 0 }, on: { articles: ["created"] }, evolve: (s: { n: number }) => ({ n: s.n + 1 }) }

  it("accepts a well-formed view", () => {
    expect(problemsOf({ counted: view(good) })).toEqual([])
  })

  it("names each problem with the view", () => {
    expect(problemsOf({ "Bad-Name": view(good) })).toEqual([expect.stringMatching(/^view "Bad-Name": names must match/)])
    expect(problemsOf({ v: view({ ...good, on: { nope: ["created"] } }) })).toEqual(['view "v": on.nope: the app declares no type "nope"'])
    expect(problemsOf({ v: view({ ...good, on: { articles: ["published"] } }) })).toEqual([
      'view "v": on.articles: "published" is neither an event kind (created, updated, deleted, invoked) nor a method of articles'
    ])
    expect(problemsOf({ v: view({ ...good, on: {} }) })).toEqual([expect.stringMatching(/^view "v": on must name the events it folds/)])
    expect(problemsOf({ v: view({ ...good, initial: { n: 0.5 } }) })).toEqual([expect.stringMatching(/^view "v": initial does not fit its schema: n: Expected an integer/)])
    expect(problemsOf({ v: view({ ...good, version: 0 }) })).toEqual(['view "v": version must be a positive integer'])
    expect(problemsOf({ v: { ...good, evolve: undefined } })).toEqual([expect.stringMatching(/^view "v": needs an evolve function/)])
  })

  it("refuses a view whose tool would shadow a type's tool, and a type named views", () => {
    const view_ = entity({ fields: { a: Schema.String }, methods: { counts: { params: {}, apply: () => ({}) } } })
    const clash = compileApp(defineApp({ name: "t", entities: { view: view_ }, views: { counts: view({ ...good, on: { view: ["created"] } }) } }))
    expect(Either.isLeft(clash) && clash.left.problems).toEqual(['view "counts": its tool view_counts clashes with a tool of the same name'])
    const reserved = compileApp(defineApp({ name: "t", entities: { views: entity({ fields: { a: Schema.String } }) } }))
    expect(Either.isLeft(reserved) && reserved.left.problems[0]).toMatch(/type "views": the name is reserved/)
  })
})
