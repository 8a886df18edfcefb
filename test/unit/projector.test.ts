/**
 * The projector (projections/projector.ts): the one place a durable commit becomes visible. Real rows, real views
 * recovered from an empty in-memory log, the real change feed; no writer and no timing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import pricing from "../../examples/pricing/app.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import type { Change, StoredEvent } from "../../src/domain/events.ts"
import { ChangeFeed, ChangeFeedLive } from "../../src/subscriptions/change-feed.ts"
import { makeProjector } from "../../src/projections/projector.ts"
import { makeRows, Rows } from "../../src/projections/rows/rows.ts"
import { Views, ViewsLive, type ViewUpdate } from "../../src/projections/views/views.ts"
import { KeyedViews } from "../../src/projections/views/keyed-views.ts"
import type { KeyedViewsShape } from "../../src/projections/views/keyed-shape.ts"
import { StoreFailed } from "../../src/domain/errors.ts"
import { MemoryLogLive } from "./memory-log.ts"

const EmptyRows = Layer.sync(Rows, () => makeRows(new Map(), 0, { rows: 0, events: 0, tailEvents: 0, millis: 0 }))
const projection = Layer.mergeAll(EmptyRows, ViewsLive).pipe(
  Layer.provideMerge(ChangeFeedLive),
  Layer.provideMerge(MemoryLogLive),
  Layer.provideMerge(Catalog.layer(pricing))
)

const event = (seq: number, type: string, id: string, version: number, kind: StoredEvent["kind"], data: Record<string, unknown>): StoredEvent =>
  ({ seq, at: 1000 + seq, type, id, version, kind, data })

const lampCreated = event(1, "products", "1", 1, "created", { name: "lamp", price: 10, currency: "USD" })
const lampRepriced = event(2, "products", "1", 2, "invoked", { price: 12 })
const deskCreated = event(4, "products", "2", 1, "created", { name: "desk", price: 5, currency: "EUR" })

/** Everything the change feed published, batch by batch. */
const listening = Effect.gen(function* () {
  const published: Array<{ readonly changes: ReadonlyArray<Change>; readonly views: ReadonlyArray<ViewUpdate> }> = []
  yield* (yield* ChangeFeed).listen((changes, views) => published.push({ changes, views }))
  return published
})

describe("projector", () => {
  it.scoped("folds a batch's events in order, each over the one before, and skips types the app does not declare", () =>
    Effect.gen(function* () {
      const projector = yield* makeProjector
      const changes = projector.fold([lampCreated, lampRepriced, event(3, "retired", "1", 1, "created", {}), deskCreated])
      expect(changes.map((c) => [c.event.seq, c.uri])).toEqual([[1, "wo://products/1"], [2, "wo://products/1"], [4, "wo://products/2"]])
      expect(changes[0].before).toBeNull()
      expect(changes[1].before).toEqual({ id: "1", version: 1, name: "lamp", price: 10, currency: "USD" })
      expect(changes[1].row).toEqual({ id: "1", version: 2, name: "lamp", price: 12, currency: "USD" })
      // Folding applies nothing.
      expect((yield* Rows).get("products", "1")).toBeUndefined()
    }).pipe(Effect.provide(projection)))

  it.scoped("applies to the rows and the views, then publishes the changes with the views they moved, once", () =>
    Effect.gen(function* () {
      const projector = yield* makeProjector
      const published = yield* listening
      const rows = yield* Rows
      const views = yield* Views

      yield* projector.apply(projector.fold([lampCreated, lampRepriced]))
      expect(rows.get("products", "1")).toMatchObject({ version: 2, price: 12 })
      expect(rows.checkpoint()).toBe(2)
      expect(JSON.parse(views.get("products_by_currency")!.valueJson!)).toEqual({ USD: 1, EUR: 0 })
      expect(published).toHaveLength(1)
      expect(published[0].changes.map((c) => c.event.seq)).toEqual([1, 2])
      expect(published[0].views.map((v) => v.name)).toEqual(["products_by_currency"])

      // A batch that leaves the view as it was publishes its changes and no view update.
      yield* projector.apply(projector.fold([event(3, "products", "1", 3, "invoked", { price: 13 })]))
      expect(published[1].views).toEqual([])

      // Nothing to apply: nothing is published.
      yield* projector.apply([])
      expect(published).toHaveLength(2)
    }).pipe(Effect.provide(projection)))

  it.scoped("applies the views as folded before the write (their records stored with it), not folded twice", () =>
    Effect.gen(function* () {
      const projector = yield* makeProjector
      const published = yield* listening
      const views = yield* Views
      const changes = projector.fold([deskCreated])
      const prepared = projector.prepare(changes)!
      expect(prepared.records.map((r) => r.name)).toEqual(["products_by_currency"])
      // Prepared but not yet durable: not visible.
      expect(JSON.parse(views.get("products_by_currency")!.valueJson!)).toEqual({ USD: 0, EUR: 0 })

      yield* projector.apply(changes, prepared)
      expect(JSON.parse(views.get("products_by_currency")!.valueJson!)).toEqual({ USD: 0, EUR: 1 })
      expect(published.map((p) => p.views.map((v) => v.seq))).toEqual([[4]])
    }).pipe(Effect.provide(projection)))

  it.scoped("moves nothing when a keyed view's entry cannot be read from the store while it folds a commit", () =>
    Effect.gen(function* () {
      const projector = yield* makeProjector
      const published = yield* listening
      const rows = yield* Rows
      const views = yield* Views
      // A shared log's keyed views read an entry the read-ahead missed synchronously; the store is down.
      const down = new StoreFailed({ reason: "cannot read the entries of view by_name: the primary did not answer" })
      expect(() => projector.applyNow(projector.fold([lampCreated]))).toThrow(down)
      // Nothing moved, so the tailer can apply the same commit again once the store answers.
      expect(rows.get("products", "1")).toBeUndefined()
      expect(rows.checkpoint()).toBe(0)
      expect(JSON.parse(views.get("products_by_currency")!.valueJson!)).toEqual({ USD: 0, EUR: 0 })
      expect(published).toEqual([])
    }).pipe(Effect.provide(Layer.merge(projection, Layer.succeed(KeyedViews, {
      names: ["by_name"],
      landed: () => {
        throw new StoreFailed({ reason: "cannot read the entries of view by_name: the primary did not answer" })
      }
    } as Partial<KeyedViewsShape> as KeyedViewsShape)))))
})
