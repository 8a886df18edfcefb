/**
 * The `/api/_events` catch-up's shared pages (catch-up.ts) hold nothing past the projections' checkpoint: on a
 * shared log an event past it may not be acknowledged yet, and a failover can replace it; a page kept for the
 * readers behind must not serve the replaced event to them. No timing: a log whose tail a test rewrites.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import type { StoredEvent } from "../../src/domain/events.ts"
import { makeCatchUp } from "../../src/http/streams/catch-up.ts"
import { makeStreamHub } from "../../src/http/streams/stream-hub.ts"
import { EventLog } from "../../src/log/event-log.ts"
import { FakeSocket } from "../../testkit/fake-socket.ts"
import { MemoryLogLive } from "./memory-log.ts"

const event = (seq: number, era: string): StoredEvent => ({ seq, at: 0, type: "products", id: String(seq), version: 1, kind: "created", data: { name: `${era}-${seq}` } })

/** The names of the events a reader's socket got, in order. */
const names = (socket: FakeSocket) => [...socket.text().matchAll(/"name":"([^"]+)"/g)].map((m) => m[1])

describe("catch-up pages and the checkpoint", () => {
  it.effect("an event past the checkpoint is not kept in a page: replaced by a failover, readers behind get the new one", () =>
    Effect.gen(function* () {
      const stored = yield* EventLog
      // The log as this node reads it: 1..5 acknowledged, 6..10 written by a primary that then failed.
      let events = [...[1, 2, 3, 4, 5].map((s) => event(s, "acked")), ...[6, 7, 8, 9, 10].map((s) => event(s, "lost"))]
      let checkpoint = 5
      const log = { ...stored, readFrom: (from: number) => Stream.suspend(() => Stream.fromIterable(events.filter((e) => e.seq >= from))) }
      const { replay } = makeCatchUp({ log, checkpoint: () => checkpoint })
      const hub = makeStreamHub()
      const reader = (from: number, to: number, stalled: boolean) =>
        Effect.gen(function* () {
          const socket = new FakeSocket()
          socket.stall(stalled)
          const done = yield* Effect.fork(replay(hub.open(socket, 1_000_000), from, to))
          return { socket, done }
        })
      /** Event-loop turns (the catch-up steps on setImmediate) until `socket` has `n` events, at most 10,000. */
      const until = (socket: FakeSocket, n: number) =>
        Effect.promise(async () => {
          for (let turns = 0; names(socket).length < n && turns < 10_000; turns++) await new Promise((r) => setImmediate(r))
        })

      // A reader whose socket does not drain stays in its catch-up, so the page it read stays shared.
      const behind = yield* reader(1, 5, true)
      yield* until(behind.socket, 5)
      expect(names(behind.socket)).toEqual(["acked-1", "acked-2", "acked-3", "acked-4", "acked-5"])

      // The new primary's 6..10 replace the lost ones, and are acknowledged.
      events = [...events.slice(0, 5), ...[6, 7, 8, 9, 10].map((s) => event(s, "new"))]
      checkpoint = 10
      const next = yield* reader(1, 10, false)
      expect(yield* Fiber.join(next.done)).toBe(true)
      expect(names(next.socket)).toEqual(["acked-1", "acked-2", "acked-3", "acked-4", "acked-5", "new-6", "new-7", "new-8", "new-9", "new-10"])

      behind.socket.stall(false)
      expect(yield* Fiber.join(behind.done)).toBe(true)
    }).pipe(Effect.provide(MemoryLogLive)))
})
