/**
 * `wo test` typechecks the app and its specs before it runs them: a real `wo test` process
 * on a temp app. The app resolves `writeonce` to this checkout (node_modules links) and its built types, as an
 * installed app would.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { installLikeAnApp } from "../../testkit/app-dir.ts"
import { runWo, tempDir } from "../../testkit/server.ts"

const makeApp = (spec: string) => {
  const dir = path.join(tempDir("wo-typecheck-"), "notes")
  fs.mkdirSync(path.join(dir, "specs"), { recursive: true })
  installLikeAnApp(dir)
  fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({
    compilerOptions: {
      target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, noEmit: true,
      allowImportingTsExtensions: true, skipLibCheck: true
    }
  }))
  fs.writeFileSync(path.join(dir, "app.ts"), `import { Schema } from "effect"
import { defineApp, entity } from "writeonce"

export default defineApp({ name: "notes", entities: { notes: entity({ fields: { text: Schema.String } }) } })
`)
  fs.writeFileSync(path.join(dir, "specs/notes.spec.ts"), `import { create, created, DeciderSpecification, spec } from "writeonce/testing"
import app from "../app.ts"

spec("a note is created", () =>
  DeciderSpecification.for(app, "notes")([]).when(create({ text: "hi" })).then(created({ text: "hi" })))
${spec}`)
  return dir
}

describe("wo test typechecks first", () => {
  it("fails on type errors in a spec, a typo against the app's declaration among them, with file:line:col, and runs nothing; --no-typecheck skips the check", async () => {
    const dir = makeApp(`export const oops: number = "x"
spec("typo", () => DeciderSpecification.for(app, "notes")([]).when(create({ txet: "hi" })).thenFails())
`)
    const failed = await runWo(["test", dir])
    expect(failed.code, failed.stdout + failed.stderr).toBe(1)
    expect(failed.stdout).toMatch(/^not ok 1 - typecheck$/m)
    expect(failed.stdout).toContain(`specs/notes.spec.ts:6:14 - error TS2322: Type 'string' is not assignable to type 'number'.`)
    expect(failed.stdout).toMatch(/specs\/notes\.spec\.ts:7:\d+ - error TS2353: Object literal may only specify known properties, and 'txet' does not exist/)
    expect(failed.stdout).not.toMatch(/a note is created/)

    const skipped = await runWo(["test", dir, "--no-typecheck"])
    expect(skipped.code, skipped.stdout + skipped.stderr).toBe(0)
    expect(skipped.stdout).toMatch(/^ok 1 - specs\/notes\.spec\.ts > a note is created$/m)
  }, 120_000)

  it("passes a clean app", async () => {
    const clean = await runWo(["test", makeApp("")])
    expect(clean.code, clean.stdout + clean.stderr).toBe(0)
    expect(clean.stdout).toMatch(/^ok 1 - typecheck$/m)
    expect(clean.stdout).toMatch(/^ok 2 - specs\/notes\.spec\.ts > a note is created$/m)
  }, 120_000)
})
