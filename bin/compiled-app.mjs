// `wo run` in a checkout: the app's TypeScript compiled once per change by esbuild into one module, loaded natively.
// Through tsx, the loader hooks' thread and the per-import round trips to it were a fifth of the start. The module
// sits in the app's node_modules/.cache/writeonce/, so its package imports resolve as the app's own do, and every
// package stays outside it (effect above all: the app and the runtime share one copy). A list of the files it was
// built from (their size and mtime) sits beside it: any change, and it is built again. A build that fails (a
// syntax error) returns undefined, and the caller loads app.ts through tsx, whose error message the user then sees.
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { effectImportsRewriter } from "./built-sources.mjs"

const APP_FILES = ["app.ts", "app.mts", "app.js", "app.mjs"]
const OWN = /\.(ts|mts|tsx|js|mjs)$/

/** A file's size and mtime, or "-" while it does not exist (a tsconfig.json added later is a change too). */
const stamp = (file) => {
  const stat = fs.statSync(file, { throwIfNoEntry: false })
  return stat === undefined ? "-" : `${stat.size}:${stat.mtimeMs}`
}

/** The built module's file URL for the app in `appDir`, whose `writeonce` is the runtime `built`; or undefined. */
export async function compiledApp(appDir, built) {
  try {
    const dir = path.resolve(appDir)
    const entry = APP_FILES.map((f) => path.join(dir, f)).find((f) => fs.existsSync(f))
    if (entry === undefined) return undefined
    const cache = path.join(dir, "node_modules/.cache/writeonce")
    const out = path.join(cache, `app-${createHash("sha256").update(`${entry}\0${built}`).digest("hex").slice(0, 16)}.mjs`)
    const known = upToDate(`${out}.json`)
    if (known === "tsx") return undefined
    if (known === "built" && fs.existsSync(out)) return pathToFileURL(out).href
    const { build } = await import("esbuild")
    const rewrite = await effectImportsRewriter(built)
    const result = await build({
      entryPoints: [entry],
      absWorkingDir: dir,
      bundle: true,
      write: false,
      outfile: out,
      format: "esm",
      platform: "node",
      target: `node${process.versions.node}`,
      packages: "external",
      sourcemap: "inline",
      metafile: true,
      logLevel: "silent",
      plugins: [runtimeOf(built), placesKept(built)]
    })
    // The files compiled, and the settings that compile them (tsconfig.json: decorators, JSX...).
    const settings = ["tsconfig.json", "package.json"].map((f) => path.join(dir, f))
    const files = [...Object.keys(result.metafile.inputs).map((f) => path.resolve(dir, f)), ...settings]
    const inputs = Object.fromEntries(files.map((f) => [f, stamp(f)]))
    fs.mkdirSync(cache, { recursive: true })
    // Written aside, then renamed into place: a process starting meanwhile sees the old pair or the new one.
    const next = `${out}.${process.pid}`
    // A source file outside the app's folder (an app importing a checkout's src/ by path) resolves its packages from
    // its own place, which the built module, living in the app's folder, cannot: such an app keeps the loader (noted,
    // so that the next start does not build it again).
    const places = [dir, fs.realpathSync(dir)].map((d) => d + path.sep)
    if (files.some((f) => !places.some((d) => f.startsWith(d)))) {
      fs.writeFileSync(next, JSON.stringify({ load: "tsx", inputs }))
      fs.renameSync(next, `${out}.json`)
      return undefined
    }
    fs.writeFileSync(next, rewrite(result.outputFiles[0].text))
    fs.renameSync(next, out)
    fs.writeFileSync(next, JSON.stringify({ load: "built", inputs }))
    fs.renameSync(next, `${out}.json`)
    return pathToFileURL(out).href
  } catch {
    return undefined
  }
}

/** How the app was found to load ("built" or "tsx") if every file it was built from is as it was then; else undefined. */
const upToDate = (manifest) => {
  try {
    const { load, inputs } = JSON.parse(fs.readFileSync(manifest, "utf8"))
    return Object.entries(inputs).every(([file, was]) => stamp(file) === was) ? load : undefined
  } catch {
    return undefined
  }
}

/** `writeonce` and `writeonce/testing`: the runtime's own build (one copy of every module), imported by URL. */
const runtimeModules = (built) => ({
  writeonce: pathToFileURL(path.join(built, "index.mjs")).href,
  "writeonce/testing": pathToFileURL(path.join(built, "testing/index.mjs")).href
})

const runtimeOf = (built) => ({
  name: "writeonce-runtime",
  setup(b) {
    b.onResolve({ filter: /^writeonce(\/testing)?$/ }, (args) => ({ path: runtimeModules(built)[args.path], external: true }))
  }
})

/**
 * The app's own files keep their place: import.meta.url, dirname and filename name the source file, not the build,
 * and import.meta.resolve resolves from it (`writeonce` to the runtime's build, as the app loader does).
 */
const placesKept = (built) => ({
  name: "places-kept",
  setup(b) {
    b.onLoad({ filter: OWN }, (args) => {
      if (args.path.includes(`${path.sep}node_modules${path.sep}`)) return undefined
      const code = fs.readFileSync(args.path, "utf8")
      if (!code.includes("import.meta")) return undefined
      const url = pathToFileURL(args.path).href
      const place = { url, dirname: path.dirname(args.path), filename: args.path }
      const resolve = `((s) => ${JSON.stringify(runtimeModules(built))}[s] ?? (/^\\.{0,2}\\//.test(s) ? new URL(s, ${JSON.stringify(url)}).href : import.meta.resolve(s)))`
      const contents = code
        .replace(/\bimport\.meta\.(url|dirname|filename)\b/g, (_, key) => JSON.stringify(place[key]))
        .replace(/\bimport\.meta\.resolve\b/g, resolve)
      return { contents, loader: path.extname(args.path).slice(1).replace(/^m/, "") }
    })
  }
})
