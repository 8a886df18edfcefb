#!/usr/bin/env node
// The `wo` command: TypeScript (ours and the user's app.ts) runs through tsx, so there is no build step.
// The big dependencies load natively first: tsx's loader hooks cost milliseconds per module, and effect
// alone has hundreds, so this keeps startup (and restart recovery) fast.
import "effect"
import "@effect/cli"
import "@effect/platform-node/NodeRuntime"
import "@effect/platform-node/NodeContext"
import "classic-level"
import { register } from "tsx/esm/api"

register()
await import("../src/cli.ts")
