#!/usr/bin/env node
// `wo` from this checkout's TypeScript sources, through tsx: no build step while working on writeonce. The tests
// and `npm start` run this file; `npx wo` in a checkout lands here too (dist/wo.js hands over). The package that
// npm installs runs dist/wo.js (the build) and does not ship this file.
// The big dependencies load natively first: tsx's loader hooks cost milliseconds per module, and effect
// alone has hundreds, so this keeps startup (and restart recovery) fast.
import "effect"
import "@effect/cli"
import "@effect/platform-node/NodeRuntime"
import "@effect/platform-node/NodeContext"
import "classic-level"
import { register } from "tsx/esm/api"

register()
// Apps import "writeonce": resolve it to these sources too (the writeonce-source condition), so that the app and
// the runtime share one copy of every module.
const { registerAppLoader } = await import("../src/app-loader.ts")
registerAppLoader({ tsx: false, sources: true })
await import("../src/cli.ts")
