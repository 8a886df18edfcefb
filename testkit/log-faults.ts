/**
 * Fault injection for tests, as a Layer that decorates the store's EventLog (production code has no hook):
 * `beforeWrite` runs before every durable write; failing it fails the whole batch exactly as a disk error would,
 * delaying it holds the ack, and a defect kills the writer.
 *
 * Tests provide `Layer.succeed(LogFaults, {...})` to startServer (testkit/server.ts), which builds the runtime
 * with `faultInjectingLog`: the real classic-level log, decorated when LogFaults is present.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { StoreError } from "../src/domain/errors.ts"
import { ClassicLevelLog } from "../src/log/classic-level/classic-level-log.ts"
import { EventLog } from "../src/log/event-log.ts"

export class LogFaults extends Context.Tag("writeonce/test/LogFaults")<
  LogFaults,
  { readonly beforeWrite: (events: number) => Effect.Effect<void, StoreError> }
>() {}

/** The classic-level log, with LogFaults (when provided) run before each append. */
export const faultInjectingLog = Layer.effect(
  EventLog,
  Effect.gen(function* () {
    const log = yield* EventLog
    const faults = yield* Effect.serviceOption(LogFaults)
    if (Option.isNone(faults)) return log
    return EventLog.of({ ...log, append: (batch) => Effect.zipRight(faults.value.beforeWrite(batch.entries.length), log.append(batch)) })
  })
).pipe(Layer.provide(ClassicLevelLog))
