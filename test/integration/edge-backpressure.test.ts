import { Effect, Scope, Stream } from "effect"
import * as net from "node:net"
import { describe, expect, it } from "vitest"
import { startEdge } from "../../src/http/edge/edge.ts"
import type { EdgeResponse } from "../../src/http/edge/edge-types.ts"
import { waitFor } from "../../testkit/wait.ts"

describe("the edge writes SSE with real backpressure", () => {
  it("stops pulling from a stream while the client is not reading, and resumes when it does", async () => {
    const chunk = `data: ${"x".repeat(1024 * 1024 - 8)}\n\n` // 1 MiB per event
    let pulled = 0
    let finalized = false
    const response: EdgeResponse = {
      _tag: "Stream",
      status: 200,
      headers: { "content-type": "text/event-stream" },
      events: Stream.repeatEffect(Effect.sync(() => (pulled++, chunk))).pipe(
        Stream.take(400),
        Stream.ensuring(Effect.sync(() => (finalized = true)))
      )
    }
    const scope = Effect.runSync(Scope.make())
    const edge = await Effect.runPromise(
      startEdge(() => Effect.succeed(response), { host: "127.0.0.1", port: 0, bodyLimit: 1024, requestTimeoutMs: 10_000 }).pipe(Scope.extend(scope))
    )
    try {
      const socket = net.connect(edge.address.port, "127.0.0.1")
      await new Promise((r) => socket.once("connect", r))
      socket.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
      socket.pause()
      // Until the pulls stop (the same count three polls running), not for a fixed time: on a loaded machine the
      // kernel's buffers take longer than a second to fill.
      let whilePaused = -1
      for (let polls = 0, still = 0; still < 3 && polls < 600; polls++) {
        await new Promise((r) => setTimeout(r, 100))
        still = pulled === whilePaused ? still + 1 : 0
        whilePaused = pulled
      }
      // Kernel buffers hold tens of MiB at most: far less than the 400 MiB the stream would produce.
      expect(whilePaused).toBeLessThan(200)
      await new Promise((r) => setTimeout(r, 300))
      expect(pulled).toBe(whilePaused)
      let received = 0
      socket.on("data", (d: Buffer) => (received += d.length))
      socket.resume()
      await new Promise<void>((r) => {
        const check = setInterval(() => received >= 400 * chunk.length && (clearInterval(check), r()), 20)
      })
      expect(pulled).toBe(400)
      // A client that goes away interrupts the stream and runs its finalizers.
      socket.destroy()
      expect(await waitFor(() => finalized, 30_000)).toBe(true)
    } finally {
      await Effect.runPromise(Scope.close(scope, { _tag: "Success", value: undefined } as never))
    }
  })
})
