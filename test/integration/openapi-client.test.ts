/**
 * A client typed from the OpenAPI document compiles against the samples: `openapi-typescript` (its CLI, as a user
 * runs it) turns the blog's and the library's documents into .d.ts files in a temp dir, and TypeScript 7 checks a
 * small client against them (strict; an unused `@ts-expect-error` fails it, so the wrong uses must not compile).
 */
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import * as fs from "node:fs"
import * as path from "node:path"
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { tempDir } from "../../testkit/server.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { openApiDocument } from "../../src/http/rest/openapi.ts"
import type { AppDef } from "../../src/domain/catalog.ts"
import blog from "../../examples/blog/app.ts"
import library from "../../examples/library/app.ts"

const require = createRequire(import.meta.url)
const tsc = path.join(path.dirname(require.resolve("typescript7/package.json")), "bin/tsc")
const openapiTs = path.join(path.dirname(require.resolve("openapi-typescript/package.json")), "bin/cli.js")

const run = (args: ReadonlyArray<string>, cwd: string) =>
  new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk))
    child.on("close", (code) => resolve({ code, output }))
  })

/** The document the server answers an admin with (the route serves exactly this, as JSON). */
const documentOf = (app: AppDef) =>
  openApiDocument(Either.getOrThrow(compileApp(app)), { maxPageSize: 1000, bearer: true, allowed: () => true })

const CLIENT = `
import type { components, paths } from "./blog-api"
import type { paths as libraryPaths, components as libraryComponents } from "./library-api"

type JsonBody<T> = T extends { content: { "application/json": infer B } } ? B : never
type Ok<T> = T extends { responses: { 200: infer R } } ? JsonBody<R> : never

// The blog: an article as the server answers it, the create body, a filtered list, the view's value.
type Article = components["schemas"]["articles"]
type NewArticle = JsonBody<paths["/api/articles"]["post"]["requestBody"]>
export const draft: NewArticle = { title: "Hello", body: "...", status: "draft", tags: [], author: { name: "Ann" } }
// @ts-expect-error: a status the type does not have
export const wrongStatus: NewArticle = { ...draft, status: "archived" }
// @ts-expect-error: no field "titel"
export const typo: NewArticle = { ...draft, titel: "Hello" }
export const titleOf = (a: Article): string => a.title + a.id + a.version
type ArticleQuery = NonNullable<paths["/api/articles"]["get"]["parameters"]["query"]>
export const published: ArticleQuery = { status: "published", order: "-title", limit: 20 }
// @ts-expect-error: not an order the list takes
export const badOrder: ArticleQuery = { order: "-titel" }
export const firstTitle = (page: Ok<paths["/api/articles"]["get"]>): string | undefined => page.items[0]?.title
export const drafts = (v: Ok<paths["/api/_views/articles_by_status"]["get"]>): number | undefined => v.value["draft"]

// The library: guarded fields are not in the create body; methods and app commands take their params.
type NewBook = JsonBody<libraryPaths["/api/books"]["post"]["requestBody"]>
export const book: NewBook = { title: "Dune", author: "Frank Herbert" }
// @ts-expect-error: copies is guarded (changed by methods only)
export const guarded: NewBook = { ...book, copies: 3 }
type Lend = JsonBody<libraryPaths["/api/_commands/lend"]["post"]["requestBody"]>
export const lend: Lend = { book: "1", member: "2" }
// @ts-expect-error: member is required
export const halfLend: Lend = { book: "1" }
export const changed = (r: Ok<libraryPaths["/api/_commands/lend"]["post"]>) => r.changes.map((c) => c.kind)
type AddCopies = JsonBody<NonNullable<libraryPaths["/api/books/{id}/add_copies"]["post"]["requestBody"]>>
export const addTwo: AddCopies = { n: 2 }
export const available = (b: libraryComponents["schemas"]["books"]): number => b.available
type Refusal = libraryComponents["schemas"]["Refusal"]
export const codeOf = (r: Refusal): string | undefined => r.code
// @ts-expect-error: loans are not created over REST
export type NoLoanCreate = libraryPaths["/api/loans"]["post"]["requestBody"]
`

describe("a client typed from the OpenAPI document", () => {
  it("compiles against the blog and the library, and refuses wrong uses", async () => {
    const dir = tempDir("wo-openapi-client-")
    for (const [name, app] of [["blog", blog], ["library", library]] as const) {
      fs.writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(documentOf(app)))
      const generated = await run([openapiTs, `${name}.json`, "-o", `${name}-api.d.ts`], dir)
      expect(generated.code, generated.output).toBe(0)
    }
    fs.writeFileSync(path.join(dir, "client.ts"), CLIENT)
    fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: "es2022", module: "preserve", moduleResolution: "bundler", types: [], lib: ["es2022"], skipLibCheck: false },
      files: ["client.ts"]
    }))
    const checked = await run([tsc, "-p", "tsconfig.json", "--checkers", "1"], dir)
    expect(checked.output).toBe("")
    expect(checked.code).toBe(0)
    fs.rmSync(dir, { recursive: true, force: true })
  }, 120_000)
})

