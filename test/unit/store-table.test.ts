/**
 * The store-backed row table (store-table.ts) against a brute-force oracle: random writes (each appended through
 * the real classic-level log, which writes the index records in the rows' batch, then applied, as the writer does)
 * interleaved with filtered, ordered and plain lists, walked page by page over the stored indexes. Some writes land
 * while an index is being backfilled: the index must end up with them all the same, and `wo verify`'s index check
 * finds nothing wrong with the records.
 */
import { Effect, Layer, ManagedRuntime } from "effect"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Row } from "../../src/domain/catalog.ts"
import type { RowQuery } from "../../src/projections/rows/row-indexes.ts"
import type { CompiledApp } from "../../src/domain/compile.ts"
import type { Change } from "../../src/domain/events.ts"
import { matchesAll, type Filter, type Order } from "../../src/domain/list-request.ts"
import { makeClassicLevelLog } from "../../src/log/classic-level/classic-level-log.ts"
import { EventLog, type EventLogShape } from "../../src/log/event-log.ts"
import { checkIndexRecords } from "../../src/log/classic-level/offline/index-check.ts"
import { LevelDb, levelDbLayer, type LevelDbShape } from "../../src/log/classic-level/level-db.ts"
import { indexPrefix, prefixEnd } from "../../src/log/classic-level/index-keys.ts"
import { readIndexStates, StoreIndexes, storeIndexes } from "../../src/log/classic-level/store-indexes.ts"
import { BACKFILL_CHUNK, IndexBackfill } from "../../src/projections/rows/index-backfill.ts"
import { compareKeys } from "../../src/projections/rows/ordered-index.ts"
import { RowCache } from "../../src/projections/rows/row-cache.ts"
import { BUILD_FIRST_ROWS, SCAN_BUDGET_ROWS, servedRow, StoreTable } from "../../src/projections/rows/store-table.ts"
import { tempDir } from "../../testkit/server.ts"

type Op =
  | { readonly _tag: "set"; readonly id: number; readonly status: string; readonly n: number }
  | { readonly _tag: "delete"; readonly id: number }
  | { readonly _tag: "query"; readonly where: ReadonlyArray<Filter>; readonly order: Order; readonly limit: number; readonly during: boolean }

const statuses = ["draft", "published", "archived"]

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ _tag: fc.constant("set" as const), id: fc.integer({ min: 1, max: 30 }), status: fc.constantFrom(...statuses), n: fc.integer({ min: -3, max: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ _tag: fc.constant("delete" as const), id: fc.integer({ min: 1, max: 30 }) }) },
  { weight: 2, arbitrary: fc.record({
    _tag: fc.constant("query" as const),
    where: fc.uniqueArray(
      fc.oneof(
        fc.record({ field: fc.constant("status"), value: fc.constantFrom<string | number | boolean>(...statuses) }),
        fc.record({ field: fc.constant("n"), value: fc.constantFrom<string | number | boolean>(-1, 0, 2) }),
        // Ranges (a span of the field's index, or a walk in another order), sets (spans merged), null tests.
        fc.record({
          field: fc.constantFrom("n", "status"),
          op: fc.constant("range" as const),
          lower: fc.option(fc.record({ value: fc.constantFrom<string | number>(-2, 0, 1, "a", "draft"), inclusive: fc.boolean() }), { nil: undefined }),
          upper: fc.option(fc.record({ value: fc.constantFrom<string | number>(-1, 0, 2, "p", "published"), inclusive: fc.boolean() }), { nil: undefined })
        }, { requiredKeys: ["field", "op"] }),
        fc.record({ field: fc.constantFrom("status", "n"), op: fc.constant("in" as const), values: fc.subarray<string | number>([...statuses, -3, 0, 3]) }),
        fc.record({ field: fc.constantFrom("status", "n"), op: fc.constant("null" as const), isNull: fc.boolean() })
      ) as fc.Arbitrary<Filter>,
      { maxLength: 2, selector: (f) => f.field }
    ),
    order: fc.record({ field: fc.constantFrom("id", "status", "n"), descending: fc.boolean() }),
    limit: fc.integer({ min: 1, max: 7 }),
    during: fc.boolean()
  }) }
)

const oracle = (rows: ReadonlyMap<number, Row>, where: ReadonlyArray<Filter>, order: Order) => {
  const sign = order.descending ? -1 : 1
  const key = (r: Row) => ({ value: order.field === "id" ? undefined : r[order.field], id: Number(r.id) })
  return [...rows.values()].filter((r) => matchesAll(where, r)).sort((a, b) => sign * compareKeys(key(a), key(b))).map((r) => r.id)
}

