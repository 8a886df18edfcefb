/**
 * The child side of the writer-death test (test/reliability/user-code.test.ts): `wo run`'s composition (the
 * runtime plus exitWhenTheWriterDies) over a log whose first append dies, as a bug of ours would. It announces
 * itself as `wo run` does (writeOnceLayer logs the same lines). Run as
 * `node --import tsx testkit/dying-writer.ts <data-dir>`.
 */
import { Effect, Layer } from "effect"
import pricing from "../examples/pricing/app.ts"
import { exitWhenTheWriterDies } from "../src/commands/writer-watch.ts"
import { loadSettings } from "../src/support/config.ts"
import { ClassicLevelLog } from "../src/log/classic-level/classic-level-log.ts"
import { EventLog } from "../src/log/event-log.ts"
import { writeOnceLayer } from "../src/runtime/runtime.ts"

const dyingLog = Layer.effect(
  EventLog,
  Effect.map(EventLog, (log) => EventLog.of({ ...log, append: () => Effect.die(new Error("injected writer bug")) }))
).pipe(Layer.provide(ClassicLevelLog))

const settings = await Effect.runPromise(loadSettings({ dataDir: process.argv[2] }, { host: "127.0.0.1", port: 0 }))
Effect.runFork(Layer.launch(exitWhenTheWriterDies.pipe(Layer.provideMerge(writeOnceLayer(pricing, settings, { log: dyingLog })))))
