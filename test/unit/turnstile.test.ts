/**
 * The catch-up turnstile (turnstile.ts): at most `perTurn` passes per event-loop turn, first come first served,
 * and work queued behind it (a timer, a socket) runs between two turns.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { makeTurnstile } from "../../src/support/turnstile.ts"

describe("turnstile", () => {
  it("lets `perTurn` steps through per event-loop turn, in arrival order, with other work in between", async () => {
    const turnstile = makeTurnstile(2)
    const order: Array<string> = []
    const reader = (name: string) =>
      Effect.gen(function* () {
        for (let step = 1; step <= 3; step++) {
          yield* turnstile.pass
          order.push(`${name}${step}`)
        }
      })
    const fibers = ["a", "b", "c"].map((n) => Effect.runFork(reader(n)))
    // Another request's work, queued once the readers are waiting: it must run before they are all done.
    await new Promise<void>((r) => setImmediate(() => (order.push("GET"), r())))
    await Effect.runPromise(Fiber.joinAll(fibers))
    expect(order.filter((x) => x !== "GET")).toHaveLength(9)
    expect(order.indexOf("GET")).toBeLessThan(4)
    // FIFO: the first steps of a, b, c come before any second step.
    expect(order.filter((x) => x !== "GET").slice(0, 3)).toEqual(["a1", "b1", "c1"])
  })
})
