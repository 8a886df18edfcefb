/**
 * The hub's fan-out in slices (stream-hub.ts): a delivery to many streams is written a slice at a time, yielding
 * to the event loop in between; a stream still waiting for its turn takes the next delivery's frames into the
 * same write; every stream gets every frame, in order. A stream whose socket is full costs no scheduling per
 * frame, and the memory budget is still enforced once its backlog has grown enough. Under sustained load a round
 * that found deliveries waiting is followed by a pause (PACE), during which the next deliveries coalesce.
 */
import { describe, expect, it } from "@effect/vitest"
import { vi } from "vitest"
import { makeStreamHub } from "../../src/http/streams/stream-hub.ts"
import { FakeSocket } from "../../testkit/fake-socket.ts"

const frame = (n: number) => Buffer.from(`data: ${n}\n\n`)
const microtask = () => new Promise<void>((r) => queueMicrotask(r))
const turn = () => new Promise<void>((r) => setImmediate(r))

/** A socket whose write takes 50 µs of CPU or more, as a real one's may (the pace is a multiple of a round's cost). */
class SlowSocket extends FakeSocket {
  override write(chunk: Buffer | string): boolean {
    const until = performance.now() + 0.05
    while (performance.now() < until);
    return super.write(chunk)
  }
}

describe("fan-out slices", () => {
  it("writes a slice, yields, and coalesces the next delivery into the writes still to come", async () => {
    // A slice of 0 ms: 16 writes, then yield; no pause after a round (the pace is the next tests'), whatever the load.
    const hub = makeStreamHub(undefined, 0, 0)
    const sockets = Array.from({ length: 40 }, () => new FakeSocket())
    const sinks = sockets.map((s) => hub.open(s, 8))
    for (const sink of sinks) sink.enqueue(frame(1))
    await microtask()
    expect(sockets.filter((s) => s.writes > 0).length).toBe(16)
    for (const sink of sinks) sink.enqueue(frame(2))
    for (let i = 0; i < 10; i++) await turn()
    // The first slice's streams had frame 1 alone, then frame 2; the others took both in one write.
    expect(sockets.slice(0, 16).every((s) => s.chunks.join("|") === "data: 1\n\n|data: 2\n\n")).toBe(true)
    expect(sockets.slice(16).every((s) => s.chunks.join("|") === "data: 1\n\ndata: 2\n\n")).toBe(true)
  })

  it("after a round that found deliveries waiting, pauses, and the next round writes what came meanwhile at once", async () => {
    // Writes of 50 µs or more and a pace of 20: the pause is 20 ms at least (20 writes a round).
    const hub = makeStreamHub(undefined, 0, 20)
    const sockets = Array.from({ length: 20 }, () => new SlowSocket())
    const sinks = sockets.map((s) => hub.open(s, 8))
    for (const sink of sinks) sink.enqueue(frame(1))
    await microtask() // the first slice: 16 streams
    for (const sink of sinks) sink.enqueue(frame(2)) // a delivery during the round
    await turn() // the round's last slice: the 4 others, with frames 1 and 2
    expect(sockets.slice(16).every((s) => s.chunks.join("|") === "data: 1\n\ndata: 2\n\n")).toBe(true)
    for (let i = 0; i < 5; i++) await turn()
    // Paused: the first 16 streams' frame 2 waits, and takes frame 3 into the same write.
    expect(sockets.slice(0, 16).every((s) => s.writes === 1)).toBe(true)
    for (const sink of sinks) sink.enqueue(frame(3))
    await vi.waitFor(() => expect(sockets.every((s) => s.text().endsWith("data: 3\n\n"))).toBe(true), { timeout: 5000, interval: 5 })
    expect(sockets.slice(0, 16).every((s) => s.chunks.join("|") === "data: 1\n\n|data: 2\n\ndata: 3\n\n")).toBe(true)
    expect(sockets.slice(16).every((s) => s.chunks.join("|") === "data: 1\n\ndata: 2\n\n|data: 3\n\n")).toBe(true)
  })

  it("a round that found nothing waiting is not followed by a pause", async () => {
    const hub = makeStreamHub(undefined, 0, 20)
    const sockets = Array.from({ length: 20 }, () => new SlowSocket())
    const sinks = sockets.map((s) => hub.open(s, 8))
    for (const sink of sinks) sink.enqueue(frame(1))
    await microtask()
    await turn()
    expect(sockets.every((s) => s.writes === 1)).toBe(true)
    for (const sink of sinks) sink.enqueue(frame(2))
    await microtask()
    expect(sockets.slice(0, 16).every((s) => s.chunks.join("|") === "data: 1\n\n|data: 2\n\n")).toBe(true)
  })

  it("a blocked stream is not scheduled per frame, and the budget closes it once its backlog is past it", async () => {
    const hub = makeStreamHub(64 * 100, 0)
    const socket = new FakeSocket()
    const sink = hub.open(socket, 10_000)
    socket.stall(true)
    sink.enqueue(frame(0))
    await microtask() // written; the socket says it is full
    expect(socket.writes).toBe(1)
    for (let i = 1; i <= 5; i++) sink.enqueue(frame(i))
    await turn()
    expect(socket.writes).toBe(1) // nothing written while blocked
    expect(sink.isClosed()).toBe(false)
    for (let i = 0; i < 1000 && !sink.isClosed(); i++) sink.enqueue(Buffer.alloc(64, 97))
    await microtask()
    expect(sink.isClosed()).toBe(true)
    expect(hub.budget.stats().closed).toBe(1)
  })

  it("writes what a blocked stream queued in one write on drain, after what it had written", async () => {
    const hub = makeStreamHub(undefined, 0)
    const socket = new FakeSocket()
    const sink = hub.open(socket, 100)
    socket.stall(true)
    sink.enqueue(frame(1))
    await microtask()
    for (let i = 2; i <= 4; i++) sink.enqueue(frame(i))
    socket.stall(false)
    expect(socket.chunks).toEqual(["data: 1\n\n", "data: 2\n\ndata: 3\n\ndata: 4\n\n"])
  })
})
