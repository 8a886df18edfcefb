/**
 * Objects made once per request, or per event a node folds, keep one hidden class. On Node 20, an object literal
 * that spreads another and then gains a key the spread did not bring (`{ ...a, b: 1 }`, `{ ...a, ...b }`) gets a
 * new hidden class on each call once its code is optimised; hidden classes live in the old generation, so a few per
 * request fill it within seconds and bring on full collections (bench/scenarios/view-refold.ts saw one every ~3 s
 * under reads alone, and young collections three times as long). Each builder below is called until optimised, and
 * its last results are compared with V8's own test of hidden-class identity (`%HaveSameMap`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Logger, LogLevel, Schema } from "effect"
import type * as http from "node:http"
import { setFlagsFromString } from "node:v8"
import { defineApp, entity, view } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { writeBuffered } from "../../src/http/edge/answer.ts"
import { jsonText, type EdgeResponse } from "../../src/http/edge/edge-types.ts"
import { EventLog } from "../../src/log/event-log.ts"
import { recoverViews } from "../../src/projections/views/recovery.ts"
import { makeCachedFold } from "../../src/projections/cached-fold.ts"
import type { CachedRows } from "../../src/projections/rows/rows.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { makeModernPolicy } from "../../src/http/mcp/modern-era.ts"
import { ROW_CACHE } from "../../src/http/mcp/dispatcher.ts"
import { describeServer } from "../../src/http/mcp/server-info.ts"
import { MemoryLogLive } from "./memory-log.ts"

setFlagsFromString("--allow-natives-syntax")
// Compiled after the flag: V8's intrinsics are parsed only with it on.
const haveSameMap = new Function("a", "b", "return %HaveSameMap(a, b)") as (a: unknown, b: unknown) => boolean

/** How many of the last `compared` calls of `make` answered an object of another hidden class than the call before. */
const newShapes = (make: (i: number) => object, calls = 60_000, compared = 1_000) => {
  let previous: object | undefined
  let changed = 0
  for (let i = 0; i < calls; i++) {
    const made = make(i)
    if (i >= calls - compared && !haveSameMap(made, previous)) changed++
    previous = made
  }
  return changed
}

/** One whole view (a count) over an empty in-memory log: folded at once, then served. */
const countedViews = Effect.gen(function* () {
  const app = defineApp({
    name: "shapes",
    entities: { items: entity({ fields: { label: Schema.String } }) },
    views: { count: view({ schema: Schema.Int, initial: 0, on: { items: ["created"] }, evolve: (n) => n + 1 }) }
  })
  return yield* recoverViews(yield* EventLog, Either.getOrThrow(compileApp(app)))
}).pipe(Effect.provide(MemoryLogLive), Logger.withMinimumLogLevel(LogLevel.None))

describe("hot-path objects keep one hidden class", () => {
  it("the intrinsic tells shapes apart (the spread that gains a key makes a new one per call)", () => {
    const base = { a: 1 }
    expect(newShapes((i) => ({ ...base, b: i }))).toBeGreaterThan(900)
    expect(newShapes((i) => Object.assign({}, base, { b: i }))).toBe(0)
  })

  it("a JSON answer's headers (jsonText)", () => {
    expect(newShapes((i) => (jsonText(200, "{}", { etag: `"${i}"` }) as Extract<EdgeResponse, { _tag: "Buffered" }>).headers)).toBe(0)
  })

  it("a buffered answer's headers with their Content-Length (writeBuffered)", () => {
    let written: object = {}
    // Only the head and the end are written: what writeBuffered hands to node:http is what is compared.
    const res = { writeHead: (_status: number, headers: object) => void (written = headers), end: () => undefined } as unknown as http.ServerResponse
    const answer = jsonText(200, "{}", { etag: '"1"' }) as Extract<EdgeResponse, { _tag: "Buffered" }>
    expect(newShapes(() => {
      writeBuffered(res, answer)
      return written
    })).toBe(0)
  })

  it.effect("the row a node that follows another node's commits makes of an update to a row it does not hold (cached-fold.ts)", () =>
    Effect.map(EventLog, (log) => {
      const app = defineApp({ name: "shapes", entities: { items: entity({ fields: { label: Schema.String, price: Schema.Int } }) } })
      // The cache holds no row: each update is folded from the event's own fields.
      const holdsNone = { peek: () => undefined } as unknown as CachedRows
      const fold = makeCachedFold(Either.getOrThrow(compileApp(app)), holdsNone, log).fold
      const update = (i: number): StoredEvent => ({ seq: i + 2, at: 0, type: "items", id: "1", version: i + 2, kind: "updated", data: { price: i } })
      expect(fold([update(0)])[0]?.row).toEqual({ id: "1", version: 2, price: 0 })
      expect(newShapes((i) => fold([update(i)])[0]!.row!)).toBe(0)
    }).pipe(Effect.provide(MemoryLogLive)))

  it("an MCP result the modern era decorates from the object (a view tool's, a resource read's)", () => {
    const app = defineApp({ name: "shapes", entities: { items: entity({ fields: { label: Schema.String } }) } })
    const modern = makeModernPolicy(describeServer(Either.getOrThrow(compileApp(app)), []))
    const decorated = (i: number, cache: boolean) =>
      modern.decorate(cache ? { result: { contents: [{ uri: `wo://items/${i}`, text: "{}" }] }, cache: ROW_CACHE } : { result: { content: [], structuredContent: { n: i } } }).result
    expect(decorated(1, true)).toMatchObject({ resultType: "complete", ttlMs: ROW_CACHE.ttlMs, cacheScope: ROW_CACHE.cacheScope })
    expect(newShapes((i) => decorated(i, false))).toBe(0)
    expect(newShapes((i) => decorated(i, true))).toBe(0)
  })

  it.effect("a view's snapshot, made per read (views.get)", () =>
    Effect.map(countedViews, (views) => {
      expect(views.get("count")?.valueJson).toBe("0")
      expect(newShapes(() => views.get("count")!)).toBe(0)
    }))
})
