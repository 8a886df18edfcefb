/**
 * `wo init --template library`: the library sample, as examples/library holds it (the one source, which
 * `wo test examples/library` tests), named after the new folder. Through the real `wo` binary.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { FILES, renderTemplate, SAMPLE, TEMPLATE } from "../../scripts/library-template.ts"
import { runWo, tempDir } from "../../testkit/server.ts"

const read = (dir: string, file: string) => fs.readFileSync(path.join(dir, file), "utf8")

describe("wo init --template library", () => {
  it("src/init/library-template.ts is generated from examples/library as it is now", () => {
    // Fails after an edit of the sample until `node --import tsx scripts/library-template.ts` is run again.
    expect(fs.readFileSync(TEMPLATE, "utf8")).toBe(renderTemplate())
  })

  it("writes the sample's files, with the scaffold's package.json and tsconfig.json, and nothing of the tasks app", async () => {
    const dir = path.join(tempDir("wo-init-"), "library")
    const ran = await runWo(["init", "--template", "library", dir])
    expect(ran.code, ran.stderr).toBe(0)
    expect(ran.stdout).toContain(`created app "library" in ${dir}:`)
    for (const file of FILES) {
      expect(ran.stdout).toContain(`  ${file}\n`)
      // From a checkout, the README also says where writeonce is installed from (a local copy, by absolute path).
      if (file === "README.md") expect(read(dir, file)).toMatch(new RegExp(`^${escapeRegExp(read(SAMPLE, file))}\n## writeonce from a local copy\n`))
      else expect(read(dir, file), file).toBe(read(SAMPLE, file))
    }
    expect(fs.existsSync(path.join(dir, "specs/tasks.spec.ts"))).toBe(false)
    const manifest = JSON.parse(read(dir, "package.json"))
    expect(manifest.name).toBe("library")
    expect(manifest.scripts.test).toBe("wo test .")
    expect(JSON.parse(read(dir, "tsconfig.json")).compilerOptions.strict).toBe(true)
    expect(read(dir, ".gitignore")).toContain(".data/")
  })

  it("names the app after its folder: app.ts and the transcript's # app: line", async () => {
    const dir = path.join(tempDir("wo-init-"), "Branch Library")
    const ran = await runWo(["init", "--template", "library", dir])
    expect(ran.code, ran.stderr).toBe(0)
    expect(read(dir, "app.ts")).toContain(`  name: "branch-library",\n`)
    expect(read(dir, "app.ts")).not.toContain(`name: "library"`)
    expect(read(dir, "transcripts/library.http")).toMatch(/^# app: branch-library$/m)
    // Everything else is the sample's.
    expect(read(dir, "app.ts").replace(`name: "branch-library",`, `name: "library",`)).toBe(read(SAMPLE, "app.ts"))
  })

  it("the default is still the tasks app; an unknown template is refused, naming the choices; --help says them", { timeout: 120_000 }, async () => {
    const dir = path.join(tempDir("wo-init-"), "shop")
    expect((await runWo(["init", dir])).code).toBe(0)
    expect(fs.existsSync(path.join(dir, "specs/tasks.spec.ts"))).toBe(true)
    expect(fs.existsSync(path.join(dir, "specs/commands.spec.ts"))).toBe(false)

    const other = path.join(tempDir("wo-init-"), "x")
    const bad = await runWo(["init", "--template", "shelf", other])
    expect(bad.code).not.toBe(0)
    expect(`${bad.stdout}${bad.stderr}`).toMatch(/tasks.*library|library.*tasks/)
    expect(fs.existsSync(other)).toBe(false)

    const help = await runWo(["init", "--help"])
    expect(help.stdout).toMatch(/--template/)
    expect(help.stdout).toMatch(/library \(books, members and loans/)
  })
})

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
