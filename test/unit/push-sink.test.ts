/**
 * The push sink (push-sink.ts): frames of one delivery go out in one socket write; at most `limit` frames
 * wait, one more closes the stream after handing over what fit; a full socket queues, a drain flushes; the
 * memory budget's close frees everything at once; the heartbeat only beats on an idle stream, and a closed sink leaves it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { makeStreamHub } from "../../src/http/streams/stream-hub.ts"
import { FakeSocket } from "../../testkit/fake-socket.ts"

const frame = (n: number) => Buffer.from(`data: ${n}\n\n`)
const tick = () => new Promise<void>((r) => queueMicrotask(r))

describe("push sink", () => {
  it("writes the frames of one synchronous delivery in one socket write", async () => {
    const socket = new FakeSocket()
    const sink = makeStreamHub().open(socket, 8)
    for (let i = 1; i <= 3; i++) expect(sink.enqueue(frame(i))).toBe(true)
    expect(socket.writes).toBe(0)
    await tick()
    expect(socket.chunks).toEqual(["data: 1\n\ndata: 2\n\ndata: 3\n\n"])
  })

  it("splices a frame's parts back to back", async () => {
    const socket = new FakeSocket()
    const sink = makeStreamHub().open(socket, 8)
    sink.enqueue(Buffer.from("data: {\"id\":"), Buffer.from("7"), Buffer.from("}\n\n"))
    await tick()
    expect(socket.text()).toBe("data: {\"id\":7}\n\n")
  })

  it("keeps `limit` frames; one more closes it (overflow) after handing over those that fit, then ends", async () => {
    const socket = new FakeSocket()
    const sink = makeStreamHub().open(socket, 3)
    expect([1, 2, 3, 4].map((n) => sink.enqueue(frame(n)))).toEqual([true, true, true, false])
    expect(sink.isClosed()).toBe(true)
    expect(await Effect.runPromise(sink.closed)).toBe("overflow")
    expect(socket.text()).toBe("data: 1\n\ndata: 2\n\ndata: 3\n\n")
    expect(socket.ended).toBe(true)
    expect(socket.destroyed).toBe(false)
    expect(sink.enqueue(frame(5))).toBe(false)
  })

  it("queues while the socket is full and flushes the queue in one write on drain", async () => {
    const socket = new FakeSocket()
    const sink = makeStreamHub().open(socket, 8)
    socket.stall(true)
    sink.enqueue(frame(1))
    await tick() // written, but the socket says it is full
    sink.enqueue(frame(2))
    sink.enqueue(frame(3))
    await tick()
    expect(socket.writes).toBe(1)
    expect(sink.backlog()).toBeGreaterThan(0)
    socket.stall(false)
    expect(socket.chunks).toEqual(["data: 1\n\n", "data: 2\n\ndata: 3\n\n"])
    expect(sink.backlog()).toBe(0)
  })

  it("is bounded while the socket is full: a reader that stopped is closed, never buffered without end", async () => {
    const socket = new FakeSocket()
    const sink = makeStreamHub().open(socket, 4)
    socket.stall(true)
    sink.enqueue(frame(0))
    await tick()
    let accepted = 0
    for (let i = 1; i <= 100; i++) if (sink.enqueue(frame(i))) accepted++
    expect(accepted).toBe(4)
    expect(sink.isClosed()).toBe(true)
  })

  it("a memory close drops the queue and destroys the socket at once", async () => {
    const socket = new FakeSocket()
    const sink = makeStreamHub().open(socket, 8)
    socket.stall(true)
    sink.enqueue(frame(1))
    await tick()
    sink.enqueue(frame(2))
    sink.close("memory")
    expect(socket.destroyed).toBe(true)
    expect(socket.chunks).toEqual(["data: 1\n\n"])
    expect(sink.backlog()).toBe(0)
  })

  it("writes its farewell frame last on a graceful close, none when the client left", async () => {
    const a = new FakeSocket()
    const b = new FakeSocket()
    const hub = makeStreamHub()
    for (const [socket, reason] of [[a, "shutdown"], [b, "client"]] as const) {
      const sink = hub.open(socket, 8)
      sink.farewell((r) => (r === "shutdown" ? "data: bye\n\n" : undefined))
      sink.enqueue(frame(1))
      sink.close(reason)
    }
    expect(a.text()).toBe("data: 1\n\ndata: bye\n\n")
    expect(b.text()).toBe("")
  })

  it("send waits for the socket to take a frame (replay backpressure)", async () => {
    const socket = new FakeSocket()
    const sink = makeStreamHub().open(socket, 8)
    socket.stall(true)
    let done = false
    const sent = Effect.runPromise(sink.send("data: r\n\n")).then((ok) => ((done = true), ok))
    await tick()
    await tick()
    expect(done).toBe(false)
    socket.stall(false)
    expect(await sent).toBe(true)
  })

  it("beats only when nothing was written lately and nothing waits", async () => {
    const socket = new FakeSocket()
    const sink = makeStreamHub().open(socket, 8)
    sink.beat(Date.now() - 10_000) // wrote at open, after that point: no beat
    expect(socket.writes).toBe(0)
    sink.beat(Date.now() + 1)
    expect(socket.text()).toBe(": heartbeat\n\n")
  })

  it("leaves the shared heartbeat when it closes, whatever closed it", () => {
    const hub = makeStreamHub()
    const sinks = ["memory", "client", "shutdown"].map(() => hub.open(new FakeSocket(), 8, 60_000))
    expect(hub.heartbeat.size()).toBe(3)
    sinks[0].close("memory")
    sinks[1].close("client")
    expect(hub.heartbeat.size()).toBe(1)
    sinks[2].close("shutdown")
    expect(hub.heartbeat.size()).toBe(0)
  })

  it("keeps its state per stream and its methods shared, none bound per stream", () => {
    const hub = makeStreamHub()
    const [a, b] = [new FakeSocket(), new FakeSocket()].map((s) => hub.open(s, 8, 60_000))
    // One set of methods for every open stream (bench/stream-memory.ts: heap per stream), not closures each.
    for (const m of ["enqueue", "send", "close", "flush", "farewell", "whenClosed", "backlog", "isClosed", "beat"] as const) expect(a[m]).toBe(b[m])
    expect(Object.keys(a).filter((k) => typeof (a as unknown as Record<string, unknown>)[k] === "function")).toEqual(["onDrain"])
    a.close("shutdown")
    expect(a.isClosed()).toBe(true)
    expect(b.isClosed()).toBe(false)
    expect(hub.heartbeat.size()).toBe(1)
  })
})
