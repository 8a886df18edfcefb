/**
 * One transcript run against a fresh server: the app's whole runtime in this process, on a random loopback port,
 * over a new classic-level directory in a temp dir that is removed afterwards. `wo test` and this project's own
 * transcript tests both replay through here.
 */
import { Cause, ConfigProvider, Effect, Layer, Logger, LogLevel, ManagedRuntime } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { AppDef } from "../domain/catalog.ts"
import { loadSettings, type Settings } from "../support/config.ts"
import { HttpServer } from "../http/server.ts"
import { writeOnceLayer } from "../runtime/runtime.ts"
import { replayTranscript, type ReplayOptions, type ReplayResult, type Transcript } from "./transcript/index.ts"

/**
 * The settings an `# env:` run means. Only the run's variables are read, so unset ones take their defaults and
 * never the environment of whoever runs the tests; what the test server owns (listen address, data dir,
 * recording) is set here.
 */
export const settingsForRun = (env: Readonly<Record<string, string>>, dataDir: string): Effect.Effect<Settings, unknown> =>
  loadSettings({ dataDir }, { host: "127.0.0.1", port: 0, dataDir, recordFile: undefined }).pipe(
    Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))
  )

/** The server's own warnings and errors, to stderr: they never mix with a test report on stdout. */
const stderrLogger = Layer.merge(
  Logger.replace(
    Logger.defaultLogger,
    Logger.make(({ logLevel, message, cause }) => {
      const text = Array.isArray(message) ? message.map(String).join(" ") : String(message)
      process.stderr.write(`${logLevel.label} ${text}${Cause.isEmpty(cause) ? "" : `\n${Cause.pretty(cause)}`}\n`)
    })
  ),
  Logger.minimumLogLevel(LogLevel.Warning)
)

export interface TranscriptRunOptions extends ReplayOptions {
  /** A layer for the server's logging; default: warnings and errors to stderr. */
  readonly logger?: Layer.Layer<never>
}

/** Replays `transcript` once, with the settings of `env` (one of `transcript.envs`), against a fresh server of `app`. */
export const runTranscript = async (
  app: AppDef,
  transcript: Transcript,
  env: Readonly<Record<string, string>> = {},
  options: TranscriptRunOptions = {}
): Promise<ReplayResult> => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "wo-transcript-"))
  try {
    const settings = await Effect.runPromise(settingsForRun(env, dataDir))
    const runtime = ManagedRuntime.make(writeOnceLayer(app, settings, { logger: false }).pipe(Layer.provide(options.logger ?? stderrLogger)))
    try {
      const { url } = await runtime.runPromise(HttpServer)
      return await replayTranscript(transcript, url, options)
    } finally {
      await runtime.dispose()
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
