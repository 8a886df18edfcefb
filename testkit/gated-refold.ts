/**
 * A server whose background fold of the views waits at a gate: the real runtime in-process (port 0) over a data
 * dir (or, with `store`, a PostgreSQL store), its log decorated so that every read from seq 1 (a fold from the start
 * of the log: the views folded again, and the log audit) waits until the test opens `gate`. A fold as slow as a test
 * likes, without timing.
 */
import { Deferred, Effect, Layer, ManagedRuntime, Stream } from "effect"
import type { AppDef } from "../src/domain/catalog.ts"
import { loadSettings } from "../src/support/config.ts"
import { HttpServer } from "../src/http/server.ts"
import { EventLog } from "../src/log/event-log.ts"
import { storeLogLayer, writeOnceLayer } from "../src/runtime/runtime.ts"

/** `settings`: what the server is started with besides its data dir (a PostgreSQL `store`, a snapshot interval). */
export const startGatedRefold = async (app: AppDef, dataDir: string, settings: { readonly store?: string; readonly viewSnapshotEvery?: number } = {}) => {
  const loaded = await Effect.runPromise(loadSettings({ dataDir }, { host: "127.0.0.1", port: 0, ...settings }))
  const gate = Effect.runSync(Deferred.make<void>())
  /** How many reads from seq 1 began (each waits at the gate). */
  const foldsFromStart = { count: 0 }
  const gatedLog = Layer.effect(
    EventLog,
    Effect.map(EventLog, (log) => EventLog.of({
      ...log,
      readFrom: (fromSeq, options) =>
        fromSeq !== 1
          ? log.readFrom(fromSeq, options)
          : Stream.unwrap(Effect.as(Effect.zipRight(Effect.sync(() => foldsFromStart.count++), Deferred.await(gate)), log.readFrom(1, options)))
    }))
  ).pipe(Layer.provide(storeLogLayer(loaded)))
  const runtime = ManagedRuntime.make(writeOnceLayer(app, loaded, { log: gatedLog, logger: false, signals: false }))
  const { url } = await runtime.runPromise(HttpServer)
  return {
    url,
    runtime,
    foldsFromStart,
    /** Lets the folds from seq 1 go on. */
    open: () => runtime.runSync(Deferred.succeed(gate, undefined)),
    close: () => runtime.dispose()
  }
}
