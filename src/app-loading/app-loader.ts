/**
 * The module loader `wo` runs an app with. An app is TypeScript that no one builds (`app.ts`, its own modules, its
 * specs), so the `wo` executable registers tsx before it loads one. tsx alone follows the nearest package.json
 * "type", and a default `npm init -y` project says "commonjs": app.ts would be compiled to CommonJS and then fail
 * on `import { defineApp } from "writeonce"` (an ES module). So a resolve hook also marks an app's own .ts files
 * as ES modules whatever the package type; files under node_modules are left as their packages declare them.
 */
import { register } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { register as registerTsx } from "tsx/esm/api"
import { rewriteEffectImports, rewriteStatements } from "./effect-imports.ts"
import { RELOAD_PARAM, RELOAD_ROOT_PARAM } from "./reload-tag.ts"

/**
 * The export condition under which `writeonce` and `writeonce/testing` resolve to this checkout's TypeScript
 * sources instead of `dist/` (see package.json `exports`). Only a checkout of writeonce itself sets it.
 */
export const SOURCE_CONDITION = "writeonce-source"

/** Runs in Node's loader thread, so it is plain JavaScript: it cannot import anything of ours. */
const resolveHook = (conditions: ReadonlyArray<string>, packages: Readonly<Record<string, string>>) => `
const extra = ${JSON.stringify(conditions)}
const packages = ${JSON.stringify(packages)}
const TYPESCRIPT = /\\.(ts|tsx|mts)$/
export async function resolve(specifier, context, next) {
  if (Object.hasOwn(packages, specifier)) return { url: packages[specifier], format: "module", shortCircuit: true }
  const resolved = await next(specifier, extra.length === 0 ? context : { ...context, conditions: [...context.conditions, ...extra] })
  if (!resolved.url.startsWith("file:")) return resolved
  const url = new URL(resolved.url)
  const own = TYPESCRIPT.test(url.pathname) && !url.pathname.includes("/node_modules/")
  // wo dev: a reloaded app's own files carry its reload tag, so each reload imports them afresh.
  const tag = reloadTag(context.parentURL)
  if (tag !== undefined && !url.search && url.pathname.startsWith(tag.root)) url.search = tag.search
  return own ? { ...resolved, url: url.href, format: "module" } : { ...resolved, url: url.href }
}
// An app's own module imports effect's modules themselves, not its index, which loads all of them: as the runtime.
export async function load(url, context, next) {
  const loaded = await next(url, context)
  if (loaded.format !== "module" || loaded.source == null || !url.startsWith("file:") || url.includes("/node_modules/")) return loaded
  const source = typeof loaded.source === "string" ? loaded.source : new TextDecoder().decode(loaded.source)
  return source.includes("effect") ? { ...loaded, source: rewriteEffectImports(source) } : loaded
}
${rewriteEffectImports.toString()}
${rewriteStatements.toString()}
function reloadTag(parent) {
  if (parent === undefined || !parent.includes("${RELOAD_PARAM}=")) return undefined
  const url = new URL(parent)
  const root = url.searchParams.get("${RELOAD_ROOT_PARAM}")
  return root === null ? undefined : { root, search: url.search }
}
`

export interface AppLoaderOptions {
  /** Register tsx too (default true); false when the caller already did, to run its own TypeScript. */
  readonly tsx?: boolean
  /** Resolve `writeonce` to this checkout's sources (the `writeonce-source` condition). */
  readonly sources?: boolean
  /**
   * Resolve `writeonce` and `writeonce/testing` to this folder's `index.mjs` and `testing/index.mjs` instead: the
   * checkout's sources as bin/built-sources.mjs built them, which the runtime itself was loaded from.
   */
  readonly built?: string
}

/**
 * How this process registered the loader, so that a worker thread can load an app the same way (`wo dev` loads
 * each saved version in one first): loader hooks belong to the thread that registers them.
 */
export interface RegisteredAppLoader {
  /** tsx's registration module, to register first (this module is TypeScript in a checkout). */
  readonly tsx: string
  /** This module. */
  readonly loader: string
  readonly options: AppLoaderOptions
  /** The runtime that apps import as `writeonce`, when this process knows it (a worker preloads it). */
  readonly runtime: string
}

// Kept on the global object: the `wo` launcher loads this module from its file while `wo dev`'s runtime may be a
// bundle holding a copy of it, and both must see the one registration.
const REGISTERED = Symbol.for("writeonce.registeredAppLoader")
const registry = globalThis as { [REGISTERED]?: RegisteredAppLoader }

/** The loader this process registered, or undefined if it registered none. */
export const registeredAppLoader = (): RegisteredAppLoader | undefined => registry[REGISTERED]

/**
 * Registers the loader for apps in this process. Call it once, before the first app module is imported: modules
 * imported earlier (the runtime itself) load natively, without the cost of loader hooks.
 */
export const registerAppLoader = (options: AppLoaderOptions = {}): void => {
  registry[REGISTERED] = {
    tsx: import.meta.resolve("tsx/esm/api"),
    loader: import.meta.url,
    options,
    // This module is never bundled: one folder up is the runtime's index (src/index.ts, or dist/index.js when built).
    runtime: options.built === undefined ? new URL(`../index${path.extname(new URL(import.meta.url).pathname)}`, import.meta.url).href : pathToFileURL(path.join(options.built, "index.mjs")).href
  }
  if (options.tsx !== false) registerTsx()
  // Registered after tsx, so it runs first: it adds the condition on the way in and fixes the format on the way out.
  const packages: Record<string, string> = options.built === undefined ? {} : {
    writeonce: pathToFileURL(path.join(options.built, "index.mjs")).href,
    "writeonce/testing": pathToFileURL(path.join(options.built, "testing/index.mjs")).href
  }
  register(`data:text/javascript,${encodeURIComponent(resolveHook(options.sources === true ? [SOURCE_CONDITION] : [], packages))}`)
}
