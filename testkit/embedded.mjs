/**
 * A plain Node program embedding writeonce as docs/app-authors.md shows ("Embedding") (no Effect runtime of its own: a ManagedRuntime
 * over writeOnceLayer, settings from one object). The CLI test runs it as `node testkit/embedded.mjs <data-dir>
 * <HOST:PORT>` (`writeonce` is then this checkout's built package, dist/), the pack test the same from the installed
 * tarball. It must log as `wo run` does, and stop on SIGTERM with exit 0.
 */
import { Effect, ManagedRuntime, Schema } from "effect"
import { defineApp, entity, HttpServer, loadSettings, writeOnceLayer } from "writeonce"

const app = defineApp({ name: "embedded", entities: { notes: entity({ fields: { text: Schema.String } }) } })
const settings = await Effect.runPromise(loadSettings({ dataDir: process.argv[2], listen: process.argv[3] }))
const runtime = ManagedRuntime.make(writeOnceLayer(app, settings))
await runtime.runPromise(HttpServer)
