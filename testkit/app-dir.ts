/** App folders in temp dirs whose app.ts imports "writeonce" and "effect" from this checkout, for `wo run` and loadApp. */
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
