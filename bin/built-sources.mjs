// The package's own code for every `wo` command in a checkout, built by esbuild into .wo-build/<hash>/ once
// per change of src/ and loaded natively: through tsx's loader hooks, src/ (about 160 modules) cost a third of
// the start. The hash covers every file's path, size and mtime under src/, so an edit is never served stale; a
// build that fails (an edit in progress) returns undefined, and the caller runs the sources through tsx instead.
// Processes that build at once each write their own folder and rename it into place; the first one wins.
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

// The built layout: entries beside each other, shared chunks, and the console page's sources at console/page with
// the SSE codec the page imports at support/sse.ts, as in src/ (src/console/assets.ts finds the page there).
const ENTRIES = {
  "serve-args": "cli/serve-args.ts",
  "cli/cli": "cli/cli.ts",
  index: "index.ts",
  "testing/index": "testing/index.ts",
  "app-loading/effect-imports": "app-loading/effect-imports.ts",
  // Loaded by a worker thread beside the runtime's index (src/app-loading/app-worker.ts `runtimeModule`).
  "projections/views/fold-thread-worker": "projections/views/fold-thread-worker.ts"
}
const LAYOUT = "8"
/** What the standalone command line still imports: native addons and binaries, and what it loads only on demand. */
const STANDALONE_EXTERNAL = ["classic-level", "pg", "pg-native", "esbuild", "tsx", "tsx/*", "typescript", "jose", "prom-client"]

/** A hash of the sources: each file's path, size and mtime. */
const fingerprint = (src) => {
  const hash = createHash("sha256").update(LAYOUT)
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const file = path.join(dir, entry.name)
      if (entry.isDirectory()) walk(file)
      else {
        const stat = fs.statSync(file)
        hash.update(`${file}\0${stat.size}\0${stat.mtimeMs}\n`)
      }
    }
  }
  walk(src)
  return hash.digest("hex").slice(0, 16)
}

/** The folder holding the built sources of `root` (a checkout), built now if needed; undefined if it cannot be. */
export async function builtSources(root) {
  try {
    const src = path.join(root, "src")
    const builds = path.join(root, ".wo-build")
    const dir = path.join(builds, fingerprint(src))
    if (fs.existsSync(path.join(dir, "serve-args.mjs"))) {
      fs.utimesSync(dir, new Date(), new Date()) // in use: not pruned
      return dir
    }
    const next = `${dir}.${process.pid}`
    const { build } = await import("esbuild")
    await build({
      entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([out, file]) => [out, path.join(src, file)])),
      outdir: next,
      outExtension: { ".js": ".mjs" },
      bundle: true,
      splitting: true,
      format: "esm",
      platform: "node",
      target: `node${process.versions.node}`,
      packages: "external",
      logLevel: "silent"
    })
    await loadEffectModulesAlone(next)
    // The command line once more, with effect and the other pure-JavaScript packages inside: commands that import
    // no app (verify, backup, restore, init, ...) load one file instead of hundreds of modules, in half the CPU.
    // Never for a command that imports an app: the app's `effect` must be the runtime's.
    await build({
      entryPoints: { cli: path.join(src, "cli/cli.ts") },
      outdir: path.join(next, "standalone"),
      outExtension: { ".js": ".mjs" },
      bundle: true,
      format: "esm",
      platform: "node",
      target: `node${process.versions.node}`,
      external: STANDALONE_EXTERNAL,
      // Bundled CommonJS packages call require, which an ES module does not have.
      banner: { js: `import { createRequire as __woRequire } from "node:module"; const require = __woRequire(import.meta.url);` },
      logLevel: "silent"
    })
    fs.cpSync(path.join(src, "console/page"), path.join(next, "console/page"), { recursive: true })
    fs.cpSync(path.join(src, "support/sse.ts"), path.join(next, "support/sse.ts"))
    try {
      fs.renameSync(next, dir)
    } catch {
      fs.rmSync(next, { recursive: true, force: true }) // another process built the same sources first
    }
    pruneOlder(builds, dir)
    return fs.existsSync(path.join(dir, "serve-args.mjs")) ? dir : undefined
  } catch {
    return undefined
  }
}

/** The built modules import effect's modules themselves, not its index, which loads all of them (effect-imports.ts). */
export const loadEffectModulesAlone = async (dir, extension = ".mjs") => {
  const rewrite = await effectImportsRewriter(dir, extension)
  for (const file of fs.readdirSync(dir, { recursive: true })) {
    if (!file.endsWith(extension)) continue
    const code = fs.readFileSync(path.join(dir, file), "utf8")
    const rewritten = rewrite(code)
    if (rewritten !== code) fs.writeFileSync(path.join(dir, file), rewritten)
  }
}

/**
 * Rewrites every static `import/export { ... } from "effect"` of a built module, wherever esbuild placed it (a bundle
 * keeps each module's imports in its own stretch). es-module-lexer finds the statements, so the same words inside a
 * string or a template literal (the library template holds a whole app.ts) are never touched.
 */
export const effectImportsRewriter = async (dir, extension = ".mjs") => {
  const { rewriteStatements } = await import(`${dir}/app-loading/effect-imports${extension}`)
  const { init, parse } = await import("es-module-lexer")
  await init
  return (code) => {
    if (!code.includes("effect")) return code
    const [imports] = parse(code)
    let out = code
    for (const i of [...imports].reverse()) {
      if (i.n !== "effect" || i.d !== -1) continue
      out = out.slice(0, i.ss) + rewriteStatements(out.slice(i.ss, i.se)) + out.slice(i.se)
    }
    return out
  }
}

/** Builds of older sources, a day after their last use (a running `wo` may still load chunks from its own). */
const pruneOlder = (builds, keep) => {
  const dayAgo = Date.now() - 24 * 3600 * 1000
  for (const name of fs.readdirSync(builds)) {
    const dir = path.join(builds, name)
    if (dir !== keep && fs.statSync(dir).mtimeMs < dayAgo) fs.rmSync(dir, { recursive: true, force: true })
  }
}
