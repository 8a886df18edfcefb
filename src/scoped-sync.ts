/**
 * A synchronous resource for the current scope, released by a plain finalizer. `Effect.acquireRelease` and
 * `Effect.addFinalizer` keep the acquiring fiber's FiberRefs (its whole Context among them) in the finalizer until
 * the scope closes, to restore them when it runs: about 2 KiB of heap per open SSE stream, for releases that read
 * no FiberRef (bench/stream-memory.ts, heap snapshots at 1 and 200 listen streams). This keeps only `release`.
 */
import { Effect, Scope } from "effect"

export const scopedSync = <A>(acquire: () => A, release: (a: A) => void): Effect.Effect<A, never, Scope.Scope> =>
  Effect.uninterruptible(
    Effect.flatMap(Effect.scope, (scope) => {
      const a = acquire()
      // The finalizer's Effect is made when the scope closes: until then the scope holds one closure.
      return Effect.as(Scope.addFinalizerExit(scope, () => Effect.sync(() => release(a))), a)
    })
  )
