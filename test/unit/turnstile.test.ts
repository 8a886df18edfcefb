/**
 * The catch-up turnstile (turnstile.ts): at most `perTurn` passes per event-loop turn, first come first served,
 * and work queued behind it (a timer, a socket) runs between two turns. With a rest, after `workMs` of turns
 * without a pause the next turn waits on a timer; a pause of long work as long as a rest counts as one (a clock and
 * event loop the test moves by hand).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { makeTurnstile, type TurnstileClock } from "../../src/support/turnstile.ts"

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

  it("rests on a timer once long work has kept it busy for workMs, and counts a pause of long work as a rest", () => {
    let now = 0
    const pending: Array<{ readonly how: "turn" | "timer"; readonly run: () => void }> = []
    const clock: TurnstileClock = {
      now: () => now,
      nextTurn: (turn) => void pending.push({ how: "turn", run: turn }),
      after: (_ms, turn) => void pending.push({ how: "timer", run: turn })
    }
    const turnstile = makeTurnstile(1, { workMs: 1, restMs: 1 }, clock)
    const hows: Array<string> = []
    /** Runs what the loop has queued, each step of long work taking `stepMs`; answers how each turn came. */
    const drive = (steps: number, stepMs: number) => {
      let left = steps
      const step = () => {
        now += stepMs
        if (--left > 0) turnstile.enter(step)
      }
      turnstile.enter(step)
      while (pending.length > 0) {
        const next = pending.shift()!
        hows.push(next.how)
        if (next.how === "timer") now += 1
        next.run()
      }
    }
    drive(12, 0.25)
    // A turn per step; every fifth waits on the timer: four steps of a quarter millisecond make the millisecond.
    expect(hows).toEqual(["turn", "turn", "turn", "turn", "timer", "turn", "turn", "turn", "timer", "turn", "turn", "turn"])
    hows.length = 0
    now += 5 // no long work for longer than a rest
    drive(3, 0.25)
    expect(hows).toEqual(["turn", "turn", "turn"])
  })
})
