/**
 * scopedSync (src/support/scoped-sync.ts): acquired at once, released once when its scope closes (in reverse order, like
 * acquireRelease), whether the scope ends well or not.
 */
import { Effect, Exit, Scope } from "effect"
import { describe, expect, it } from "vitest"
import { scopedSync } from "../../src/support/scoped-sync.ts"

describe("scopedSync", () => {
  it("returns what it acquired and releases it once, when the scope closes, last acquired first", async () => {
    const log: Array<string> = []
    const scope = Effect.runSync(Scope.make())
    const [a, b] = Effect.runSync(
      Effect.all([
        scopedSync(() => (log.push("acquire a"), "a"), (x) => void log.push(`release ${x}`)),
        scopedSync(() => (log.push("acquire b"), "b"), (x) => void log.push(`release ${x}`))
      ]).pipe(Scope.extend(scope))
    )
    expect([a, b]).toEqual(["a", "b"])
    expect(log).toEqual(["acquire a", "acquire b"])
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await Effect.runPromise(Scope.close(scope, Exit.void))
    expect(log).toEqual(["acquire a", "acquire b", "release b", "release a"])
  })

  it("releases on a failed scope too", async () => {
    let released = 0
    await Effect.runPromiseExit(Effect.scoped(Effect.zipRight(scopedSync(() => 1, () => void released++), Effect.fail("boom"))))
    expect(released).toBe(1)
  })
})
