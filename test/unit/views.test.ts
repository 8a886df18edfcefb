/**
 * The views projection (views.ts), driven as the projector drives it: `prepare` a batch's changes, then
 * `commit` (the batch is durable) or `discard` (it is not). The values a reader sees change only on commit, a
 * batch that leaves a value as it was names no update, and a view whose evolve throws or returns what its
 * schema refuses fails alone. Over an empty in-memory log (memory-log.ts); no timing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Logger, LogLevel, Schema } from "effect"
import { defineApp, entity, view, type Row } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import type { Change, StoredEvent } from "../../src/domain/events.ts"
import { rowUri } from "../../src/domain/uri.ts"
import { EventLog } from "../../src/log/event-log.ts"
import { recoverViews } from "../../src/projections/views/recovery.ts"
import type { ViewUpdate } from "../../src/projections/views/views.ts"
import { foldViews } from "../../src/projections/views/view-fold.ts"
import { MemoryLogLive } from "./memory-log.ts"

const Counts = Schema.Struct({ a: Schema.Int, b: Schema.Int })

/** A new declaration per use: `labels` changes its value in place, `initial` included. */
const shelves = () => defineApp({
  name: "shelves",
  entities: {
    items: entity({ fields: { kind: Schema.Literal("a", "b"), label: Schema.String } })
  },
  views: {
    // How many items of each kind: moves on creates and deletes only.
    by_kind: view({
      schema: Counts,
      initial: { a: 0, b: 0 },
      on: { items: ["created", "deleted"] },
      evolve: (counts, { before, after }) => {
        const next = { ...counts }
        if (before !== null) next[before.kind as "a" | "b"] -= 1
        if (after !== null) next[after.kind as "a" | "b"] += 1
        return next
      }
    }),
    // The labels seen, pushed in place (what evolve must not do): a discarded batch must not leak into it.
    labels: view({
      schema: Schema.Array(Schema.String),
      initial: [],
      on: { items: ["created", "updated"] },
      evolve: (labels, { after }) => {
        ;(labels as Array<string>).push(String(after?.label))
        return labels
      }
    }),
    // Throws on the label "boom"; returns a value its schema refuses on the label "misfit".
    fragile: view({
      schema: Schema.Int,
      initial: 0,
      on: { items: ["created", "updated"] },
      evolve: (n, { after }) => {
        if (after?.label === "boom") throw new Error("boom in evolve")
        return after?.label === "misfit" ? (-0.5 as number) : n + 1
      }
    })
  }
})

let seq = 0
/** One committed change of an item, as the projector hands it over. */
const change = (kind: StoredEvent["kind"], id: string, before: Row | null, after: Row | null): Change => {
  const event: StoredEvent = { seq: ++seq, at: 0, type: "items", id, version: (before?.version ?? 0) + 1, kind, data: after === null ? {} : { ...after } }
  return { event, uri: rowUri("items", id), row: after, before }
}
const item = (id: string, kind: "a" | "b", label: string, version = 1): Row => ({ id, version, kind, label })

/** The views of `app` over an empty log: every one folded from it (nothing stored yet). */
const fresh = Effect.gen(function* () {
  seq = 0
  return yield* recoverViews(yield* EventLog, Either.getOrThrow(compileApp(shelves())))
}).pipe(Effect.provide(MemoryLogLive), Logger.withMinimumLogLevel(LogLevel.None))

const valueOf = (views: Effect.Effect.Success<typeof fresh>, name: string) => {
  const s = views.get(name)!
  return s.valueJson === undefined ? undefined : JSON.parse(s.valueJson)
}

