/**
 * Loads an app folder's `app.ts`. It is TypeScript that no one builds: the `wo` executable registers the app
 * loader first (app-loader.ts: tsx, with the app's .ts files as ES modules whatever its package.json "type").
 */
import { Data, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import type { AppDef } from "../domain/catalog.ts"
import { noteAppModule } from "./app-worker.ts"
import { RELOAD_PARAM, RELOAD_ROOT_PARAM } from "./reload-tag.ts"

export class AppLoadError extends Data.TaggedError("AppLoadError")<{ readonly message: string }> {}

/** The app folder's entry file (app.ts, or .mts, .js, .mjs), or undefined when it has none. */
export const appFile = (dir: string): string | undefined =>
  ["app.ts", "app.mts", "app.js", "app.mjs"].map((f) => path.join(dir, f)).find((f) => fs.existsSync(f))

/** An app compiled to JavaScript (bin/compiled-app.mjs): its module, and the runtime it imports as `writeonce`. */
export interface CompiledAppModule {
  readonly url: string
  readonly runtime: string
}

/**
 * Loads the app; with `reload` (wo dev), its own modules are imported under that tag (app-loader.ts carries the
 * tag on to every file under the app folder), so an edit anywhere in the folder is seen. `compiled`: the app
 * already compiled to JavaScript, imported in place of its file. Where it came from is noted, for a worker thread
 * that loads it again (app-worker.ts).
 */
export const loadApp = (appDir: string, reload?: string, compiled?: CompiledAppModule) =>
  Effect.gen(function* () {
    const dir = path.resolve(appDir)
    const file = appFile(dir)
    if (file === undefined) return yield* new AppLoadError({ message: `no app.ts in ${dir}` })
    const url = compiled?.url ?? (reload === undefined ? pathToFileURL(file).href : versionUrl(file, dir, reload))
    const mod = yield* Effect.tryPromise({
      try: () => import(url) as Promise<{ default?: AppDef; app?: AppDef }>,
      catch: (e) => new AppLoadError({ message: cannotLoad(file, dir, thrown(e)) })
    })
    const app = mod.default ?? mod.app
    if (app === undefined) return yield* new AppLoadError({ message: noExport(file) })
    if (typeof app === "object" && app !== null) noteAppModule(app, url, compiled?.runtime)
    return { app, dir, file }
  })

/** What an import threw, as plain data (it may have crossed a thread). */
export interface Thrown {
  readonly message: string
  readonly stack?: string | undefined
  readonly code?: unknown
}

export const thrown = (e: unknown): Thrown =>
  e instanceof Error
    ? { message: e.message, stack: e.stack, code: (e as { code?: unknown }).code }
    : { message: String(e) }

/** The message for an import of `file` that threw `e`: what, and where in the app's own files. */
export const cannotLoad = (file: string, dir: string, e: Thrown) =>
  `cannot load ${file}: ${e.message}${whereInApp(dir, e.stack ?? "")}` +
  (e.code === "ERR_UNKNOWN_FILE_EXTENSION"
    ? " (plain Node runs no TypeScript: run it with `wo`, or register a loader such as tsx first)"
    : "")

export const noExport = (file: string) => `${file} must export the app (export default defineApp({...}))`

/** The URL that imports the app's entry `file` under the version tag `reload` (app-loader.ts carries it on). */
export const versionUrl = (file: string, dir: string, reload: string) => {
  const url = pathToFileURL(file)
  url.searchParams.set(RELOAD_PARAM, reload)
  url.searchParams.set(RELOAD_ROOT_PARAM, pathToFileURL(dir + path.sep).pathname)
  return url.href
}

/** Where an error thrown while importing the app points into the app folder, as ` (at file:line:col)`. */
export const whereInApp = (dir: string, stack: string) => {
  for (const line of stack.split("\n")) {
    // `at f (/dir/app.ts:3:7)`, `at /dir/app.ts:3:7` or `at file:///dir/app.ts?wo-reload=2&…:3:7`
    const at = /^\s*at (?:.*\()?(?:file:\/\/)?(\/[^?)]*?)(?:\?[^)]*?)?(:\d+:\d+)\)?$/.exec(line)
    // The app's own files only: not its node_modules (a syntax error's stack is esbuild's, and its message already
    // names the place).
    if (at !== null && at[1].startsWith(dir + path.sep) && !at[1].slice(dir.length).includes(`${path.sep}node_modules${path.sep}`)) {
      return ` (at ${decodeURIComponent(at[1])}${at[2]})`
    }
  }
  return ""
}
