/**
 * The tag of one version of an app folder for `wo dev`: a digest of its files (the ones the watcher watches), names
 * and contents. The server imports each version under its tag (load-app.ts), and a module, once imported, stays in
 * memory for good (ES modules cannot be unloaded): a save that changes nothing, or an undo back to a version already
 * served, finds its modules already loaded and imports nothing new.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { isAppFile } from "./app-watcher.ts"

/** A file's bytes; one removed since the folder was read (a save in progress) is empty: the next save is read anew. */
const contents = (file: string) => {
  try {
    return fs.readFileSync(file)
  } catch {
    return ""
  }
}

export const versionTag = (dir: string, dataDir: string | undefined): string => {
  const hash = createHash("sha256")
  const data = dataDir === undefined ? undefined : path.relative(dir, dataDir)
  const walk = (relative: string) => {
    const entries = fs.readdirSync(path.join(dir, relative), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))
    for (const entry of entries) {
      const file = path.join(relative, entry.name)
      if (!isAppFile(file, data)) continue
      if (entry.isDirectory()) walk(file)
      else if (entry.isFile()) hash.update(`${file}\0`).update(contents(path.join(dir, file))).update("\0")
    }
  }
  walk("")
  return hash.digest("hex").slice(0, 16)
}
