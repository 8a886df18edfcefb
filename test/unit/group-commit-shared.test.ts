/**
 * The writer on a shared log (several nodes), over the in-memory shared log (memory-log.ts), which answers as the
 * PostgreSQL log does: seqs and create ids assigned by the log, stale entries refused one by one, `follow` for
 * the tailer. Another node's commits are injected; pausing `follow` makes this node lag, deterministically.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Either, Exit, Fiber, Layer, Option, Scope, TestClock } from "effect"
import pricing from "../../examples/pricing/app.ts"
import { Commands, CommandsLive, type Command } from "../../src/commands/commands.ts"
import { create, setPrice } from "./pricing-commands.ts"
import { GroupCommitLive } from "../../src/commands/group-commit.ts"
import { settingsFrom } from "../../testkit/settings.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import type { Change } from "../../src/domain/events.ts"
import { Stale } from "../../src/log/event-log.ts"
import { ChangeFeed, ChangeFeedLive } from "../../src/subscriptions/change-feed.ts"
import { makeRows, Rows } from "../../src/projections/rows/rows.ts"
import { SharedCommit } from "../../src/commands/commit-mode.ts"
import { SharedMemoryLog, SharedMemoryLogLive } from "./memory-log.ts"

const EmptyRows = Layer.sync(Rows, () => makeRows(new Map(), 0, { rows: 0, events: 0, tailEvents: 0, millis: 0 }))

const nodeWith = (env: Record<string, string>) =>
  CommandsLive.pipe(
    Layer.provideMerge(GroupCommitLive),
    Layer.provideMerge(SharedCommit),
    Layer.provideMerge(Layer.mergeAll(EmptyRows, ChangeFeedLive, SharedMemoryLogLive)),
    Layer.provideMerge(Catalog.layer(pricing)),
    Layer.provideMerge(settingsFrom(env))
  )
const node = nodeWith({})

const execute = (command: Command) => Effect.flatMap(Commands, (c) => c.execute(command))

/** Yields until `check` holds (a bounded number of times: no clock involved). */
const until = (check: () => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 10_000 && !check(); i++) yield* Effect.yieldNow()
    expect(check()).toBe(true)
  })

/** The event a write's fiber answered, once it is done (a bounded number of yields: no clock involved). */
const answeredSoon = (fiber: Fiber.RuntimeFiber<{ readonly event: unknown }, unknown>) =>
  Effect.gen(function* () {
    for (let i = 0; i < 10_000; i++) {
      const exit = yield* Fiber.poll(fiber)
      if (Option.isSome(exit)) return exit.value._tag === "Success" ? exit.value.value.event : exit.value
      yield* Effect.yieldNow()
    }
    return "still waiting"
  })

