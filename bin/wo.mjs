#!/usr/bin/env node
// `wo` from this checkout's TypeScript sources: no build step while working on writeonce. The tests and
// `npm start` run this file; `npx wo` in a checkout lands here too (dist/wo.js hands over). The package that
// npm installs runs dist/wo.js (the build) and does not ship this file.
// The checkout's code loads natively, built once per change of src/ (bin/built-sources.mjs): through tsx's loader
// hooks, src/ costs about a CPU-second per command, and the tests run `wo` over a hundred times. `wo run` and
// `wo dev` go further: they read their command line without @effect/cli (src/cli/serve-args.ts). When the build
// fails (an edit in progress), src/ runs through tsx instead, with the big dependencies loaded natively first:
// tsx's hooks cost milliseconds per module, and effect alone has hundreds. The built code imports effect's modules
// one by one (src/app-loading/effect-imports.ts); only src/ run through tsx needs effect's index preloaded.
import { pathToFileURL } from "node:url"
import { builtSources } from "./built-sources.mjs"

const args = process.argv.slice(2)
const root = new URL("..", import.meta.url).pathname
const serving = args[0] === "run" || args[0] === "dev"
const importsApp = serving || args[0] === "test" || args.some((a) => a === "--app" || a.startsWith("--app="))
const built = await builtSources(root)
if (built !== undefined && !importsApp) {
  // A command that imports no app: no loader hooks to register (about a CPU-second), and the command line with
  // its packages in one file (bin/built-sources.mjs).
  await import(`${built}/standalone/cli.mjs`)
} else {
  await Promise.all([import("@effect/platform-node/NodeRuntime"), import("classic-level")])
  await serveOrLoad()
}

async function serveOrLoad() {
  const serveArgs = built === undefined || !serving ? undefined : await import(`${built}/serve-args.mjs`)
  const read = serveArgs?.readServeArgs(args)
  if (built === undefined) await Promise.all([import("effect"), import("@effect/cli"), import("@effect/platform-node/NodeContext")])
  // `wo run` loads the app compiled (bin/compiled-app.mjs), with no loader hooks at all; its stack traces map back
  // to the app's own files. `wo dev` (which reloads through the loader) and a build that failed take the loader.
  const { compiledApp } = await import("./compiled-app.mjs")
  const compiled = read?.command === "run" ? await compiledApp(read.options.appDir, built) : undefined
  if (compiled !== undefined) {
    process.setSourceMapsEnabled(true)
    // The runtime it imports as `writeonce`, for a worker thread that loads it again (src/app-loading/app-worker.ts).
    const runtime = pathToFileURL(`${built}/index.mjs`).href
    serveArgs.serve({ ...read, options: { ...read.options, compiledApp: { url: compiled, runtime } } })
    return
  }
  const { register } = await import("tsx/esm/api")
  register()
  // Apps import "writeonce": resolve it to the same code the runtime runs (the built folder, or these sources under
  // the writeonce-source condition), so that the app and the runtime share one copy of every module.
  const { registerAppLoader } = await import("../src/app-loading/app-loader.ts")
  registerAppLoader({ tsx: false, sources: true, ...(built === undefined ? {} : { built }) })
  if (read !== undefined) serveArgs.serve(read)
  else if (built !== undefined) await import(`${built}/cli/cli.mjs`)
  else await import("../src/cli/cli.ts")
}
