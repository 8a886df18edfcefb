/**
 * The bounded notice buffer (notice-buffer.ts): at most `capacity` unread notices; one more closes it with
 * "overflow" instead of growing or blocking, and its stream ends with exactly one End item.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Option, Stream } from "effect"
import { makeNoticeBuffer } from "../../src/http/notice-buffer.ts"
import type { Notice } from "../../src/projections/registry.ts"

const updated = (seq: number): Notice => ({ _tag: "Updated", uri: `wo://products/${seq}`, seq })

describe("the notice buffer", () => {
  it.effect("holds up to its capacity, in order", () =>
    Effect.gen(function* () {
      const buffer = yield* makeNoticeBuffer(3)
      for (const seq of [1, 2, 3]) buffer.deliver(updated(seq))
      expect(buffer.isClosed()).toBe(false)
      buffer.close("shutdown")
      expect(Chunk.toArray(yield* Stream.runCollect(buffer.items))).toEqual([updated(1), updated(2), updated(3), { _tag: "End", reason: "shutdown" }])
    }))

  it.effect("closes on overflow instead of growing: the reader gets what fitted, then End(overflow)", () =>
    Effect.gen(function* () {
      const buffer = yield* makeNoticeBuffer(3)
      for (const seq of [1, 2, 3, 4, 5, 6]) buffer.deliver(updated(seq))
      expect(buffer.isClosed()).toBe(true)
      const items = Chunk.toArray(yield* Stream.runCollect(buffer.items))
      expect(items).toEqual([updated(1), updated(2), updated(3), { _tag: "End", reason: "overflow" }])
    }))

  it.effect("is bounded by unread notices: a reader that keeps up never overflows", () =>
    Effect.gen(function* () {
      const buffer = yield* makeNoticeBuffer(2)
      const pull = yield* Stream.toPull(buffer.items)
      const read: Array<unknown> = []
      for (let seq = 1; seq <= 10; seq += 2) {
        buffer.deliver(updated(seq))
        buffer.deliver(updated(seq + 1))
        expect(buffer.isClosed()).toBe(false)
        while (read.length < seq + 1) read.push(...Chunk.toArray(yield* pull))
      }
      expect(read).toEqual(Array.from({ length: 10 }, (_, i) => updated(i + 1)))
      buffer.close("terminated")
      expect(Chunk.toArray(yield* pull)).toEqual([{ _tag: "End", reason: "terminated" }])
      // After End the stream is over.
      expect(yield* Effect.flip(pull)).toEqual(Option.none())
    }).pipe(Effect.scoped))

  it.effect("the first close wins; later closes and deliveries are ignored", () =>
    Effect.gen(function* () {
      const buffer = yield* makeNoticeBuffer(2)
      buffer.deliver(updated(1))
      buffer.close("replaced")
      buffer.close("shutdown")
      buffer.deliver(updated(2))
      buffer.deliver({ _tag: "ListChanged", seq: 3 })
      expect(Chunk.toArray(yield* Stream.runCollect(buffer.items))).toEqual([updated(1), { _tag: "End", reason: "replaced" }])
    }))

  it.effect("closing a full buffer never fails: End has its own slot", () =>
    Effect.gen(function* () {
      const buffer = yield* makeNoticeBuffer(1)
      buffer.deliver(updated(1))
      buffer.close("shutdown")
      expect(Chunk.toArray(yield* Stream.runCollect(buffer.items))).toEqual([updated(1), { _tag: "End", reason: "shutdown" }])
    }))
})