describe("group commit on a shared log", () => {
  it.effect("decides again what another node moved on: without an expected version it lands, with a stale one it fails alone", () =>
    Effect.gen(function* () {
      const log = yield* SharedMemoryLog
      expect((yield* execute(create("widget"))).event).toMatchObject({ seq: 1, id: "1", version: 1 })
      const feed = yield* ChangeFeed
      const published: Array<Change> = []
      yield* feed.listen((changes) => void published.push(...changes))
      log.pauseFollow()
      log.foreign("products", "1", { price: 50 }) // version 2, made on another node: not applied here yet
      const free = yield* Effect.fork(Effect.either(execute(setPrice("1", 7))))
      const pinned = yield* Effect.fork(Effect.either(execute(setPrice("1", 8, 1))))
      // Decided against version 1, refused by the log as stale: the writer now waits for its tailer.
      yield* until(() => log.appends.slice(1).flatMap((a) => a.outcomes).includes(Stale))
      log.resumeFollow()
      const [a, b] = [yield* Fiber.join(free), yield* Fiber.join(pinned)]
      expect(Either.isRight(a) && a.right.event).toMatchObject({ id: "1", version: 3, data: { price: 7 } })
      expect(Either.isLeft(b) && b.left).toMatchObject({ _tag: "VersionConflict", expected: 1 })
      expect((yield* Rows).get("products", "1")).toMatchObject({ version: 3, price: 7 })
      // The change feed got every commit in log order, the other node's included, each once.
      expect(published.map((c) => [c.event.seq, c.event.version])).toEqual([[2, 2], [3, 3]])
    }).pipe(Effect.scoped, Effect.provide(node)))

  it.effect("a command on an entity only another node has seen yet is decided again once this node caught up", () =>
    Effect.gen(function* () {
      const log = yield* SharedMemoryLog
      log.pauseFollow()
      log.foreign("products", undefined, { name: "theirs", price: 1, currency: "EUR" }) // product 1, elsewhere
      const reads = log.headReads()
      const call = yield* Effect.fork(Effect.either(execute(setPrice("1", 9))))
      // Refused here as not found, then the writer reads the head to catch up before deciding it again.
      yield* until(() => log.headReads() > reads)
      log.resumeFollow()
      const result = yield* Fiber.join(call)
      expect(Either.isRight(result) && result.right.event).toMatchObject({ id: "1", version: 2, data: { price: 9 } })
      // A command that fails on caught-up rows fails for real.
      const missing = yield* Effect.either(execute(setPrice("99", 1)))
      expect(Either.isLeft(missing) && missing.left._tag).toBe("NotFound")
    }).pipe(Effect.scoped, Effect.provide(node)))

  it.effect("applies its own batch at once when nothing of another node's came before it; the tailer skips it", () =>
    Effect.gen(function* () {
      const log = yield* SharedMemoryLog
      const published: Array<Change> = []
      yield* (yield* ChangeFeed).listen((changes) => void published.push(...changes))
      log.pauseFollow()
      // Answered while this node reads nothing back from the log: the writer applied its batch itself.
      const created = yield* execute(create("mine"))
      expect(created.event).toMatchObject({ seq: 1, id: "1" })
      expect((yield* Rows).get("products", "1")).toMatchObject({ name: "mine", version: 1 })
      log.foreign("products", "1", { price: 5 }) // seq 2, another node's
      log.resumeFollow()
      yield* until(() => published.length === 2)
      // The next write stands after the other node's: applied at once again, on the caught-up row.
      expect((yield* execute(setPrice("1", 7))).event).toMatchObject({ seq: 3, version: 3 })
      // Every commit published once, in log order: the tailer skipped seq 1, which this node had applied.
      expect(published.map((c) => c.event.seq)).toEqual([1, 2, 3])
      expect((yield* Rows).get("products", "1")).toMatchObject({ version: 3, price: 7 })
    }).pipe(Effect.scoped, Effect.provide(node)))

  it.effect("a batch written after another node's commit is applied right after it, and never read back", () =>
    Effect.gen(function* () {
      const log = yield* SharedMemoryLog
      const published: Array<Change> = []
      yield* (yield* ChangeFeed).listen((changes) => void published.push(...changes))
      log.pauseFollow()
      log.foreign("products", undefined, { name: "theirs", price: 1, currency: "USD" }) // seq 1, id 1: not read yet
      // Written at seq 2 (id 2): this node stands at 0, so the writer waits for its tailer.
      const writer = yield* Effect.fork(execute(create("mine")))
      // Once its tailer holds it (the PostgreSQL log's reads wait for the append's answer: follow.ts).
      yield* until(() => log.heldFrom() === 2)
      log.resumeFollow()
      const created = yield* Fiber.join(writer)
      expect(created.event).toMatchObject({ seq: 2, id: "2" })
      // Read-your-writes on the acking node, and the other node's row before it.
      expect((yield* Rows).get("products", "2")).toMatchObject({ name: "mine", version: 1 })
      expect((yield* Rows).get("products", "1")).toMatchObject({ name: "theirs", version: 1 })
      // Each commit published once, in log order; the log was read for the other node's commit alone.
      expect(published.map((c) => c.event.seq)).toEqual([1, 2])
      expect(log.delivered).toEqual([1])
      // The next write follows on, published once.
      expect((yield* execute(setPrice("2", 9))).event).toMatchObject({ seq: 3, version: 2 })
      yield* until(() => published.length === 3)
      expect(published.map((c) => c.event.seq)).toEqual([1, 2, 3])
    }).pipe(Effect.scoped, Effect.provide(node)))

  it.effect("a create takes the id the log assigns, even when this node's counter lags", () =>
    Effect.gen(function* () {
      const log = yield* SharedMemoryLog
      log.pauseFollow()
      log.foreign("products", undefined, { name: "theirs", price: 1, currency: "EUR" }) // takes id 1
      const mine = yield* Effect.fork(execute(create("mine")))
      yield* until(() => log.appends.length === 1)
      log.resumeFollow()
      const created = yield* Fiber.join(mine)
      expect(created.event).toMatchObject({ seq: 2, id: "2", version: 1 })
      expect(created.row).toMatchObject({ id: "2", name: "mine" })
      expect(JSON.parse(created.rowJson!)).toEqual(created.row)
      const rows = yield* Rows
      expect(rows.get("products", "1")).toMatchObject({ name: "theirs" })
      expect(rows.get("products", "2")).toMatchObject({ name: "mine" })
      // The next create continues after both.
      expect((yield* execute(create("next"))).event.id).toBe("3")
    }).pipe(Effect.scoped, Effect.provide(node)))
  it.effect("a batch held behind another node's commit the tailer cannot read (a paused primary) is answered at the store's bound, and the writer goes on", () =>
    Effect.gen(function* () {
      const log = yield* SharedMemoryLog
      log.pauseFollow() // nothing can be read from now on, as from a paused primary
      log.foreign("products", undefined, { name: "theirs", price: 1, currency: "USD" }) // seq 1, never read here
      const held = yield* Effect.fork(execute(create("mine"))) // written at seq 2: held behind seq 1
      yield* until(() => log.heldFrom() === 2)
      // Short of WO_STORE_TIMEOUT (default 5 s, TestClock time) the writer waits for its tailer...
      yield* TestClock.adjust("4999 millis")
      yield* Effect.yieldNow()
      expect(Option.isNone(yield* Fiber.poll(held))).toBe(true)
      // ...and at it, the durable write is acknowledged (without read-your-writes: logged) instead of holding every
      // write of the node for as long as the primary does not answer.
      yield* TestClock.adjust("1 millis")
      expect(yield* answeredSoon(held)).toMatchObject({ seq: 2, id: "2" })
      const rows = yield* Rows
      expect(rows.get("products", "2")).toBeUndefined()
      // The next write is decided and appended (held too: the tailer still cannot read), not queued behind the first.
      const next = yield* Effect.fork(execute(create("next")))
      yield* until(() => log.appends.length === 2)
      yield* TestClock.adjust("5 seconds")
      expect(yield* answeredSoon(next)).toMatchObject({ seq: 3, id: "3" })
      // Once the log can be read again, this node applies everything in order.
      log.resumeFollow()
      yield* until(() => rows.get("products", "3") !== undefined)
      expect([1, 2, 3].map((id) => rows.get("products", String(id))?.name)).toEqual(["theirs", "mine", "next"])
    }).pipe(Effect.scoped, Effect.provide(node)))
  it.effect("a batch held when the node shuts down is still answered: the shutdown lets it finish (at the store's bound, the log being unreadable)", () =>
    Effect.gen(function* () {
      const scope = yield* Scope.make()
      const built = yield* Layer.buildWithScope(node, scope)
      const log = Context.get(built, SharedMemoryLog)
      log.pauseFollow()
      log.foreign("products", undefined, { name: "theirs", price: 1, currency: "USD" })
      const held = yield* Effect.fork(execute(create("mine")).pipe(Effect.provide(built)))
      yield* until(() => log.heldFrom() === 2)
      // The shutdown interrupts the writer while it waits for its tailer; it must not cut the batch short.
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      for (let i = 0; i < 100; i++) yield* Effect.yieldNow()
      expect(Option.isNone(yield* Fiber.poll(held))).toBe(true)
      yield* TestClock.adjust("5 seconds")
      expect(yield* answeredSoon(held)).toMatchObject({ seq: 2, id: "2" })
      yield* Fiber.join(closing)
    }))

  /**
   * A batch of one in flight, two writes queued behind it; once it is answered, its caller writes again. `others`:
   * another node commits while the batch is in flight. Returns the size of every batch appended.
   */
  const callerAnsweredWritesAgain = (others: boolean) => Effect.gen(function* () {
    const log = yield* SharedMemoryLog
    // One caller, one write after another.
    for (const name of ["a", "b"]) yield* execute(create(name))
    const held = yield* log.hold
    const first = yield* Effect.fork(execute(create("c")))
    yield* held.entered
    if (others) log.foreign("products", "1", { price: 5 })
    let accepted = 0
    const onStage = (stage: string) => void (stage === "accepted" && accepted++)
    const queued = yield* Effect.forEach(["d", "e"], (name) => Effect.fork(Effect.flatMap(Commands, (c) => c.execute(create(name), { onStage }))))
    yield* until(() => accepted === 2)
    yield* held.release
    yield* Fiber.join(first)
    for (let i = 0; i < 100; i++) yield* Effect.yieldNow()
    const again = yield* Effect.fork(execute(create("f")))
    const answered = yield* Effect.forEach([...queued, again], Fiber.join)
    expect(answered.map((c) => c.event.id)).toEqual(["4", "5", "6"])
    return log.appends.map((a) => a.batch.entries.length)
  })

  it.effect("while other nodes write, the writer holds a batch open for the callers its last batch answered; a lone caller never waits", () =>
    Effect.gen(function* () {
      // The linger outlasts the test: a lone caller that waited for it would never be answered.
      expect(yield* callerAnsweredWritesAgain(true)).toEqual([1, 1, 1, 3])
    }).pipe(Effect.scoped, Effect.provide(nodeWith({ WO_BATCH_LINGER_MS: "600000" }))))

  it.effect("a node no other node writes beside never lingers: each batch is what is queued", () =>
    Effect.gen(function* () {
      expect(yield* callerAnsweredWritesAgain(false)).toEqual([1, 1, 1, 2, 1])
    }).pipe(Effect.scoped, Effect.provide(nodeWith({ WO_BATCH_LINGER_MS: "600000" }))))

  it.effect("with WO_BATCH_LINGER_MS=0 the writer closes each batch with what is queued, other nodes writing or not", () =>
    Effect.gen(function* () {
      expect(yield* callerAnsweredWritesAgain(true)).toEqual([1, 1, 1, 2, 1])
    }).pipe(Effect.scoped, Effect.provide(nodeWith({ WO_BATCH_LINGER_MS: "0" }))))
})
