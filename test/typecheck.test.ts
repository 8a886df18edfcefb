/**
 * The checkout type-checks, as `npm run typecheck` checks it (everything tsconfig.json includes, and the console
 * page against the DOM): a file of the suite, so that it runs beside the other files instead of before them all.
 * TypeScript 7, the native compiler, checks the checkout in a quarter of TypeScript 5's CPU; TypeScript 5 stays
 * for what needs its JavaScript API (`wo test`'s typecheck), and the package test checks the shipped types with both.
 */
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { ROOT } from "../testkit/spawn.ts"

// The package exports no bin/ path: its folder is found from its package.json.
const tsc = path.join(path.dirname(createRequire(import.meta.url).resolve("typescript7/package.json")), "bin/tsc")

const typecheck = (project: string) =>
  new Promise<{ code: number | null; output: string }>((resolve) => {
    // One checker thread: beside three other files on two cores, more threads only cost CPU (8.8 CPU-s against 5).
    const child = spawn(process.execPath, [tsc, "--noEmit", "--checkers", "1", "-p", project], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk))
    child.on("close", (code) => resolve({ code, output }))
  })

describe("the checkout type-checks", () => {
  it("src/, test/, testkit/, bench/, examples/, bin/ and scripts/ (tsconfig.json)", async () => {
    const { code, output } = await typecheck("tsconfig.json")
    expect(output).toBe("")
    expect(code).toBe(0)
  }, 300_000)

  it("the console page, against the DOM (tsconfig.page.json)", async () => {
    const { code, output } = await typecheck("tsconfig.page.json")
    expect(output).toBe("")
    expect(code).toBe(0)
  }, 300_000)
})