describe("StoreTable", () => {
  let runtime: ManagedRuntime.ManagedRuntime<LevelDb | EventLog, unknown>
  let h: LevelDbShape
  let log: EventLogShape
  beforeAll(async () => {
    const logLayer = Layer.scoped(EventLog, Effect.flatMap(LevelDb, (db) => makeClassicLevelLog(db, { writer: { acceptDataLoss: false, ackedRecord: false } })))
    runtime = ManagedRuntime.make(logLayer.pipe(Layer.provideMerge(levelDbLayer(tempDir("wo-store-table-")))))
    h = await runtime.runPromise(LevelDb)
    log = await runtime.runPromise(EventLog)
  })
  afterAll(() => runtime.dispose())

  it("walks every filtered, ordered and plain page like a brute-force filter and sort, writes landing mid-build included", async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 10, maxLength: 60, size: "max" }), async (ops) => {
        const type = `t${++run}`
        // A type no app declares: rows come out as stored (upcasting and defaults are the app's, tested elsewhere).
        const catalog = { types: new Map() } as unknown as CompiledApp
        const registry = await runtime.runPromise(storeIndexes(h))
        const indexes = new IndexBackfill({ store: h, registry, decode: (t, key, raw) => servedRow(catalog, t, key, raw), schemaOf: () => "test" })
        const table = new StoreTable(type, { db: () => h.current!()!, cache: new RowCache(4096), catalog, indexes }, 0, 0)
        const model = new Map<number, Row>()
        const write = async (op: Extract<Op, { _tag: "set" | "delete" }>) => {
          const before = model.get(op.id) ?? null
          if (op._tag === "delete" && before === null) return
          const row: Row | null = op._tag === "delete" ? null : { id: String(op.id), version: (before?.version ?? 0) + 1, status: op.status, n: op.n }
          const kind = row === null ? "deleted" : before === null ? "created" : "updated"
          const { lastSeq } = await runtime.runPromise(log.head)
          const event = { seq: lastSeq + 1, at: 0, type, id: String(op.id), version: row?.version ?? before!.version + 1, kind, data: {} }
          const change = { event, uri: "", row, before } as unknown as Change
          await runtime.runPromise(log.append({ entries: [change], counters: new Map([[type, 30]]) }))
          table.apply(change)
          if (row === null) model.delete(op.id)
          else model.set(op.id, row)
        }
        const walk = async (where: ReadonlyArray<Filter>, order: Order, limit: number) => {
          const walked: Array<string> = []
          let after: { id: number; value: unknown } | undefined
          for (let pages = 0; pages < 100; pages++) {
            const page = await Effect.runPromise(table.read({ where, order, ...(after ? { after } : {}), limit }))
            expect(page.rows.length).toBeLessThanOrEqual(limit)
            walked.push(...page.rows.map((r) => r.id))
            const last = page.rows[page.rows.length - 1]
            if (!page.more) break
            after = page.resume ?? { id: Number(last.id), value: order.field === "id" ? undefined : last[order.field] }
          }
          return walked
        }
        for (let i = 0; i < ops.length; i++) {
          const op = ops[i]
          if (op._tag !== "query") {
            await write(op)
            continue
          }
          if (op.during) {
            // Start the list (and its index builds), then let the following writes land while they scan.
            const pending = walk(op.where, op.order, op.limit)
            while (i + 1 < ops.length && ops[i + 1]._tag !== "query") await write(ops[++i] as Extract<Op, { _tag: "set" | "delete" }>)
            await pending
          }
          expect(await walk(op.where, op.order, op.limit)).toEqual(oracle(model, op.where, op.order))
          expect(table.size).toBe(model.size)
          const plain = table.page(0, 1000).rows.map((r) => r.id)
          expect(plain).toEqual(oracle(model, [], { field: "id", descending: false }))
        }
        const problems: Array<string> = []
        await checkIndexRecords(h.current!()!, (p) => problems.push(p))
        expect(problems).toEqual([])
      }),
      { numRuns: 40, seed: 27 }
    )
  }, 120_000)

  it("a backfill stopped between chunks resumes from its stored cursor, not from the first row", async () => {
    const type = "resumed"
    const catalog = { types: new Map() } as unknown as CompiledApp
    const N = 3 * BACKFILL_CHUNK + 123
    const { lastSeq } = await runtime.runPromise(log.head)
    const entries = Array.from({ length: N }, (_, i) => {
      const row = { id: String(i + 1), version: 1, n: i % 7 }
      return { event: { seq: lastSeq + i + 1, at: 0, type, id: row.id, version: 1, kind: "created", data: {} }, row, before: null } as unknown as Change
    })
    await runtime.runPromise(log.append({ entries, counters: new Map([[type, N]]) }))
    const db = h.current!()!
    const decode = (t: string, key: string, raw: string) => servedRow(catalog, t, key, raw)
    const first = new IndexBackfill({ store: h, registry: await runtime.runPromise(storeIndexes(h)), decode, schemaOf: () => "test" })
    const building = Effect.runPromise(Effect.either(first.ready(type, ["n"])))
    while (first.chunks < 2) await new Promise((resolve) => setImmediate(resolve))
    first.stop()
    expect((await building)._tag).toBe("Left")
    const stored = (await readIndexStates(db)).find((s) => s.type === type)!
    expect(stored).toMatchObject({ state: "building", after: first.chunks * BACKFILL_CHUNK })
    // What the first run wrote is taken away: a run that started over would put it back.
    const prefix = indexPrefix(type, ["n"])
    await db.clear({ gte: prefix, lt: prefixEnd(prefix) })
    const second = new IndexBackfill({ store: h, registry: new StoreIndexes(await readIndexStates(db)), decode, schemaOf: () => "test" })
    await Effect.runPromise(second.ready(type, ["n"]))
    expect(second.chunks).toBe(Math.ceil((N - stored.after + 1) / BACKFILL_CHUNK))
    const ids: Array<number> = []
    for await (const key of db.keys({ gte: prefix, lt: prefixEnd(prefix) })) ids.push(Number(key.slice(-12)))
    expect(ids.sort((a, b) => a - b)).toEqual(Array.from({ length: N - stored.after }, (_, i) => stored.after + i + 1))
    expect((await readIndexStates(db)).find((s) => s.type === type)).toMatchObject({ state: "ready", after: N })
  })

  it("answers a filtered list in id order while its index is built: a scan of at most SCAN_BUDGET_ROWS rows a page, partial when it stops short", async () => {
    const type = "scanned"
    const catalog = { types: new Map() } as unknown as CompiledApp
    // n = i % 7 (one row in seven), `rare` on three rows only, far apart: two budgets and a bit more.
    const N = 2 * SCAN_BUDGET_ROWS + 500
    const rare = new Set([5, SCAN_BUDGET_ROWS + 300, N])
    const rows = Array.from({ length: N }, (_, i): Row => ({ id: String(i + 1), version: 1, n: (i + 1) % 7, ...(rare.has(i + 1) ? { rare: true } : {}) }))
    const { lastSeq } = await runtime.runPromise(log.head)
    const entries = rows.map((row, i) => ({ event: { seq: lastSeq + i + 1, at: 0, type, id: row.id, version: 1, kind: "created", data: {} }, row, before: null }) as unknown as Change)
    await runtime.runPromise(log.append({ entries, counters: new Map([[type, N]]) }))
    // The backfill's chunks wait at a gate: the index stays building while the scans below walk.
    let open!: () => void
    const gate = new Promise<void>((resolve) => (open = resolve))
    const held: LevelDbShape = { ...h, writeAlone: (what, f) => Effect.zipRight(Effect.promise(() => gate), h.writeAlone!(what, f)) }
    const indexes = new IndexBackfill({ store: held, registry: await runtime.runPromise(storeIndexes(h)), decode: (t, key, raw) => servedRow(catalog, t, key, raw), schemaOf: () => "test" })
    const table = new StoreTable(type, { db: () => h.current!()!, cache: new RowCache(64 * 1024), catalog, indexes }, N, N)
    const walk = async (query: Omit<RowQuery, "after">, pages = Infinity) => {
      const ids: Array<string> = []
      const sizes: Array<number> = []
      const partial: Array<boolean> = []
      let after: RowQuery["after"]
      for (let k = 0; k < pages; k++) {
        const page = await Effect.runPromise(table.read({ ...query, ...(after ? { after } : {}) }))
        ids.push(...page.rows.map((r) => r.id))
        sizes.push(page.rows.length)
        partial.push(page.partial === true)
        const last = page.rows[page.rows.length - 1]
        if (!page.more) return { ids, sizes, partial, after: undefined }
        after = page.resume ?? { id: Number(last.id), value: undefined }
      }
      return { ids, sizes, partial, after }
    }
    const lists: Array<Omit<RowQuery, "after">> = [
      { where: [{ field: "n", value: 3 }], order: { field: "id", descending: false }, limit: 50 },
      { where: [{ field: "n", value: 3 }], order: { field: "id", descending: true }, limit: 64 },
      { where: [{ field: "rare", value: true }], order: { field: "id", descending: false }, limit: 2 },
      { where: [{ field: "rare", value: true }, { field: "n", value: N % 7 }], order: { field: "id", descending: true }, limit: 5 },
      { where: [{ field: "n", value: 99 }], order: { field: "id", descending: false }, limit: 10 }
    ]
    const expected = (q: Omit<RowQuery, "after">) => oracle(new Map(rows.map((r) => [Number(r.id), r])), q.where, q.order)
    for (const q of lists) {
      const scanned = await walk(q)
      expect(scanned.ids, JSON.stringify(q)).toEqual(expected(q))
      expect(Math.max(...scanned.sizes)).toBeLessThanOrEqual(q.limit)
      // A page is partial only when it is short of its limit and more rows follow.
      scanned.partial.forEach((partial, k) => expect(partial).toBe(scanned.sizes[k] < q.limit && k < scanned.sizes.length - 1))
    }
    // One row in seven: every page fills up within the budget.
    expect((await walk(lists[0])).partial.every((p) => !p)).toBe(true)
    // The scan stops at its budget: each of the rare rows is on the page whose budget reaches it, and that page says
    // it is partial (two of them; the last page ends the list).
    const rareWalk = await walk(lists[2])
    expect(rareWalk.sizes).toEqual([1, 1, 1])
    expect(rareWalk.ids).toEqual(["5", String(SCAN_BUDGET_ROWS + 300), String(N)])
    expect(rareWalk.partial).toEqual([true, true, false])
    // No match: one empty partial page per budget of rows, then the end.
    const none = await walk(lists[4])
    expect(none.sizes).toEqual([0, 0, 0])
    expect(none.partial).toEqual([true, true, false])
    expect(indexes.isReady(type, ["n"])).toBe(false)
    expect(indexes.chunks).toBe(0)
    // A walk begun on the scan goes on over the index once it is built (its cursor is the index's too).
    const begun = await walk(lists[0], 2)
    open()
    await Effect.runPromise(indexes.ready(type, ["n"]))
    await Effect.runPromise(indexes.ready(type, ["rare"]))
    const rest: Array<string> = []
    for (let after = begun.after; after !== undefined;) {
      const page = await Effect.runPromise(table.read({ ...lists[0], after }))
      rest.push(...page.rows.map((r) => r.id))
      expect(page.resume).toBeUndefined()
      after = page.more ? { id: Number(page.rows[page.rows.length - 1].id), value: undefined } : undefined
    }
    expect([...begun.ids, ...rest]).toEqual(expected(lists[0]))
    // Over the index: the same rows, in full pages.
    for (const q of lists) {
      const indexed = await walk(q)
      expect(indexed.ids, JSON.stringify(q)).toEqual(expected(q))
      expect(indexed.sizes.slice(0, -1).every((n) => n === q.limit)).toBe(true)
    }
  })

  it("builds the index of a table of at most BUILD_FIRST_ROWS rows before answering a filtered list: its first page holds the match", async () => {
    const type = "small"
    const catalog = { types: new Map() } as unknown as CompiledApp
    const N = 52
    expect(N).toBeLessThanOrEqual(BUILD_FIRST_ROWS)
    const rows = Array.from({ length: N }, (_, i): Row => ({ id: String(i + 1), version: 1, name: i + 1 === N ? "burst" : `item-${i + 1}` }))
    const { lastSeq } = await runtime.runPromise(log.head)
    const entries = rows.map((row, i) => ({ event: { seq: lastSeq + i + 1, at: 0, type, id: row.id, version: 1, kind: "created", data: {} }, row, before: null }) as unknown as Change)
    await runtime.runPromise(log.append({ entries, counters: new Map([[type, N]]) }))
    const indexes = new IndexBackfill({ store: h, registry: await runtime.runPromise(storeIndexes(h)), decode: (t, key, raw) => servedRow(catalog, t, key, raw), schemaOf: () => "test" })
    const table = new StoreTable(type, { db: () => h.current!()!, cache: new RowCache(64 * 1024), catalog, indexes }, N, N)
    const page = await Effect.runPromise(table.read({ where: [{ field: "name", value: "burst" }], order: { field: "id", descending: false }, limit: 10 }))
    expect(page.rows.map((r) => r.id)).toEqual([String(N)])
    expect(page.more).toBe(false)
    expect(page.partial).toBeUndefined()
    expect(indexes.isReady(type, ["name"])).toBe(true)
  })
})
