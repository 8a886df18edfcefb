/** App folders in temp dirs whose app.ts imports "writeonce" and "effect" from this checkout, for `wo run` and loadApp. */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { ROOT } from "./spawn.ts"
import { tempDir } from "./server.ts"

export const writeAppDir = (source: string): string => {
  const dir = tempDir("wo-app-")
  fs.mkdirSync(path.join(dir, "node_modules"))
  fs.symlinkSync(ROOT, path.join(dir, "node_modules", "writeonce"), "dir")
  fs.symlinkSync(path.join(ROOT, "node_modules", "effect"), path.join(dir, "node_modules", "effect"), "dir")
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify({ type: "module" }))
  fs.writeFileSync(path.join(dir, "app.ts"), source)
  return dir
}

/**
 * Links `writeonce` (this checkout), `effect` and the Node types into `dir`'s node_modules, as `npm install` gives an
 * app, and makes sure dist/ is built from the current sources: like an installed app, the folder type-checks
 * against the package's built types (dist/*.d.ts), which checks in a quarter of the time of src/ itself.
 */
export const installLikeAnApp = (dir: string): void => {
  fs.mkdirSync(path.join(dir, "node_modules"), { recursive: true })
  fs.symlinkSync(ROOT, path.join(dir, "node_modules/writeonce"), "dir")
  fs.symlinkSync(path.join(ROOT, "node_modules/effect"), path.join(dir, "node_modules/effect"), "dir")
  fs.symlinkSync(path.join(ROOT, "node_modules/@types"), path.join(dir, "node_modules/@types"), "dir")
  builtPackage()
}

/**
 * Makes sure dist/ is built from the current sources: kept as it is when it is (npm ci built it), rebuilt after an
 * edit. What `writeonce` resolves to without the writeonce-source condition.
 */
export const builtPackage = (): void => {
  execFileSync(process.execPath, [path.join(ROOT, "scripts/build.mjs")], { cwd: ROOT, stdio: "ignore" })
}
