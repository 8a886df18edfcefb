/**
 * The row table's filtered and ordered pages against a brute-force oracle: random writes (creates, value
 * changes, deletes) interleaved with random queries, each walked page by page to the end. The indexes are
 * built lazily on first use and maintained after, so queries early in a run build them and later writes must
 * keep them right.
 */
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import type { Row } from "../../src/domain/catalog.ts"
import { matchesAll, type Filter, type Order } from "../../src/domain/list-request.ts"
import { compareKeys } from "../../src/projections/rows/ordered-index.ts"
import { RowTable } from "../../src/projections/rows/row-table.ts"

type Op =
  | { readonly _tag: "set"; readonly id: number; readonly status: string; readonly title?: string; readonly n: number }
  | { readonly _tag: "delete"; readonly id: number }
  | { readonly _tag: "query"; readonly where: ReadonlyArray<Filter>; readonly order: Order; readonly limit: number }

const statuses = ["draft", "published", "archived"]
const fields = ["status", "title", "n"] as const

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({
    _tag: fc.constant("set" as const),
    id: fc.integer({ min: 1, max: 25 }),
    status: fc.constantFrom(...statuses),
    title: fc.option(fc.constantFrom("a", "b", "B", "é", "aa", ""), { nil: undefined }),
    n: fc.integer({ min: -3, max: 3 })
  }) },
  { weight: 2, arbitrary: fc.record({ _tag: fc.constant("delete" as const), id: fc.integer({ min: 1, max: 25 }) }) },
  { weight: 2, arbitrary: fc.record({
    _tag: fc.constant("query" as const),
    where: fc.uniqueArray(
      fc.oneof(
        fc.record({ field: fc.constant("status"), value: fc.constantFrom<string | number | boolean>(...statuses, 1) }),
        fc.record({ field: fc.constant("title"), value: fc.constantFrom<string | number | boolean>("a", "b", "") }),
        fc.record({ field: fc.constant("n"), value: fc.constantFrom<string | number | boolean>(-1, 0, 2, "0") }),
        // Ranges, sets and null tests: checked row by row on a walk that an equality (if any) leads.
        fc.record({
          field: fc.constantFrom("n", "title"),
          op: fc.constant("range" as const),
          lower: fc.option(fc.record({ value: fc.constantFrom<string | number>(-2, 0, 1, "a", "b"), inclusive: fc.boolean() }), { nil: undefined }),
          upper: fc.option(fc.record({ value: fc.constantFrom<string | number>(-1, 0, 2, "aa", "é"), inclusive: fc.boolean() }), { nil: undefined })
        }, { requiredKeys: ["field", "op"] }),
        fc.record({ field: fc.constantFrom("status", "n"), op: fc.constant("in" as const), values: fc.subarray<string | number>(["draft", "archived", -3, 0, 3]) }),
        fc.record({ field: fc.constant("title"), op: fc.constant("null" as const), isNull: fc.boolean() })
      ) as fc.Arbitrary<Filter>,
      { maxLength: 2, selector: (f) => f.field }
    ),
    order: fc.record({ field: fc.constantFrom("id", ...fields), descending: fc.boolean() }),
    limit: fc.integer({ min: 1, max: 7 })
  }) }
)

/** What a query must return: every match, sorted by (value, id) in the order's direction. */
const oracle = (rows: ReadonlyMap<number, Row>, where: ReadonlyArray<Filter>, order: Order) => {
  const sign = order.descending ? -1 : 1
  return [...rows.values()]
    .filter((r) => matchesAll(where, r))
    .sort((a, b) =>
      sign * compareKeys(
        { value: order.field === "id" ? undefined : a[order.field], id: Number(a.id) },
        { value: order.field === "id" ? undefined : b[order.field], id: Number(b.id) }
      ))
    .map((r) => r.id)
}

describe("RowTable.query", () => {
  it("walks every filtered, ordered page exactly like a brute-force filter and sort", () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 10, maxLength: 120, size: "max" }), (ops) => {
        const table = new RowTable()
        const model = new Map<number, Row>()
        const versions = new Map<number, number>()
        for (const op of ops) {
          if (op._tag === "set") {
            const version = (versions.get(op.id) ?? 0) + 1
            versions.set(op.id, version)
            const row: Row = { id: String(op.id), version, status: op.status, n: op.n, ...(op.title === undefined ? {} : { title: op.title }) }
            table.set(row)
            model.set(op.id, row)
          } else if (op._tag === "delete") {
            table.delete(String(op.id))
            model.delete(op.id)
          } else {
            const walked: Array<string> = []
            let after: { id: number; value: unknown } | undefined
            for (let pages = 0; pages < 100; pages++) {
              const page = table.query({ where: op.where, order: op.order, ...(after ? { after } : {}), limit: op.limit })
              expect(page.rows.length).toBeLessThanOrEqual(op.limit)
              walked.push(...page.rows.map((r) => r.id))
              const last = page.rows[page.rows.length - 1]
              if (!page.more) break
              expect(last).toBeDefined()
              after = { id: Number(last.id), value: op.order.field === "id" ? undefined : last[op.order.field] }
            }
            expect(walked).toEqual(oracle(model, op.where, op.order))
          }
        }
      }),
      { numRuns: 400, seed: 16 }
    )
  })

  it("answers an equality filter from its bucket, not by reading every row", () => {
    const table = new RowTable()
    for (let i = 1; i <= 10_000; i++) table.set({ id: String(i), version: 1, status: i % 100 === 0 ? "published" : "draft" })
    const where = [{ field: "status", value: "published" }]
    table.query({ where, order: { field: "id", descending: false }, limit: 1 }) // builds the index
    // Count row reads through a table whose map is watched: the bucket's 100 ids, not 10,000 rows.
    let reads = 0
    const byId = (table as unknown as { byId: Map<string, Row> }).byId
    const get = byId.get.bind(byId)
    byId.get = (id: string) => {
      reads++
      return get(id)
    }
    const page = table.query({ where, order: { field: "id", descending: false }, limit: 50 })
    expect(page.rows.map((r) => r.id)).toEqual(Array.from({ length: 50 }, (_, i) => String((i + 1) * 100)))
    expect(page.more).toBe(true)
    expect(reads).toBe(51)
  })
})
