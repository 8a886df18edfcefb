/**
 * `wo init <dir>`: writes a new app that runs (`wo run .`) and passes its own tests (`wo test .`) as it is. It
 * refuses a folder that holds anything, so that it never overwrites a file. `--template` chooses the app: a
 * to-do list (`tasks`, the default) or the library sample (`library`: books, members, loans and the commands
 * across them).
 */
import { Data, Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import pkg from "../../package.json" with { type: "json" }
import { libraryFiles } from "./library-template.ts"
import { appTs, gitignore, packageJson, readme, specTs, tsconfig, transcriptHttp, type TemplateInput } from "./templates.ts"

export class InitError extends Data.TaggedError("InitError")<{ readonly message: string }> {}

export interface Scaffolded {
  readonly dir: string
  readonly name: string
  readonly files: ReadonlyArray<string>
  /** The writeonce dependency written into package.json. */
  readonly writeonce: string
}

/** The apps `wo init --template` can write. */
export const TEMPLATES = ["tasks", "library"] as const
export type Template = (typeof TEMPLATES)[number]

/** A template's own files: the app, its specs, its transcripts and its README. */
const templateFiles = (template: Template, input: TemplateInput): ReadonlyArray<readonly [string, string]> =>
  template === "library"
    ? libraryFiles(input)
    : [
      ["app.ts", appTs(input)],
      ["specs/tasks.spec.ts", specTs()],
      ["transcripts/tasks.http", transcriptHttp(input)],
      ["README.md", readme(input)]
    ]

/** This package's own folder: the nearest one above this module whose package.json names writeonce (the module
 * lies in dist/init/, src/init/, or a bundle of the checkout's sources in .wo-build/). */
const PACKAGE_ROOT = ((): string => {
  for (let dir = import.meta.dirname; ; dir = path.dirname(dir)) {
    try {
      if ((JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: unknown }).name === "writeonce") return dir
    } catch {
      // no package.json here, or not one to read: look further up
    }
    if (path.dirname(dir) === dir) return path.resolve(import.meta.dirname, "../..")
  }
})()

/** A package name from the folder's name: lower case, letters, digits, `-`, `.` and `_`. */
const appName = (dir: string) =>
  path.basename(dir).toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[._-]+|-+$/g, "") || "app"

/**
 * How the new app depends on writeonce. Normally the published version range. When this copy was installed from
 * a local tarball or folder (`npm install ./writeonce-0.1.0.tgz`, before a release), the same `file:` spec, so that
 * `npm install` there installs what is running now; from a checkout of writeonce, the checkout itself. The path is
 * absolute, so the new app can be moved anywhere on this machine (its README says so, and what to do if that copy moves).
 */
export const writeonceDependency = (): string => {
  const installedIn = path.dirname(PACKAGE_ROOT)
  if (path.basename(installedIn) !== "node_modules") return `file:${PACKAGE_ROOT}`
  const project = path.dirname(installedIn)
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(project, "package.json"), "utf8")) as {
      dependencies?: Record<string, string>
      devDependencies?: Record<string, string>
    }
    const spec = manifest.dependencies?.writeonce ?? manifest.devDependencies?.writeonce
    if (spec !== undefined && spec.startsWith("file:")) {
      return `file:${path.resolve(project, spec.slice("file:".length))}`
    }
  } catch {
    // No readable manifest (a global install, say): the published version it is.
  }
  return `^${pkg.version}`
}

/** What the README adds when the app depends on a local copy of writeonce rather than a published version. */
const localCopyNote = (spec: string) =>
  spec.startsWith("file:")
    ? `\n## writeonce from a local copy\n\n\`package.json\` installs writeonce from \`${spec.slice("file:".length)}\`, a local copy (before a ` +
      `release). The path is absolute: this folder may move anywhere on this machine. If that copy moves or goes, change the path ` +
      `in \`package.json\`, or depend on a published version (\`npm install writeonce\`).\n`
    : ""

/** Writes the app into `dir` (created if missing); fails if `dir` is a file or holds anything. */
export const scaffoldApp = (target: string, template: Template = "tasks") =>
  Effect.gen(function* () {
    const dir = path.resolve(target)
    if (fs.existsSync(dir)) {
      if (!fs.statSync(dir).isDirectory()) return yield* new InitError({ message: `${dir} exists and is not a folder` })
      const present = fs.readdirSync(dir)
      if (present.length > 0) {
        return yield* new InitError({
          message: `${dir} is not empty (${present.slice(0, 3).join(", ")}${present.length > 3 ? ", ..." : ""}); wo init never overwrites: choose a new folder`
        })
      }
    }
    const input: TemplateInput = {
      name: appName(dir),
      writeonce: writeonceDependency(),
      effect: pkg.dependencies.effect,
      typescript: pkg.devDependencies.typescript,
      typesNode: pkg.devDependencies["@types/node"]
    }
    const files: ReadonlyArray<readonly [string, string]> = [
      ["package.json", packageJson(input)],
      ...templateFiles(template, input).map(([file, text]) => [file, file === "README.md" ? text + localCopyNote(input.writeonce) : text] as const),
      ["tsconfig.json", tsconfig()],
      [".gitignore", gitignore()]
    ]
    yield* Effect.try({
      try: () => {
        for (const [file, text] of files) {
          fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
          // `wx`: fail rather than overwrite, should anything appear meanwhile.
          fs.writeFileSync(path.join(dir, file), text, { flag: "wx" })
        }
      },
      catch: (e) => new InitError({ message: `cannot write the app into ${dir}: ${e instanceof Error ? e.message : String(e)}` })
    })
    return { dir, name: input.name, files: files.map(([file]) => file), writeonce: input.writeonce } satisfies Scaffolded
  })

/** What to do next, for the terminal. */
export const nextSteps = (made: Scaffolded) => {
  const cd = path.relative(process.cwd(), made.dir) || "."
  return [
    `created app "${made.name}" in ${made.dir}:`,
    ...made.files.map((f) => `  ${f}`),
    `(writeonce dependency: ${made.writeonce})`,
    ``,
    `next:`,
    ...(cd === "." ? [] : [`  cd ${cd}`]),
    `  npm install`,
    `  npx wo run .      # serve it on http://127.0.0.1:8080`,
    `  npx wo dev .      # the same, reloaded live on every save (agents are told the tools changed)`,
    `  npx wo test .     # run its specs and transcripts`
  ].join("\n")
}
