/**
 * What the push streams report to metrics (stream-hub.ts → metrics.ts): frames written once each, frames
 * dropped when a stream closes for overflow or memory, and closes by reason; read through the exposition.
 */
import { describe, expect, it } from "@effect/vitest"
import { makeStreamHub } from "../../src/http/streams/stream-hub.ts"
import { makeMetrics } from "../../src/metrics/metrics.ts"
import { FakeSocket } from "../../testkit/fake-socket.ts"
import { parsePrometheusText } from "../../testkit/prom-text.ts"

const frame = (n: number) => Buffer.from(`data: ${n}\n\n`)
const tick = () => new Promise<void>((r) => queueMicrotask(r))

describe("stream metrics", () => {
  it("count frames sent and dropped, and streams closed for overflow and for memory", async () => {
    const metrics = makeMetrics()
    const hub = makeStreamHub(100)
    hub.observe(metrics)
    // A reader that keeps up: 3 frames, one delivery.
    const reading = hub.open(new FakeSocket(), 8)
    for (let i = 1; i <= 3; i++) reading.enqueue(frame(i))
    await tick()
    // Overflow: 2 frames fit (handed over at the close), the third is dropped.
    const slow = hub.open(new FakeSocket(), 2)
    expect([1, 2, 3].map((n) => slow.enqueue(frame(n)))).toEqual([true, true, false])
    // Memory: a stalled socket's backlog over the 100-byte budget is freed, its queued frames dropped.
    const stalledSocket = new FakeSocket()
    stalledSocket.stall(true)
    const stalled = hub.open(stalledSocket, 100)
    stalled.enqueue(Buffer.alloc(80, 97))
    await tick()
    for (let i = 0; i < 4; i++) stalled.enqueue(frame(i))
    await tick()
    expect(stalled.isClosed()).toBe(true)

    const m = parsePrometheusText(await metrics.render())
    expect(m.value("wo_notifications_sent_total")).toBe(3 + 2 + 1)
    expect(m.value("wo_notifications_dropped_total")).toBe(1 + 4)
    expect(m.value("wo_streams_closed_total", { reason: "overflow" })).toBe(1)
    expect(m.value("wo_streams_closed_total", { reason: "memory" })).toBe(1)
    expect(m.value("wo_notification_lag_seconds_count")).toBe(0) // no durable write to measure from
  })
})
