/**
 * Compiled imports of effect's index rewritten to its modules (src/effect-imports.ts): the runtime's build and each
 * app module as it loads. The rewrite must bind the very same objects, and keep every line where it was.
 */
import * as Effect from "effect"
import { describe, expect, it } from "vitest"
import { rewriteEffectImports } from "../../src/effect-imports.ts"

describe("rewriteEffectImports", () => {
  it("imports each name from its own module, as tsx and esbuild emit the statements", () => {
    expect(rewriteEffectImports(`var a=1;import{Schema}from"effect";import{defineApp}from"writeonce";`))
      .toBe(`var a=1;import * as Schema from "effect/Schema";import{defineApp}from"writeonce";`)
    expect(rewriteEffectImports(`import {\n  Effect as Effect2,\n  pipe,\n  type Layer\n} from "effect";\nexport { Schema as S } from 'effect'\n`))
      .toBe(`import * as Effect2 from "effect/Effect"; import { pipe } from "effect/Function";\n\n\n\n\nexport * as S from "effect/Schema";\n`)
  })

  it("leaves everything else alone: other packages, namespace imports, deep imports, text", () => {
    const code = `import * as E from "effect"\nimport { Effect } from "effect/Effect"\nimport { x } from "effects"\nconst s = "see import { Schema } from 'effect'"\n`
    expect(rewriteEffectImports(code)).toBe(code)
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
