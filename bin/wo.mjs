#!/usr/bin/env node
// The `wo` command: TypeScript (ours and the user's app.ts) runs through tsx, so there is no build step.
import { register } from "tsx/esm/api"

register()
await import("../src/cli.ts")
