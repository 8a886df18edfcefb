/**
 * `import { Effect, Schema } from "effect"` loads effect's index, and with it every one of its modules (about 360,
 * fast-check among them): a third of `wo run`'s start. The index only re-exports each module as a namespace (and a
 * few functions of effect/Function), so the same import from the modules themselves is the same objects, loaded
 * alone: `import * as Effect from "effect/Effect"`. This rewrites compiled JavaScript so (the runtime's build, and
 * each app module as it loads). It is self-contained on purpose: the app loader's hook runs its source text.
 */
export function rewriteEffectImports(code: string): string {
  // Only the module's opening stretch of imports is read: comments, directives, esbuild's `var __name = ...;`
  // helpers and import/export-from statements, up to the first other statement. Past it the same words may be text
  // (a template literal holding a sample app.ts), which must stay as written. A late import is left to the index:
  // slower, never wrong. (Self-contained, for the loader hook: hence the patterns inline.)
  const prologue = /\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/|(["'])use strict\1;?|var __\w+\s*=[^;"'`]*(?:"[^"\n]*"[^;"'`]*)*;|(?:import|export)\b[^;"'`]*(["'])[^"'\n]*\2(?:\s*(?:with|assert)\s*\{[^}]*\})?;?/y
  let end = 0
  for (let m = prologue.exec(code); m !== null && m[0] !== ""; m = prologue.exec(code)) end = prologue.lastIndex
  return rewriteStatements(code.slice(0, end)) + code.slice(end)
}

/** Self-contained too (the loader hook embeds it beside rewriteEffectImports). */
export function rewriteStatements(code: string): string {
  // Only plain `import { ... } from "effect"` / `export { ... } from "effect"` statements, at the start of a line or
  // after a `;` (tsx emits whole modules on one line), as compilers emit them; anything else (`import * as E from
  // "effect"`) is left as it is. The line count is kept, so source maps and stack traces still point at the right lines.
  return code.replace(/(?<=^|;)([ \t]*)(import|export)\s*\{([^}]*)\}\s*from\s*["']effect["'];?/gm, (statement, indent, kind, list) => {
    const names = list.split(",").map((s: string) => s.trim()).filter((s: string) => s !== "")
    const parts: Array<string> = []
    for (const name of names) {
      const m = /^(?:type\s+)?([A-Za-z_$][\w$]*)(?:\s+as\s+([A-Za-z_$][\w$]*))?$/.exec(name)
      if (m === null) return statement // a form this does not know: leave the statement whole
      if (name.startsWith("type ")) continue
      const [, imported, local = imported] = m
      // Modules are capitalised (effect/Effect); the lower-case names are the functions the index takes from Function.
      parts.push(/^[A-Z]/.test(imported)
        ? `${kind} * as ${local} from "effect/${imported}";`
        : `${kind} { ${imported === local ? imported : `${imported} as ${local}`} } from "effect/Function";`)
    }
    return indent + parts.join(" ") + "\n".repeat(statement.split("\n").length - 1)
  })
}
