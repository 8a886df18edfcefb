/**
 * The `wo` command line: `wo run <app-dir>` serves an app, `wo replay <data-dir>` proves the projection can be
 * rebuilt from the log. A thin shell over `writeOnceLayer`.
 */
import { Args, Command, Options } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { Console, Data, Effect, Layer, Option } from "effect"
import * as path from "node:path"
import { makeClassicLevelLog } from "./commands/classic-level-log.ts"
import { openDb } from "./commands/level-db.ts"
import { loadSettings, parseListen, type Settings } from "./config.ts"
import { HttpServer } from "./http/server.ts"
import { loadApp } from "./load-app.ts"
import { LoggerLive } from "./logger.ts"
import { replay } from "./projections/replay.ts"
import { Rows } from "./projections/rows.ts"
import { writeOnceLayer } from "./runtime.ts"
import { Catalog } from "./domain/app-catalog.ts"
import { VERSION } from "./version.ts"

class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

const appDir = Args.directory({ name: "app-dir", exists: "yes" }).pipe(
  Args.withDescription("the app folder, holding app.ts")
)
const dataOption = Options.directory("data").pipe(
  Options.withDescription("data directory (default: <app-dir>/.data, or WO_DATA)"),
  Options.optional
)
const listenOption = Options.text("listen").pipe(
  Options.withDescription("HOST:PORT to listen on (default: 127.0.0.1:8080, or WO_LISTEN)"),
  Options.optional
)

/** Prints the startup summary once everything is listening. */
const announce = Layer.scopedDiscard(
  Effect.gen(function* () {
    const { url } = yield* HttpServer
    const catalog = yield* Catalog
    const { recovered } = yield* Rows
    yield* Effect.logInfo(
      `writeonce ${VERSION} serving app "${catalog.name}" (${[...catalog.types.keys()].join(", ")}) at ${url}`
    )
    yield* Effect.logInfo(
      `recovered ${recovered.events} events (${recovered.rows} rows, ${recovered.tailEvents} tail events) in ${recovered.millis} ms`
    )
    yield* Effect.logInfo(`REST ${url}/api/<type>   MCP ${url}/mcp   console ${url}/`)
    yield* Effect.addFinalizer(() => Effect.logInfo("shutting down: flushing the last batch and closing the store"))
  })
)

const insecureOption = Options.boolean("insecure").pipe(
  Options.withDescription("allow a non-loopback --listen address without WO_AUTH_TOKEN")
)

const run = Command.make("run", { appDir, data: dataOption, listen: listenOption, insecure: insecureOption }, ({ appDir, data, listen, insecure }) =>
  Effect.gen(function* () {
    const { app, dir } = yield* loadApp(appDir)
    const overrides: Partial<Settings> = {}
    if (Option.isSome(data)) Object.assign(overrides, { dataDir: path.resolve(data.value) })
    if (insecure) Object.assign(overrides, { insecure: true })
    if (Option.isSome(listen)) {
      const parsed = parseListen(listen.value)
      if (parsed === undefined) return yield* new UsageError({ message: `--listen expects HOST:PORT, got "${listen.value}"` })
      Object.assign(overrides, parsed)
    }
    const settings = yield* loadSettings({ dataDir: path.join(dir, ".data") }, overrides)
    return yield* Layer.launch(announce.pipe(Layer.provideMerge(writeOnceLayer(app, settings))))
  })).pipe(Command.withDescription("serve an app: REST at /api, MCP at /mcp"))

const replayCommand = Command.make(
  "replay",
  { dataDir: Args.directory({ name: "data-dir", exists: "yes" }).pipe(Args.withDescription("the data directory to check")) },
  ({ dataDir }) =>
    Effect.gen(function* () {
      const log = yield* Effect.flatMap(openDb(path.resolve(dataDir)), makeClassicLevelLog)
      const report = yield* replay(log)
      yield* Console.log(
        `replayed ${report.events} events into ${report.rows} rows in ${report.millis} ms\n` +
          `rebuilt digest ${report.rebuiltDigest}\nstored  digest ${report.storedDigest} (${report.storedRows} rows)`
      )
      if (!report.matches) {
        yield* Console.error(`MISMATCH: the stored rows differ from the log: ${report.mismatches.join(", ")}`)
        return yield* Effect.sync(() => process.exit(1))
      }
      yield* Console.log("OK: the stored rows equal the log's fold")
    }).pipe(Effect.scoped)
).pipe(Command.withDescription("rebuild the rows from the log and compare them with the stored rows"))

const wo = Command.make("wo").pipe(
  Command.withDescription("writeonce: declare your domain once; serve REST and MCP from an event-sourced store"),
  Command.withSubcommands([run, replayCommand])
)

const cli = Command.run(wo, { name: "writeonce", version: VERSION })

/** Expected failures print one clear line and exit 1; anything else is a bug and prints its cause. */
const fatal = (message: string) => Effect.zipRight(Console.error(`wo: ${message}`), Effect.sync(() => process.exit(1)))

cli(process.argv).pipe(
  Effect.catchTags({
    AppLoadError: (e) => fatal(e.message),
    CatalogError: (e) => fatal(e.message),
    StoreUnavailable: (e) => fatal(e.message)
  }),
  Effect.catchTags({
    UsageError: (e) => fatal(e.message),
    ListenError: (e) => fatal(e.message),
    ConfigError: (e) => fatal(`configuration: ${String(e)}`)
  }),
  Effect.provide(Layer.merge(NodeContext.layer, LoggerLive)),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
