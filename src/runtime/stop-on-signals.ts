/**
 * A plain Node program that embeds writeonce stops on Ctrl-C or SIGTERM as `wo run` does: it stops accepting,
 * flushes the last batch, closes the store and exits 0. Only when nothing else in the process handles the signal:
 * under NodeRuntime.runMain (`wo run`), or with the program's own handler, they decide, as they would without us.
 */
import { Deferred, Effect, Exit, Layer, Runtime, Scope } from "effect"

const SIGNALS = ["SIGINT", "SIGTERM"] as const

/** How to shut down each runtime of this process that is still up; one listener per signal serves them all. */
const running = new Set<() => Promise<void>>()
let stopping = false

const onSignal = (signal: NodeJS.Signals) => {
  // Ours runs first (prepended), so the count holds every other handler: NodeRuntime.runMain's removes itself when
  // called, and counted after it, it would look absent. Then both would close the runtime, and ours, finding it
  // already closing, would exit the process before the flush, the views' snapshot and the store's close ended.
  if (process.listenerCount(signal) > 1) return
  if (stopping) process.exit(130) // a second Ctrl-C: stop now
  stopping = true
  void Promise.allSettled([...running].map((stop) => stop())).then(() => process.exit(0))
}

const enlist = (stop: () => Promise<void>) => {
  if (running.size === 0) SIGNALS.forEach((s) => process.prependListener(s, onSignal))
  running.add(stop)
}

const discharge = (stop: () => Promise<void>) => {
  running.delete(stop)
  if (running.size === 0) SIGNALS.forEach((s) => process.off(s, onSignal))
}

/** `layer`, built in a scope of its own that a signal closes (and then the process exits 0). */
export const stopOnSignals = <A, E>(layer: Layer.Layer<A, E>): Layer.Layer<A, E> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const own = yield* Scope.make()
      yield* Effect.addFinalizer((exit) => Scope.close(own, exit))
      // The finalizers log through the program's runtime (its logger), not a default one.
      const runPromise = Runtime.runPromise(yield* Effect.runtime<never>())
      // Enlisted before the build: the ready line is logged while building, and a signal sent on seeing it must
      // find the handler in place (else Node's default kills the process). Such a signal waits for the build.
      const built = yield* Deferred.make<void>()
      const stop = () => runPromise(Effect.zipRight(Deferred.await(built), Scope.close(own, Exit.void)))
      yield* Effect.acquireRelease(Effect.sync(() => enlist(stop)), () => Effect.sync(() => discharge(stop)))
      return yield* Effect.ensuring(Layer.buildWithScope(layer, own), Deferred.succeed(built, undefined))
    })
  )
