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
import { registry, REGISTERED, type AppLoaderOptions } from "./registered-loader.ts"

export { registeredAppLoader, type AppLoaderOptions, type RegisteredAppLoader } from "./registered-loader.ts"

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
