/**
 * The global stream memory budget (stream-budget.ts, WO_STREAM_MEMORY): past it, the largest backlogs are
 * closed first, only as many as needed, and a stream that keeps up is never touched.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeStreamHub } from "../../src/http/streams/stream-hub.ts"
import { FakeSocket } from "../../testkit/fake-socket.ts"

const tick = () => new Promise<void>((r) => queueMicrotask(r))
const frame = Buffer.alloc(1000, 97)

describe("stream memory budget", () => {
  it("closes the slowest stream (largest backlog) first, then the next, until the total fits", async () => {
    const hub = makeStreamHub(10_000)
    const open = (stalled: boolean) => {
      const socket = new FakeSocket()
      socket.stall(stalled)
      return { socket, sink: hub.open(socket, 1000) }
    }
    const healthy = open(false)
    const slow = open(true) // will hold 6 frames
    const slower = open(true) // will hold 8 frames
    const slowest = open(true) // will hold 9 frames
    const fill = (s: ReturnType<typeof open>, n: number) => {
      for (let i = 0; i < n; i++) s.sink.enqueue(frame)
    }
    fill(healthy, 20)
    fill(slow, 3)
    fill(slower, 4)
    fill(slowest, 5)
    await tick() // each stalled socket took one write and said it is full: 12 kB backlogged in all
    expect(hub.budget.stats().closed).toBe(1)
    expect(await Effect.runPromise(slowest.sink.closed)).toBe("memory")
    expect([slow, slower, healthy].map((s) => s.sink.isClosed())).toEqual([false, false, false])

    fill(slow, 3) // slow: 6 kB, slower: 4 kB, past the budget again; slow is now the largest
    fill(slower, 4) // slower: 8 kB
    await tick()
    expect(slower.sink.isClosed()).toBe(true)
    expect(slow.sink.isClosed()).toBe(false)
    expect(healthy.sink.isClosed()).toBe(false)
    expect(hub.budget.stats().closed).toBe(2)
    expect(hub.budget.stats().bytes).toBeLessThanOrEqual(10_000)
  })

  it("never closes streams whose backlogs fit together, however many", async () => {
    const hub = makeStreamHub(100_000)
    const sinks = Array.from({ length: 50 }, () => {
      const socket = new FakeSocket()
      socket.stall(true)
      return hub.open(socket, 1000)
    })
    for (const s of sinks) s.enqueue(frame)
    await tick()
    expect(sinks.some((s) => s.isClosed())).toBe(false)
    expect(hub.budget.stats()).toMatchObject({ backlogged: 50, bytes: 50_000, closed: 0 })
  })
})
