/**
 * References on a shared log (several nodes), over the in-memory shared log: a ref to a row another node created,
 * which this lagging node has not applied yet, is decided once more against caught-up rows, not refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Either, Fiber, Layer } from "effect"
import { Commands, CommandsLive, type Command } from "../../src/commands/commands.ts"
import { GroupCommitLive } from "../../src/commands/group-commit.ts"
import { loadSettings, WoConfig } from "../../src/support/config.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import { ChangeFeedLive } from "../../src/subscriptions/change-feed.ts"
import { makeRows, Rows } from "../../src/projections/rows/rows.ts"
import { SharedCommit } from "../../src/commands/commit-mode.ts"
import { library } from "../../testkit/library-rules.ts"
import { SharedMemoryLog, SharedMemoryLogLive } from "./memory-log.ts"

const EmptyRows = Layer.sync(Rows, () => makeRows(new Map(), 0, { rows: 0, events: 0, tailEvents: 0, millis: 0 }))
const settings = Layer.effect(WoConfig, loadSettings({ dataDir: "/nonexistent" }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))))

const node = CommandsLive.pipe(
  Layer.provideMerge(GroupCommitLive),
  Layer.provideMerge(SharedCommit),
  Layer.provideMerge(Layer.mergeAll(EmptyRows, ChangeFeedLive, SharedMemoryLogLive)),
  Layer.provideMerge(Catalog.layer(library)),
  Layer.provideMerge(settings)
)

const execute = (command: Command) => Effect.flatMap(Commands, (c) => c.execute(command))

const until = (check: () => boolean) =>
  Effect.gen(function* () {
    for (let i = 0; i < 10_000 && !check(); i++) yield* Effect.yieldNow()
    expect(check()).toBe(true)
  })

describe("references on a shared log", () => {
  it.effect("a ref to a row another node created is decided again once this node has caught up", () =>
    Effect.gen(function* () {
      const log = yield* SharedMemoryLog
      log.pauseFollow()
      log.foreign("books", undefined, { title: "Dune", copies: 1, available: 1 }) // books 1, on another node
      const reads = log.headReads()
      const loan = yield* Effect.fork(Effect.either(execute({ _tag: "Create", type: "loans", input: { book: "1", status: "open" } })))
      // Refused against this node's lagging rows, then held until they include the log's head.
      yield* until(() => log.headReads() > reads)
      expect(log.appends.length).toBe(0)
      log.resumeFollow()
      const created = yield* Fiber.join(loan)
      expect(Either.isRight(created) && created.right.event).toMatchObject({ type: "loans", id: "1", kind: "created", data: { book: "1" } })
      // A ref to a row that exists nowhere is still refused, after the same second look.
      const missing = yield* Effect.either(execute({ _tag: "Create", type: "loans", input: { book: "2", status: "open" } }))
      expect(Either.isLeft(missing) && missing.left).toMatchObject({ _tag: "Rejected", code: "missing_reference", message: "books 2 does not exist" })
    }).pipe(Effect.provide(node)))
})