describe("views projection", () => {
  it.effect("starts from the initial values, folded from the empty log and stored with the first batch", () =>
    Effect.gen(function* () {
      const views = yield* fresh
      expect(views.recovered.rebuilt).toEqual(["by_kind", "labels", "fragile"])
      expect(views.all().map((s) => [s.name, s.seq, s.valueJson])).toEqual([["by_kind", 0, '{"a":0,"b":0}'], ["labels", 0, "[]"], ["fragile", 0, "0"]])
      // A batch none of them folds still stores the rebuilt values (dirty), and names no update.
      const c = change("created", "1", null, item("1", "a", "x"))
      const prepared = views.prepare([{ ...c, event: { ...c.event, type: "other" } }])
      expect(prepared.records.map((r) => r.name)).toEqual(["by_kind", "labels", "fragile"])
      expect(prepared.commit()).toEqual([])
      // Stored once: the next batch that folds nothing stores nothing.
      expect(views.prepare([]).records).toEqual([])
    }))

  it.effect("a prepared batch is seen only once committed; the update names each view whose value changed", () =>
    Effect.gen(function* () {
      const views = yield* fresh
      views.prepare([]).commit()
      const prepared = views.prepare([change("created", "1", null, item("1", "a", "first")), change("created", "2", null, item("2", "b", "second"))])
      expect(prepared.failures).toEqual([])
      expect(valueOf(views, "by_kind")).toEqual({ a: 0, b: 0 })
      expect(prepared.records.map((r) => r.name)).toEqual(["by_kind", "labels", "fragile"])
      const updates = prepared.commit()
      expect(updates).toEqual([
        { name: "by_kind", uri: "wo://views/by_kind", seq: 2 },
        { name: "labels", uri: "wo://views/labels", seq: 2 },
        { name: "fragile", uri: "wo://views/fragile", seq: 2 }
      ])
      expect(valueOf(views, "by_kind")).toEqual({ a: 1, b: 1 })
      expect(valueOf(views, "labels")).toEqual(["first", "second"])
      expect(views.get("by_kind")!.seq).toBe(2)
    }))

  it.effect("a batch that leaves a value as it was is neither stored nor announced for that view", () =>
    Effect.gen(function* () {
      const views = yield* fresh
      views.prepare([]).commit()
      views.prepare([change("created", "1", null, item("1", "a", "x"))]).commit()
      // An update: by_kind does not fold it; labels and fragile do.
      const prepared = views.prepare([change("updated", "1", item("1", "a", "x"), item("1", "a", "y", 2))])
      expect(prepared.records.map((r) => r.name)).toEqual(["labels", "fragile"])
      expect(prepared.commit().map((u) => u.name)).toEqual(["labels", "fragile"])
      // A create then a delete of the same kind: by_kind is folded twice and ends where it began.
      const both = views.prepare([change("created", "2", null, item("2", "b", "z")), change("deleted", "2", item("2", "b", "z"), null)])
      expect(both.commit().map((u) => u.name)).toEqual(["labels", "fragile"])
      expect(views.get("by_kind")!).toMatchObject({ seq: 1, valueJson: '{"a":1,"b":0}' })
    }))

  it.effect("a discarded batch leaves every value as it was, even one its evolve changed in place", () =>
    Effect.gen(function* () {
      const views = yield* fresh
      views.prepare([]).commit()
      views.prepare([change("created", "1", null, item("1", "a", "kept"))]).commit()
      views.prepare([change("created", "2", null, item("2", "a", "dropped"))]).discard()
      expect(valueOf(views, "labels")).toEqual(["kept"])
      expect(valueOf(views, "by_kind")).toEqual({ a: 1, b: 0 })
      // The next batch folds from the kept value, not from the discarded one.
      views.prepare([change("created", "3", null, item("3", "b", "next"))]).commit()
      expect(valueOf(views, "labels")).toEqual(["kept", "next"])
    }))

  it.effect("an evolve that throws fails its view alone, named with the event; the view is no longer folded", () =>
    Effect.gen(function* () {
      const views = yield* fresh
      views.prepare([]).commit()
      const prepared = views.prepare([change("created", "1", null, item("1", "a", "boom"))])
      expect(prepared.failures).toHaveLength(1)
      expect(prepared.failures[0].message).toBe("view fragile failed at event 1 (items/1 created): boom in evolve")
      expect(prepared.failures[0].stack).toContain("boom in evolve")
      expect(prepared.commit().map((u) => u.name)).toEqual(["by_kind", "labels", "fragile"])
      expect(views.get("fragile")).toEqual({ name: "fragile", seq: 1, failed: prepared.failures[0].message })
      expect(valueOf(views, "by_kind")).toEqual({ a: 1, b: 0 })
      // Writes go on: the others fold the next batch; the failed one is skipped (no record, no update).
      const next = views.prepare([change("created", "2", null, item("2", "b", "fine"))])
      expect(next.records.map((r) => r.name)).toEqual(["by_kind", "labels"])
      next.commit()
      expect(views.get("fragile")!.failed).toBe(prepared.failures[0].message)
    }))

  it.effect("a value its schema refuses fails the view, with the reason", () =>
    Effect.gen(function* () {
      const views = yield* fresh
      views.prepare([]).commit()
      const prepared = views.prepare([change("created", "1", null, item("1", "a", "misfit"))])
      expect(prepared.failures.map((f) => f.message)).toEqual([
        expect.stringMatching(/^view fragile failed at event 1 \(items\/1 created\): evolve returned a value that does not fit its schema: /)
      ])
      prepared.commit()
      expect(views.get("fragile")!.valueJson).toBeUndefined()
      expect(views.get("fragile")!.failed).toBe(prepared.failures[0].message)
    }))

  it.effect("an evolve that changes its value in place never changes the declaration's initial value (two runtimes of one app)", () =>
    Effect.gen(function* () {
      const compiled = Either.getOrThrow(compileApp(shelves()))
      const build = Effect.gen(function* () {
        seq = 0
        return yield* recoverViews(yield* EventLog, compiled)
      }).pipe(Effect.provide(MemoryLogLive), Logger.withMinimumLogLevel(LogLevel.None))
      const first = yield* build
      first.prepare([change("created", "1", null, item("1", "a", "first runtime"))]).commit()
      expect(valueOf(first, "labels")).toEqual(["first runtime"])
      // The second runtime in the process starts from the declared value, not from the first one's.
      const second = yield* build
      expect(valueOf(second, "labels")).toEqual([])
      // And a fold of the whole log (what startup and `wo replay --app` run) starts from it too, each time.
      const log = yield* Effect.provide(EventLog, MemoryLogLive)
      expect(JSON.parse((yield* foldViews(log, compiled, [compiled.views.get("labels")!], false)).get("labels")!.valueJson!)).toEqual([])
    }))

  it.effect("a view with no stored value over a non-empty log is folded in the background: refused until then, then exact, commits meanwhile included", () =>
    Effect.gen(function* () {
      const compiled = Either.getOrThrow(compileApp(shelves()))
      seq = 0
      const log = yield* EventLog
      const history = [change("created", "1", null, item("1", "a", "one")), change("created", "2", null, item("2", "b", "two"))]
      yield* log.append({ entries: history.map((c) => ({ event: c.event, row: c.row })), counters: new Map([["items", 2]]) })
      const views = yield* recoverViews(log, compiled)
      // Startup did not fold: every view is being folded again, and says why.
      expect(views.recovered.rebuilt).toEqual(["by_kind", "labels", "fragile"])
      expect(views.get("labels")).toMatchObject({ refolding: "it has no stored value" })
      expect(views.get("labels")!.valueJson).toBeUndefined()
      // Writes go on meanwhile: a batch committed before the fold is done is not lost to it.
      const during = change("created", "3", null, item("3", "a", "three"))
      const prepared = views.prepare([during])
      expect(prepared.records).toEqual([])
      yield* log.append({ entries: [{ event: during.event, row: during.row }], counters: new Map([["items", 3]]) })
      expect(prepared.commit()).toEqual([])
      const live: Array<ViewUpdate> = []
      yield* views.refold((updates) => live.push(...updates))
      expect(views.get("labels")!.refolding).toBeUndefined()
      // Gone live with the writer idle: announced once each, at the seq they were folded to.
      expect(live.map((u) => [u.uri, u.seq])).toEqual([["wo://views/by_kind", 3], ["wo://views/labels", 3], ["wo://views/fragile", 3]])
      expect(valueOf(views, "labels")).toEqual(["one", "two", "three"])
      expect(valueOf(views, "by_kind")).toEqual({ a: 2, b: 1 })
      expect(views.get("by_kind")!.seq).toBe(3)
      // Served from now on: the next batch folds on top of it, and stores its record (written on its own only with `at`).
      const next = views.prepare([change("created", "4", null, item("4", "b", "four"))])
      expect(next.records.map((r) => r.name)).toEqual(["by_kind", "labels", "fragile"])
      next.commit()
      expect(valueOf(views, "labels")).toEqual(["one", "two", "three", "four"])
    }).pipe(Effect.provide(MemoryLogLive), Logger.withMinimumLogLevel(LogLevel.None)))
})
