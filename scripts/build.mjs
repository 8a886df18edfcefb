// `npm run build` (and `prepare`, so `npm ci` and `npm pack` run it): the package's JavaScript and .d.ts files in
// dist/, compiled by tsc from src/ (tsconfig.build.json), plus the console page's sources, which the server
// bundles with esbuild on the first request for the page (src/console/assets.ts reads them beside itself).
// The emitted modules then import effect's modules one by one instead of its index (src/app-loading/effect-imports.ts).
// In a checkout, `writeonce` resolves to src/ instead, under the `writeonce-source` export condition.
// The build goes to a fresh folder that then replaces dist/ at once, so dist/ is never half written.
// Type errors fail `npm pack` and `npm publish`: no tarball is built from code that does not type-check. Elsewhere
// (`npm ci` in a checkout mid-edit, say) they are reported and the emitted build is kept; `npm test` type-checks.
// A dist/ built from the same inputs is kept as it is (.dist-stamp records what it was built from): `npm pack`
// right after `npm ci` reuses the build that `prepare` made.
import { spawnSync } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { loadEffectModulesAlone } from "../bin/built-sources.mjs"

const root = path.resolve(import.meta.dirname, "..")
const dist = path.join(root, "dist")
const next = path.join(root, `.dist-${process.pid}`)
const old = path.join(root, `.dist-old-${process.pid}`)
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
const stampFile = path.join(root, ".dist-stamp")

/** A digest of everything the build reads: the sources, the compiler settings, the installed versions, this script. */
const inputsDigest = () => {
  const hash = createHash("sha256")
  const add = (file) => hash.update(`${path.relative(root, file)}\0`).update(fs.readFileSync(file)).update("\0")
  for (const file of fs.readdirSync(path.join(root, "src"), { recursive: true }).sort()) {
    const full = path.join(root, "src", file)
    if (fs.statSync(full).isFile()) add(full)
  }
  for (const file of ["tsconfig.json", "tsconfig.build.json", "package-lock.json", "scripts/build.mjs", "bin/built-sources.mjs"]) add(path.join(root, file))
  return hash.digest("hex")
}

const packing = ["pack", "publish"].includes(process.env.npm_command ?? "")
const digest = inputsDigest()
const stamp = fs.existsSync(stampFile) && fs.existsSync(path.join(dist, "index.js")) ? fs.readFileSync(stampFile, "utf8").split(" ") : []

try {
  if (stamp[0] === digest && (stamp[1] === "0" || (stamp[1] === "2" && !packing))) {
    console.error("build: dist/ is already built from these sources")
    process.exit(0)
  }
  fs.rmSync(stampFile, { force: true })
  const { status } = spawnSync(process.execPath, [tsc, "-p", path.join(root, "tsconfig.build.json"), "--outDir", next], { stdio: "inherit" })
  // tsc: 0 clean, 2 type errors but everything emitted, anything else nothing (usable) emitted.
  if (status !== 0 && (status !== 2 || packing)) throw new Error(`tsc failed (exit ${status})`)
  if (status === 2) console.error("build: emitted despite the type errors above (npm run typecheck fails on them)")
  await loadEffectModulesAlone(next, ".js")
  fs.cpSync(path.join(root, "src/console/page"), path.join(next, "console/page"), { recursive: true })
  fs.chmodSync(path.join(next, "wo.js"), 0o755)
  if (fs.existsSync(dist)) fs.renameSync(dist, old)
  fs.renameSync(next, dist)
  fs.writeFileSync(stampFile, `${digest} ${status}`)
} catch (e) {
  console.error(`build failed: ${e instanceof Error ? e.message.split("\n")[0] : e}`)
  process.exitCode = 1
} finally {
  fs.rmSync(next, { recursive: true, force: true })
  fs.rmSync(old, { recursive: true, force: true })
}
