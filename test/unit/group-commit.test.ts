/**
 * Group-commit batching, over the in-memory log (memory-log.ts): the writer's real layers (GroupCommitLive,
 * CommandsLive, the rows projection, the change feed, the settings and the pricing catalog), only the store
 * swapped. No timing: an append is held open until every command of the next batch is queued, so each batch's
 * content is known exactly.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Either, Fiber, Layer, Logger, LogLevel } from "effect"
import pricing from "../../examples/pricing/app.ts"
import { Commands, CommandsLive, type Command } from "../../src/commands/commands.ts"
import { create, setPrice } from "./pricing-commands.ts"
import { GroupCommitLive } from "../../src/commands/group-commit.ts"
import { LocalCommit } from "../../src/commands/commit-mode.ts"
import { WoConfig } from "../../src/support/config.ts"
import { settingsFrom } from "../../testkit/settings.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import type { Change } from "../../src/domain/events.ts"
import { ChangeFeed, ChangeFeedLive } from "../../src/subscriptions/change-feed.ts"
import { makeRows, Rows } from "../../src/projections/rows/rows.ts"
import { MemoryLog, MemoryLogLive } from "./memory-log.ts"

const EmptyRows = Layer.sync(Rows, () => makeRows(new Map(), 0, { rows: 0, events: 0, tailEvents: 0, millis: 0 }))

const writer = (env: Record<string, string> = {}) =>
  CommandsLive.pipe(
    Layer.provideMerge(GroupCommitLive),
    Layer.provideMerge(LocalCommit),
    Layer.provideMerge(Layer.mergeAll(EmptyRows, ChangeFeedLive, MemoryLogLive)),
    Layer.provideMerge(Catalog.layer(pricing)),
    Layer.provideMerge(settingsFrom(env))
  )


/** Queues every command concurrently and returns once all of them are in the writer's queue. */
const submitAll = (commands: ReadonlyArray<Command>) =>
  Effect.gen(function* () {
    const { execute } = yield* Commands
    const queued = yield* Deferred.make<void>()
    let accepted = 0
    const onStage = (stage: string) => {
      if (stage === "accepted" && ++accepted === commands.length) Deferred.unsafeDone(queued, Effect.void)
    }
    const fibers = yield* Effect.forEach(commands, (c) => Effect.fork(Effect.either(execute(c, { onStage }))))
    yield* Deferred.await(queued)
    return fibers
  })

/**
 * Holds the writer in an append (of a blocker create), queues `commands` behind it, then lets it go: the
 * commands are then all pending together when the writer takes its next batch.
 */
const queuedBehindAnAppend = (commands: ReadonlyArray<Command>) =>
  Effect.gen(function* () {
    const log = yield* MemoryLog
    const { execute } = yield* Commands
    const held = yield* log.hold
    const blocker = yield* Effect.fork(execute(create("blocker")))
    yield* held.entered
    const appendsBefore = log.appends.length
    const fibers = yield* submitAll(commands)
    yield* held.release
    yield* Fiber.join(blocker)
    const results = yield* Effect.forEach(fibers, Fiber.join)
    return { results, appends: log.appends.slice(appendsBefore) }
  })

const executeOne = (command: Command) => Effect.flatMap(Commands, (c) => c.execute(command))

