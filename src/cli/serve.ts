/**
 * `wo run` and `wo dev`: serve an app (dev: and reload it on every change of its folder). Their command line is
 * read by cli.ts, or, to start fast, by serve-args.ts without @effect/cli; both hand the same options here.
 */
import { Effect, Layer } from "effect"
import * as path from "node:path"
import { UsageError } from "./command-line.ts"
import { exitWhenTheWriterDies } from "../commands/writer-watch.ts"
import { loadSettings, parseListen, type Settings } from "../support/config.ts"
import { loadApp, type CompiledAppModule } from "../app-loading/load-app.ts"
import { writeOnceLayer } from "../runtime/runtime.ts"

export interface ServeOptions {
  readonly appDir: string
  readonly data?: string
  readonly listen?: string
  readonly insecure: boolean
  /** The access file (principals and grants), as `--access FILE`. */
  readonly access?: string
}

export interface RunOptions extends ServeOptions {
  readonly acceptDataLoss: boolean
  readonly record?: string
  readonly store?: string
  /** The app compiled to JavaScript, imported in place of its app.ts (load-app.ts). */
  readonly compiledApp?: CompiledAppModule
}

/** The settings a command line overrides, over the app folder's defaults and the WO_* variables. */
const settingsFor = (dir: string, options: ServeOptions & Partial<RunOptions>) =>
  Effect.gen(function* () {
    const overrides: Partial<Settings> = {}
    if (options.data !== undefined) Object.assign(overrides, { dataDir: path.resolve(options.data) })
    if (options.insecure) Object.assign(overrides, { insecure: true })
    if (options.access !== undefined) Object.assign(overrides, { accessFile: path.resolve(options.access) })
    if (options.acceptDataLoss === true) Object.assign(overrides, { acceptDataLoss: true })
    if (options.record !== undefined) Object.assign(overrides, { recordFile: path.resolve(options.record) })
    if (options.store !== undefined) Object.assign(overrides, { store: options.store })
    if (options.listen !== undefined) {
      const parsed = parseListen(options.listen)
      if (parsed === undefined) return yield* new UsageError({ message: `--listen expects HOST:PORT, got "${options.listen}"` })
      Object.assign(overrides, parsed)
    }
    return yield* loadSettings({ dataDir: path.join(dir, ".data") }, overrides)
  })

/** `wo run <app-dir>`: REST at /api, MCP at /mcp, until a signal stops it. */
export const runApp = (options: RunOptions) =>
  Effect.gen(function* () {
    const { app, dir } = yield* loadApp(options.appDir, undefined, options.compiledApp)
    const settings = yield* settingsFor(dir, options)
    return yield* Layer.launch(exitWhenTheWriterDies.pipe(Layer.provideMerge(writeOnceLayer(app, settings))))
  })

/** `wo dev <app-dir>`: as run, and the app reloaded live on every change of its folder (embedded store only). */
export const devApp = (options: ServeOptions) =>
  Effect.gen(function* () {
    const { app, dir } = yield* loadApp(options.appDir)
    const settings = yield* settingsFor(dir, options)
    if (settings.store !== undefined) return yield* new UsageError({ message: "wo dev serves the embedded store only (a reload reopens the data dir): unset WO_STORE" })
    const { devServer } = yield* Effect.promise(() => import("../dev/dev-server.ts"))
    return yield* Effect.zipRight(devServer(dir, app, settings), Effect.never).pipe(Effect.scoped)
  })
