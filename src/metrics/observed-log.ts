/**
 * The event log as the writer sees it, observed: whether the last durable write failed (readiness: a full disk
 * must make `/readyz` 503), and with metrics on, each durable write's events by type, its size and its latency.
 * One decoration per batch, never per event on the writer's side.
 */
import { Context, Effect, Exit, Layer } from "effect"
import type { StoreError } from "../domain/errors.ts"
import { EventLog, isWritten, type AppendBatch, type AppendOutcome, type AppendResult } from "../log/event-log.ts"
import { Metrics } from "./metrics.ts"

export interface WriteHealthShape {
  /** Why the last durable write failed; undefined when it succeeded (or none was made yet). */
  readonly failure: () => string | undefined
  readonly record: (failure: string | undefined) => void
}

export class WriteHealth extends Context.Tag("writeonce/WriteHealth")<WriteHealth, WriteHealthShape>() {}

export const WriteHealthLive = Layer.sync(WriteHealth, () => {
  let failure: string | undefined
  return { failure: () => failure, record: (f) => void (failure = f) }
})

/** Events by type: the batch's, or of a shared log's answer those it wrote (not the ones refused as stale, nor a retry's already stored). */
export const typesOf = (entries: ReadonlyArray<AppendOutcome>) => {
  const types = new Map<string, number>()
  let n = 0
  for (const entry of entries) {
    if (!isWritten(entry)) continue
    types.set(entry.event.type, (types.get(entry.event.type) ?? 0) + 1)
    n++
  }
  return { types, n }
}

/** Decorates the log that `inner` provides. */
export const observedLog = <R>(inner: Layer.Layer<EventLog, StoreError, R>): Layer.Layer<EventLog, StoreError, R | Metrics | WriteHealth> =>
  Layer.effect(
    EventLog,
    Effect.gen(function* () {
      const log = yield* EventLog
      const metrics = yield* Metrics
      const health = yield* WriteHealth
      const append = (batch: AppendBatch) => {
        const started = performance.now()
        return Effect.onExit(log.append(batch), (exit) =>
          Effect.sync(() => {
            const ok = Exit.isSuccess(exit)
            health.record(ok ? undefined : exit.cause._tag === "Fail" ? exit.cause.error.reason : "the durable write failed")
            if (!metrics.enabled) return
            const result = ok ? (exit.value as AppendResult | void) : undefined
            const { types, n } = typesOf(result === undefined ? batch.entries : result.outcomes)
            metrics.appended(types, n, (performance.now() - started) / 1000, ok)
          }))
      }
      return EventLog.of({ ...log, append })
    })
  ).pipe(Layer.provide(inner))
