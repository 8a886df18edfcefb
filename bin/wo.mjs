#!/usr/bin/env node
// `wo` from this checkout's TypeScript sources, through tsx: no build step while working on writeonce. The tests
// and `npm start` run this file; `npx wo` in a checkout lands here too (dist/wo.js hands over). The package that
// npm installs runs dist/wo.js (the build) and does not ship this file.
// The big dependencies load natively first: tsx's loader hooks cost milliseconds per module, and effect
// alone has hundreds, so this keeps startup (and restart recovery) fast. `wo run` and `wo dev` read their
// command line without @effect/cli (src/serve-args.ts), so they do not load it; the other commands do.
import "effect"
import "@effect/platform-node/NodeRuntime"
import "classic-level"
import { register } from "tsx/esm/api"

const serving = process.argv[2] === "run" || process.argv[2] === "dev"
if (!serving) await Promise.all([import("@effect/cli"), import("@effect/platform-node/NodeContext")])
register()
// Apps import "writeonce": resolve it to these sources too (the writeonce-source condition), so that the app and
// the runtime share one copy of every module.
const { registerAppLoader } = await import("../src/app-loader.ts")
registerAppLoader({ tsx: false, sources: true })
const served = serving && (await import("../src/serve-args.ts")).serveFromArgs(process.argv.slice(2))
if (!served) await import("../src/cli.ts")