describe("group commit", () => {
  it.effect("N concurrent set_price calls on one product become versions 2..N+1 in one append", () =>
    Effect.gen(function* () {
      const N = 50
      const first = yield* executeOne(create("widget"))
      expect(first.event).toMatchObject({ seq: 1, id: "1", version: 1 })
      const feed = yield* ChangeFeed
      const published: Array<ReadonlyArray<Change>> = []
      yield* feed.listen((changes) => void published.push(changes))

      const { results, appends } = yield* queuedBehindAnAppend(Array.from({ length: N }, (_, i) => setPrice("1", i + 2)))

      expect(results.every(Either.isRight)).toBe(true)
      const committed = results.flatMap((r) => (Either.isRight(r) ? [r.right] : []))
      expect(committed.map((c) => c.event.version).sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i + 2))
      // One durable write for all N, far fewer than N.
      expect(appends).toHaveLength(1)
      expect(appends[0].entries).toHaveLength(N)
      // Sequence numbers continue without gaps after the blocker (seq 2).
      expect(appends[0].entries.map((e) => e.event.seq)).toEqual(Array.from({ length: N }, (_, i) => i + 3))
      // The projection holds the last decision, and the feed announced the batch once, after it was durable.
      const last = committed.find((c) => c.event.version === N + 1)!
      const row = (yield* Rows).get("products", "1")
      expect(row).toMatchObject({ version: N + 1, price: last.row!.price })
      expect(published.map((p) => p.length)).toEqual([1, N])
      expect((yield* MemoryLog).events).toHaveLength(N + 2)
    }).pipe(Effect.scoped, Effect.provide(writer())))

  it.effect("a failing append fails every waiter of its batch, applies nothing, and the next command continues from the log", () =>
    Effect.gen(function* () {
      yield* executeOne(create("widget", 5))
      const log = yield* MemoryLog
      const rows = yield* Rows
      const held = yield* log.hold
      const blocker = yield* Effect.fork(executeOne(create("blocker")))
      yield* held.entered
      log.failNext(1)
      const fibers = yield* submitAll([setPrice("1", 6), setPrice("1", 7), setPrice("1", 8), create("doomed")])
      yield* held.release
      expect((yield* Fiber.join(blocker)).event).toMatchObject({ seq: 2, id: "2" })
      const results = yield* Effect.forEach(fibers, Fiber.join)

      expect(results.map((r) => (Either.isLeft(r) ? r.left._tag : "committed"))).toEqual(Array(4).fill("StoreFailed"))
      // The failed batch was one append of all four; none of it reached the rows or the log.
      expect(log.appends.at(-1)!.entries).toHaveLength(4)
      expect(rows.get("products", "1")).toMatchObject({ version: 1, price: 5 })
      expect(rows.get("products", "3")).toBeUndefined()
      expect(rows.checkpoint()).toBe(2)
      expect(log.events.map((e) => e.seq)).toEqual([1, 2])

      // Nothing of the failed batch is reused or skipped: the next seq is 3, the next id 3, the next version 2.
      const next = yield* executeOne(setPrice("1", 9))
      expect(next.event).toMatchObject({ seq: 3, version: 2 })
      const created = yield* executeOne(create("after"))
      expect(created.event).toMatchObject({ seq: 4, id: "3" })
    }).pipe(Effect.scoped, Effect.provide(writer()), Logger.withMinimumLogLevel(LogLevel.None)))

  it.effect("a command decided against a stale expectedVersion fails alone; the rest of its batch commits", () =>
    Effect.gen(function* () {
      yield* executeOne(create("widget"))
      const { results, appends } = yield* queuedBehindAnAppend([
        setPrice("1", 10, 1),
        setPrice("1", 20, 1), // stale: the first made it version 2
        setPrice("1", 30),
        setPrice("99", 40) // no such product
      ])
      expect(results.map((r) => (Either.isLeft(r) ? r.left._tag : r.right.event.version))).toEqual([2, "VersionConflict", 3, "NotFound"])
      const conflict = results[1]
      expect(Either.isLeft(conflict) && conflict.left).toMatchObject({ expected: 1, actual: 2 })
      expect(appends).toHaveLength(1)
      expect(appends[0].entries.map((e) => e.event.data)).toEqual([{ price: 10 }, { price: 30 }])
      expect((yield* Rows).get("products", "1")).toMatchObject({ version: 3, price: 30 })
    }).pipe(Effect.scoped, Effect.provide(writer())))

  it.effect("WO_GROUP_COMMIT=off writes one append per command, even with all of them queued", () =>
    Effect.gen(function* () {
      expect((yield* WoConfig).groupCommit).toBe(false)
      const N = 8
      yield* executeOne(create("widget"))
      const { results, appends } = yield* queuedBehindAnAppend(Array.from({ length: N }, (_, i) => setPrice("1", i + 2)))
      expect(results.map((r) => Either.isRight(r) && r.right.event.version).sort((a, b) => Number(a) - Number(b)))
        .toEqual(Array.from({ length: N }, (_, i) => i + 2))
      expect(appends.map((a) => a.entries.length)).toEqual(Array(N).fill(1))
      expect((yield* Rows).get("products", "1")).toMatchObject({ version: N + 1 })
    }).pipe(Effect.scoped, Effect.provide(writer({ WO_GROUP_COMMIT: "off" }))))

  it.effect("on a single-writer log the writer never lingers: each batch is what is queued (WO_BATCH_LINGER_MS is for a shared store)", () =>
    Effect.gen(function* () {
      const { results, appends } = yield* queuedBehindAnAppend([create("a"), create("b")])
      expect(results.map((r) => Either.isRight(r) && r.right.event.id)).toEqual(["2", "3"])
      // Their callers answered, a write with nothing else queued is written at once, alone.
      const { execute } = yield* Commands
      expect((yield* execute(create("c"))).event.id).toBe("4")
      const log = yield* MemoryLog
      expect(appends.map((a) => a.entries.length)).toEqual([2])
      expect(log.appends.map((a) => a.entries.length)).toEqual([1, 2, 1])
    }).pipe(Effect.provide(writer({ WO_BATCH_LINGER_MS: "600000" }))))
})
