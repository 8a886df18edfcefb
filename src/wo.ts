#!/usr/bin/env node
/**
 * The `wo` executable (package.json `bin`). The runtime is plain JavaScript here and loads natively; only then is
 * the app loader registered (loader hooks cost time per module, and effect alone has hundreds), and the command
 * line runs. In a checkout of writeonce itself (its sources beside dist/), `wo` runs those sources through
 * bin/wo.mjs instead, so that an edit needs no rebuild and `npx wo` never runs a stale build.
 */
import * as fs from "node:fs"

const checkoutLauncher = new URL("../bin/wo.mjs", import.meta.url)

if (import.meta.url.endsWith("/dist/wo.js") && fs.existsSync(checkoutLauncher)) {
  await import(checkoutLauncher.href)
} else {
  // `wo run` and `wo dev` read their command line without @effect/cli (serve-args.ts); the other commands load it.
  const serving = process.argv[2] === "run" || process.argv[2] === "dev"
  await import("./index.ts")
  await import("./testing/index.ts")
  await import("@effect/platform-node/NodeRuntime")
  if (!serving) await Promise.all([import("@effect/cli"), import("@effect/platform-node/NodeContext")])
  const { registerAppLoader } = await import("./app-loading/app-loader.ts")
  registerAppLoader()
  const served = serving && (await import("./cli/serve-args.ts")).serveFromArgs(process.argv.slice(2))
  if (!served) await import("./cli/cli.ts")
}
