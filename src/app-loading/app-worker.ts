/**
 * A worker thread that loads the app as the server did: the same module, the same runtime as `writeonce`, and the
 * same loader (loader hooks belong to the thread that registers them, so a worker registers its own). `wo dev`
 * proves each saved version loads in one (dev/load-probe.ts); a view folded again from the log is folded in one
 * (projections/views/fold-thread.ts).
 *
 * An app embedded in a program (a Layer given an app object) has no module a worker could load: `appModuleOf`
 * answers undefined for it, and its work stays on the server's thread.
 */
import { Context } from "effect"
import * as path from "node:path"
import type { AppDef } from "../domain/catalog.ts"
import { registeredAppLoader, type RegisteredAppLoader } from "./registered-loader.ts"

/** Where a loaded app came from. */
export interface AppModule {
  /** The URL the server imported the app from: its app.ts (under `wo dev`, with its reload tag), or its compiled form. */
  readonly url: string
  /** The runtime it imports as `writeonce` (src/index.ts, dist/index.js, or a checkout's build: bin/built-sources.mjs). */
  readonly runtime: string
  /** The loader the server registered, which a worker registers too; none for a compiled app, which loads natively. */
  readonly loader?: RegisteredAppLoader
}

/** Where the app a runtime serves was loaded from: undefined for an app object made in the program (runtime.ts). */
export class LoadedApp extends Context.Tag("writeonce/LoadedApp")<LoadedApp, AppModule | undefined>() {}

const modules = new WeakMap<AppDef, AppModule>()

/**
 * Notes where `app` was imported from (load-app.ts). `runtime`: the runtime a compiled app imports; else the
 * registered loader's. Without either, nothing is noted: a worker could not load it.
 */
export const noteAppModule = (app: AppDef, url: string, runtime?: string): void => {
  const loader = runtime === undefined ? registeredAppLoader() : undefined
  const at = runtime ?? loader?.runtime
  if (at !== undefined) modules.set(app, { url, runtime: at, ...(loader === undefined ? {} : { loader }) })
}

/** Where `app` was imported from, or undefined (an app object made in the program itself). */
export const appModuleOf = (app: AppDef): AppModule | undefined => modules.get(app)

/**
 * The URL of one of the runtime's own modules (`file` without its extension, relative to src/), beside its index:
 * src/, dist/ and a checkout's build keep the same layout (a build makes it an entry of its own).
 */
export const runtimeModule = (runtime: string, file: string): string =>
  new URL(`${file}${path.extname(new URL(runtime).pathname)}`, runtime).href

/** What a worker's program needs to load the runtime as the server did (`LOAD_RUNTIME`). */
export const runtimeData = (runtime: string, loader?: RegisteredAppLoader) =>
  ({ runtime, ...(loader === undefined ? {} : { tsx: loader.tsx, loader: loader.loader, options: loader.options }) })

/**
 * The start of a worker's program (plain JavaScript, evaluated: no loader is registered in its thread yet). It
 * defines `loadRuntime(data)`, `data` made by `runtimeData`: preloads the runtime (natively when it is JavaScript:
 * through the loader hooks it would take seconds), then registers the loader as the server did, when it did.
 */
export const LOAD_RUNTIME = `
const loadRuntime = async (data) => {
  const preload = () => import(data.runtime).catch(() => undefined)
  const native = !/\\.(ts|mts)$/.test(data.runtime)
  if (native) await preload()
  if (data.loader === undefined) return
  const { register } = await import(data.tsx)
  register()
  const { registerAppLoader } = await import(data.loader)
  registerAppLoader({ ...data.options, tsx: false })
  if (!native) await preload()
}
`
