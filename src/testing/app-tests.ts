/**
 * `wo test <app-dir>`: an app's own tests. First a typecheck of the app and its specs (src/testing/typecheck.ts),
 * then its decider specs (`*.spec.ts` anywhere in the folder but
 * node_modules and dot folders: pure, fast), then its transcripts (`transcripts/*.http`), each replayed once per
 * `# env:` run against a fresh server of the app. Every result goes to `onResult` as it completes.
 */
import { Effect, Either } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { compileApp } from "../domain/compile.ts"
import { loadApp } from "../app-loading/load-app.ts"
import { takeSpecs } from "./spec.ts"
import { typecheckApp } from "./typecheck.ts"
import { parseTranscript } from "./transcript/index.ts"
import { runTranscript } from "./transcript-run.ts"

export interface TestResult {
  /** `specs` or `transcripts`. */
  readonly suite: string
  /** The file, relative to the app folder. */
  readonly file: string
  /** The spec's name, or the transcript file with its env run. */
  readonly name: string
  readonly ok: boolean
  /** Why it failed: readable, several lines. */
  readonly failure?: string
  readonly millis: number
}

export interface AppTestReport {
  readonly app: string
  readonly dir: string
  readonly results: ReadonlyArray<TestResult>
}

const SPEC_FILE = /\.spec\.(ts|mts|js|mjs)$/
const SKIPPED_DIRS = new Set(["node_modules", "dist", "transcripts"])

/** Spec files under `dir`, sorted, skipping node_modules, dist, transcripts and dot folders (the data dir). */
export const findSpecFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((entry) => {
      const full = path.join(dir, entry.name)
      if (entry.isDirectory()) return entry.name.startsWith(".") || SKIPPED_DIRS.has(entry.name) ? [] : findSpecFiles(full)
      return entry.isFile() && SPEC_FILE.test(entry.name) ? [full] : []
    })

/** `transcripts/*.http` of the app, sorted. */
export const findTranscripts = (dir: string): Array<string> => {
  const folder = path.join(dir, "transcripts")
  if (!fs.existsSync(folder)) return []
  return fs.readdirSync(folder).filter((f) => f.endsWith(".http")).sort().map((f) => path.join(folder, f))
}

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e))

/** Where a thrown error came from: the first stack frames in the app's own files, if any. */
const whereInApp = (e: unknown, dir: string) => {
  if (!(e instanceof Error) || e.stack === undefined) return ""
  const frames = e.stack.split("\n").filter((l) => l.trim().startsWith("at ") && l.includes(dir) && !l.includes("node_modules"))
  return frames.length === 0 ? "" : `\n${frames.slice(0, 3).map((l) => `  ${l.trim()}`).join("\n")}`
}

const timed = async (run: () => Promise<string | undefined>): Promise<{ failure: string | undefined; millis: number }> => {
  const start = performance.now()
  const failure = await run()
  return { failure, millis: Math.round(performance.now() - start) }
}

const envLabel = (env: Readonly<Record<string, string>>) =>
  Object.keys(env).length === 0 ? "" : ` [${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(" ")}]`

export interface TestOptions {
  /** Typecheck the app and its specs first (default true); a type error fails the run before anything runs. */
  readonly typecheck?: boolean
}

const TYPED = /\.(ts|mts|cts)$/

/**
 * Runs every spec and transcript of the app in `appDir`, after typechecking the app and its specs (unless
 * `typecheck: false`). Fails only when the app itself cannot be loaded.
 */
export const testApp = (appDir: string, onResult: (result: TestResult) => Effect.Effect<void>, options: TestOptions = {}) =>
  Effect.gen(function* () {
    const results: Array<TestResult> = []
    const report = (result: TestResult) => Effect.zipRight(Effect.sync(() => results.push(result)), onResult(result))
    const root = path.resolve(appDir)
    const appFile = ["app.ts", "app.mts"].map((f) => path.join(root, f)).find((f) => fs.existsSync(f))
    const typed = [...(appFile === undefined ? [] : [appFile]), ...findSpecFiles(root).filter((f) => TYPED.test(f))]
    if (options.typecheck !== false && typed.length > 0) {
      const start = performance.now()
      const checked = yield* Effect.sync(() => typecheckApp(root, typed))
      const failure = checked._tag === "NoCompiler"
        ? checked.message
        : checked.errors.length === 0 ? undefined : `${checked.errors.length} type error(s):\n${checked.errors.join("\n")}`
      yield* report({ suite: "typecheck", file: ".", name: "typecheck", ok: failure === undefined, failure, millis: Math.round(performance.now() - start) })
      // Nothing runs on code that does not compile.
      if (failure !== undefined) return { app: path.basename(root), dir: root, results } satisfies AppTestReport
    }
    const { app, dir } = yield* loadApp(appDir)
    const catalog = yield* compileApp(app)
    const relative = (file: string) => path.relative(dir, file).split(path.sep).join("/")

    for (const file of findSpecFiles(dir)) {
      takeSpecs() // nothing left over from elsewhere
      const loaded = yield* Effect.either(Effect.tryPromise(() => import(pathToFileURL(file).href)))
      if (Either.isLeft(loaded)) {
        const cause = loaded.left.cause
        yield* report({ suite: "specs", file: relative(file), name: relative(file), ok: false, failure: `cannot load the spec file: ${messageOf(cause)}${whereInApp(cause, dir)}`, millis: 0 })
        continue
      }
      const specs = takeSpecs()
      if (specs.length === 0) {
        yield* report({ suite: "specs", file: relative(file), name: relative(file), ok: false, failure: `no specs: call spec("name", () => ...) from "writeonce/testing"`, millis: 0 })
      }
      for (const spec of specs) {
        const { failure, millis } = yield* Effect.promise(() =>
          timed(async () => {
            try {
              await spec.body()
              return undefined
            } catch (e) {
              return `${messageOf(e)}${whereInApp(e, dir)}`
            }
          }))
        yield* report({ suite: "specs", file: relative(file), name: `${relative(file)} > ${spec.name}`, ok: failure === undefined, failure, millis })
      }
    }

    for (const file of findTranscripts(dir)) {
      const name = relative(file)
      const parsed = Either.try(() => parseTranscript(fs.readFileSync(file, "utf8")))
      if (Either.isLeft(parsed)) {
        yield* report({ suite: "transcripts", file: name, name, ok: false, failure: messageOf(parsed.left), millis: 0 })
        continue
      }
      const transcript = parsed.right
      if (transcript.app !== undefined && transcript.app !== catalog.name) {
        yield* report({
          suite: "transcripts",
          file: name,
          name,
          ok: false,
          failure: `"# app: ${transcript.app}" but this is app "${catalog.name}": fix the line, or move the file to that app`,
          millis: 0
        })
        continue
      }
      for (const env of transcript.envs) {
        const { failure, millis } = yield* Effect.promise(() =>
          timed(async () => {
            try {
              const result = await runTranscript(app, transcript, env)
              return result.ok ? undefined : result.failures.join("\n\n")
            } catch (e) {
              return `the server did not start: ${messageOf(e)}`
            }
          }))
        yield* report({ suite: "transcripts", file: name, name: `${name}${envLabel(env)}`, ok: failure === undefined, failure, millis })
      }
    }
    return { app: catalog.name, dir, results } satisfies AppTestReport
  })
