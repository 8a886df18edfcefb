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
  await import("./index.ts")
  await import("./testing/index.ts")
  await import("@effect/cli")
  await import("@effect/platform-node/NodeRuntime")
  await import("@effect/platform-node/NodeContext")
  const { registerAppLoader } = await import("./app-loader.ts")
  registerAppLoader()
  await import("./cli.ts")
}
