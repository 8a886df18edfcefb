/**
 * The console page's files. The client is TypeScript like the rest of writeonce, which ships as source and
 * runs through tsx without a build step; so the page is bundled the same way, by esbuild (the compiler tsx
 * itself runs on), once, on the first request for it, and kept in memory. Nothing is fetched from elsewhere.
 */
import { Data, Effect } from "effect"
import { existsSync } from "node:fs"
import * as fs from "node:fs/promises"
import * as path from "node:path"

// Beside this module in src/ and dist/; in a checkout's built sources (bin/built-sources.mjs) this module is part of
// a chunk at the build's root, and the page sits at console/page there, so its import of ../../support/sse.js resolves.
const PAGE_DIR = [path.join(import.meta.dirname, "page"), path.join(import.meta.dirname, "console", "page")].find((dir) => existsSync(dir)) ??
  path.join(import.meta.dirname, "page")

export class AssetError extends Data.TaggedError("AssetError")<{ readonly message: string }> {}

export interface Asset {
  readonly contentType: string
  readonly body: string
}

const readPageFile = (name: string, contentType: string) =>
  Effect.tryPromise({
    try: () => fs.readFile(path.join(PAGE_DIR, name), "utf8"),
    catch: (e) => new AssetError({ message: `cannot read the console's ${name}: ${String(e)}` })
  }).pipe(Effect.map((body): Asset => ({ contentType, body })))

/**
 * The client bundle: ES2022 for current browsers, unminified so that "view source" stays readable. esbuild
 * heads each module with a comment naming its path relative to absWorkingDir; from the page's own directory
 * that is the bare file name (`// api.ts`), so the bundle never shows where the server's sources live.
 */
const bundleClient = Effect.tryPromise({
  try: async () => {
    const { build } = await import("esbuild")
    const result = await build({
      entryPoints: [path.join(PAGE_DIR, "main.ts")],
      absWorkingDir: PAGE_DIR,
      bundle: true,
      write: false,
      format: "esm",
      platform: "browser",
      target: "es2022",
      charset: "utf8",
      legalComments: "none",
      logLevel: "silent"
    })
    return result.outputFiles[0].text
  },
  catch: (e) => new AssetError({ message: `cannot bundle the console's client: ${e instanceof Error ? e.message : String(e)}` })
}).pipe(Effect.map((body): Asset => ({ contentType: "text/javascript; charset=utf-8", body })))

/** Each asset by its URL path, each loaded once (on first use) and then served from memory. */
export const makeAssets = Effect.gen(function* () {
  return new Map<string, Effect.Effect<Asset, AssetError>>([
    ["/", yield* Effect.cached(readPageFile("index.html", "text/html; charset=utf-8"))],
    ["/console/console.css", yield* Effect.cached(readPageFile("console.css", "text/css; charset=utf-8"))],
    ["/console/console.js", yield* Effect.cached(bundleClient)]
  ])
})

/**
 * Same-origin only: scripts, styles and connections from this server alone, no framing (clickjacking), and
 * no Referer, since the page may have been opened with `?token=`.
 */
export const PAGE_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache"
} as const
