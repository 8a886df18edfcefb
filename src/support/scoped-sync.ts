/**
 * A synchronous resource for the current scope, released by a plain finalizer. `Effect.acquireRelease` and
 * `Effect.addFinalizer` keep the acquiring fiber's FiberRefs (its whole Context among them) in the finalizer until
 * the scope closes, to restore them when it runs: about 2 KiB of heap per open SSE stream, for releases that read
 * no FiberRef (bench/stream-memory.ts, heap snapshots at 1 and 200 listen streams). This keeps only `release` and
 * the resource.
 */
import { Effect, Scope } from "effect"

export const scopedSync = <A>(acquire: () => A, release: (a: A) => void): Effect.Effect<A, never, Scope.Scope> =>
  Effect.uninterruptible(Effect.flatMap(Effect.scope, (scope) => releasedWith(scope, acquire(), release)))

/**
 * Its own function so that the finalizer closes over `a` and `release` alone: made inside `scopedSync`, it would
 * share (and keep) the context that holds `acquire` and whatever `acquire` closes over.
 * The finalizer's Effect is made when the scope closes: until then the scope holds one closure.
 */
const releasedWith = <A>(scope: Scope.Scope, a: A, release: (a: A) => void) =>
  Effect.as(Scope.addFinalizerExit(scope, () => Effect.sync(() => release(a))), a)
