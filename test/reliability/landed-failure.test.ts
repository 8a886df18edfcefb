/**
 * A write reported as failed may still have reached the disk (an fsync error after the data was written). The
 * writer must then re-read the log before deciding anything else: the landed events are applied, and the next
 * command takes the next sequence number and id instead of reusing (and overwriting) them.
 *
 * The store is the real classic-level one; only its append is decorated to report a failure after writing.
 */
import { Effect, Either, Layer, ManagedRuntime } from "effect"
import { describe, expect, it } from "vitest"
import { ClassicLevelLog } from "../../src/log/classic-level/classic-level-log.ts"
import { Commands, CommandsLive } from "../../src/commands/commands.ts"
import { EventLog } from "../../src/log/event-log.ts"
import { GroupCommitLive } from "../../src/commands/group-commit.ts"
import { LocalCommit } from "../../src/commands/commit-mode.ts"
import { levelDbLayer } from "../../src/log/classic-level/level-db.ts"
import { loadSettings, WoConfig } from "../../src/support/config.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import { StoreFailed } from "../../src/domain/errors.ts"
import { ChangeFeedLive } from "../../src/subscriptions/change-feed.ts"
import { Rows, RowsLive } from "../../src/projections/rows/rows.ts"
import { checkStore, readStore } from "../../testkit/log-reader.ts"
import { apps, tempDir } from "../../testkit/server.ts"

/** The real log, whose next `failures` appends write durably and then report a failure. */
const landingButFailing = (state: { failures: number }) =>
  Layer.effect(
    EventLog,
    Effect.map(EventLog, (log) =>
      EventLog.of({
        ...log,
        append: (batch) =>
          Effect.flatMap(log.append(batch), () =>
            state.failures-- > 0 ? Effect.fail(new StoreFailed({ reason: "injected fsync error after the write" })) : Effect.void)
      }))
  ).pipe(Layer.provide(ClassicLevelLog))

describe("a failed write that reached the disk anyway", () => {
  it("is applied before the next command, which takes the next seq and id", async () => {
    const dataDir = tempDir("wo-landed-")
    const settings = await Effect.runPromise(loadSettings({ dataDir }))
    const state = { failures: 1 }
    const store = RowsLive.pipe(Layer.provideMerge(landingButFailing(state)), Layer.provideMerge(levelDbLayer(dataDir)))
    const layer = CommandsLive.pipe(
      Layer.provideMerge(GroupCommitLive),
      Layer.provideMerge(LocalCommit),
      Layer.provideMerge(Layer.mergeAll(store, ChangeFeedLive)),
      Layer.provideMerge(Catalog.layer(apps.pricing)),
      Layer.provideMerge(Layer.succeed(WoConfig, settings))
    )
    const runtime = ManagedRuntime.make(layer)
    const create = (name: string) =>
      runtime.runPromise(
        Effect.either(Effect.flatMap(Commands, (c) => c.execute({ _tag: "Create", type: "products", input: { name, price: 1, currency: "USD" } })))
      )
    try {
      const failed = await create("first")
      expect(Either.isLeft(failed) && failed.left._tag).toBe("StoreFailed")
      const next = await create("second")
      expect(Either.isRight(next)).toBe(true)
      expect(Either.isRight(next) && next.right.event).toMatchObject({ seq: 2, id: "2" })
      const rows = await runtime.runPromise(Effect.map(Rows, (r) => [r.get("products", "1"), r.get("products", "2")]))
      expect(rows.map((r) => r?.name)).toEqual(["first", "second"])
    } finally {
      await runtime.dispose()
    }
    const snapshot = await readStore(dataDir)
    expect(checkStore(snapshot)).toEqual([])
    expect(snapshot.events.map((e) => [e.seq, e.id, e.data.name])).toEqual([[1, "1", "first"], [2, "2", "second"]])
  })
})
