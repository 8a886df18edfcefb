/**
 * Compiled imports of effect's index rewritten to its modules (src/app-loading/effect-imports.ts): the runtime's build and each
 * app module as it loads. The rewrite must bind the very same objects, and keep every line where it was.
 */
import * as Effect from "effect"
import { afterAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
// @ts-expect-error: a plain .mjs module of the checkout's tooling, without types
import { effectImportsRewriter } from "../../bin/built-sources.mjs"
import { rewriteEffectImports, rewriteStatements } from "../../src/app-loading/effect-imports.ts"

const dir = path.join(os.tmpdir(), `wo-effect-imports-${process.pid}`)

describe("rewriteEffectImports", () => {
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }))

  it("imports each name from its own module, as tsx and esbuild emit the statements", () => {
    const helpers = `var __defProp=Object.defineProperty;var __name=(target,value)=>__defProp(target,"name",{value,configurable:true});`
    expect(rewriteEffectImports(`${helpers}import{Schema}from"effect";import{defineApp}from"writeonce";`))
      .toBe(`${helpers}import * as Schema from "effect/Schema";import{defineApp}from"writeonce";`)
    expect(rewriteEffectImports(`import {\n  Effect as Effect2,\n  pipe,\n  type Layer\n} from "effect";\nexport { Schema as S } from 'effect'\n`))
      .toBe(`import * as Effect2 from "effect/Effect"; import { pipe } from "effect/Function";\n\n\n\n\nexport * as S from "effect/Schema";\n`)
  })

  it("leaves everything else alone: other packages, namespace imports, deep imports, text", () => {
    const code = `import * as E from "effect"\nimport { Effect } from "effect/Effect"\nimport { x } from "effects"\nconst s = "see import { Schema } from 'effect'"\n`
    expect(rewriteEffectImports(code)).toBe(code)
  })

  it("reads only the module's opening imports: the same words later in a template literal stay as written", () => {
    const code = `/** doc */\nimport { Schema } from "effect"\nexport const sample = \`\nimport { Schema } from "effect"\n\`\n`
    expect(rewriteEffectImports(code)).toBe(code.replace(`import { Schema } from "effect"\n`, `import * as Schema from "effect/Schema";\n`))
  })

  it("in a bundle (bin/built-sources.mjs), rewrites the imports wherever they stand, and no text", async () => {
    fs.mkdirSync(path.join(dir, "app-loading"), { recursive: true })
    fs.writeFileSync(path.join(dir, "app-loading", "effect-imports.mjs"), `export ${rewriteStatements.toString()}\n`)
    const rewrite = await effectImportsRewriter(dir)
    const bundle = `import { a } from "./chunk.mjs";\n\n// src/x.ts\nconst t = \`\nimport { Schema } from "effect"\n\`;\n\n// src/y.ts\nimport {\n  Effect,\n  pipe\n} from "effect";\nconst s = "export { Layer } from 'effect'";\n`
    expect(rewrite(bundle)).toBe(bundle.replace(`import {\n  Effect,\n  pipe\n} from "effect"`, `import * as Effect from "effect/Effect"; import { pipe } from "effect/Function";\n\n\n`))
  })

  it("binds what effect's index binds, for every name it exports", async () => {
    const names = Object.keys(Effect)
    expect(names.length).toBeGreaterThan(100)
    const rewritten = rewriteEffectImports(`import { ${names.join(", ")} } from "effect";`)
    expect(rewritten).not.toContain(`from "effect"`)
    for (const statement of rewritten.split(";").map((s) => s.trim()).filter((s) => s !== "")) {
      const m = /^import (?:\* as (\w+)|\{ (\w+) \}) from "(effect\/\w+)"$/.exec(statement)
      expect(m, statement).not.toBeNull()
      const [, namespace, named, module] = m!
      const loaded = await import(module)
      if (namespace !== undefined) expect(loaded, namespace).toStrictEqual((Effect as Record<string, unknown>)[namespace])
      else expect(loaded[named], named).toBe((Effect as Record<string, unknown>)[named])
    }
  })
})
