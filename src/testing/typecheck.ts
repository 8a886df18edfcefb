/**
 * `wo test` typechecks the app and its specs before it runs them: a spec that does not compile must not pass.
 * It uses the app's own `typescript` (the scaffold lists it in devDependencies), else the one next to
 * writeonce; the app's `tsconfig.json` when it has one, else strict defaults over the given files.
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"

type TypeScript = typeof import("typescript")

/** The outcome: the compiler's errors as `file:line:col - error TSnnnn: message`, or why it could not run. */
export type TypecheckResult =
  | { readonly _tag: "Checked"; readonly errors: ReadonlyArray<string>; readonly compiler: string }
  | { readonly _tag: "NoCompiler"; readonly message: string }

/**
 * What an app without a tsconfig.json is checked with: strict, and modules resolved as `wo` loads them (so an
 * app.ts inside a CommonJS project is fine, as it is for `wo run`).
 */
const DEFAULTS = {
  target: "ES2022",
  module: "Preserve",
  moduleResolution: "Bundler",
  strict: true,
  noEmit: true,
  allowImportingTsExtensions: true,
  skipLibCheck: true
}

/** The app's `typescript`, else writeonce's own; undefined when neither is installed. */
const findCompiler = (dir: string): { ts: TypeScript; from: string } | undefined => {
  for (const from of [path.join(dir, "package.json"), import.meta.filename]) {
    try {
      const file = createRequire(from).resolve("typescript")
      return { ts: createRequire(from)("typescript") as TypeScript, from: file }
    } catch {
      // not installed there: try the next place
    }
  }
  return undefined
}

/** Typechecks `files` (the app and its specs) in `dir`, with the app's tsconfig.json if it has one. */
export const typecheckApp = (dir: string, files: ReadonlyArray<string>): TypecheckResult => {
  const found = findCompiler(dir)
  if (found === undefined) {
    return {
      _tag: "NoCompiler",
      message: `wo test typechecks the app and its specs, but TypeScript is not installed for ${dir}: ` +
        `run \`npm install --save-dev typescript @types/node\` there, or skip the check with \`wo test --no-typecheck\``
    }
  }
  const { ts } = found
  const configFile = path.join(dir, "tsconfig.json")
  let options: import("typescript").CompilerOptions
  let rootNames: ReadonlyArray<string>
  const errors: Array<import("typescript").Diagnostic> = []
  if (fs.existsSync(configFile)) {
    const read = ts.readConfigFile(configFile, ts.sys.readFile)
    if (read.error !== undefined) errors.push(read.error)
    const parsed = ts.parseJsonConfigFileContent(read.config ?? {}, ts.sys, dir, undefined, configFile)
    errors.push(...parsed.errors.filter((d) => d.code !== 18003)) // 18003: no inputs; the files below are
    options = { ...parsed.options, noEmit: true }
    rootNames = [...new Set([...parsed.fileNames, ...files])]
  } else {
    options = ts.convertCompilerOptionsFromJson(DEFAULTS, dir).options
    rootNames = files
  }
  const program = ts.createProgram({ rootNames, options })
  errors.push(...ts.getPreEmitDiagnostics(program))
  return { _tag: "Checked", errors: errors.map((d) => describe(ts, d, dir)), compiler: found.from }
}

/** One diagnostic as `specs/a.spec.ts:3:7 - error TS2322: Type 'string' is not assignable to type 'number'.` */
const describe = (ts: TypeScript, d: import("typescript").Diagnostic, dir: string): string => {
  const message = ts.flattenDiagnosticMessageText(d.messageText, "\n  ")
  const code = `error TS${d.code}`
  if (d.file === undefined || d.start === undefined) return `${code}: ${message}`
  const { line, character } = d.file.getLineAndCharacterOfPosition(d.start)
  const file = path.relative(dir, d.file.fileName).split(path.sep).join("/")
  return `${file}:${line + 1}:${character + 1} - ${code}: ${message}`
}
