/**
 * Where a backup (or a restore) may go: a new or empty directory, and, for a backup, outside the data dir it copies.
 * The CLI and the server's endpoint check with these same functions.
 *
 * A destination inside the data dir is caught through symlinks too: the data dir and the destination are compared
 * as real paths. The destination need not exist yet, so the real path of its nearest existing ancestor is taken
 * and the rest of the path appended, which is where the kernel puts it when it is created. The destination is
 * first made absolute and normalised (`..` removed by name), and the caller writes to that normalised path, so the
 * path checked is the path written.
 */
import * as fs from "node:fs"
import * as path from "node:path"

/** Why `dest` cannot receive a backup (or a restore), or undefined: it must be absent, or an empty directory. */
export const checkDestination = (dest: string): string | undefined => {
  let stat: fs.Stats
  try {
    stat = fs.statSync(dest)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") {
      return fs.existsSync(path.dirname(dest)) ? undefined : `the parent of ${dest} does not exist`
    }
    return `cannot read ${dest}: ${(e as Error).message}`
  }
  if (!stat.isDirectory()) return `${dest} is a file, not a directory`
  const files = fs.readdirSync(dest)
  return files.length === 0 ? undefined : `${dest} is not empty (${files.slice(0, 5).join(", ")}${files.length > 5 ? ", ..." : ""}): it must be new or empty`
}

/** The real path `p` has, or will have once created: its nearest existing ancestor's real path, then the rest. */
export const realPathOf = (p: string): string => {
  const absolute = path.resolve(p)
  const missing: Array<string> = []
  for (let at = absolute; ; at = path.dirname(at)) {
    try {
      return path.join(fs.realpathSync(at), ...missing)
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      // Absent (or a dangling symlink): its parent decides; the root always exists.
      if ((code !== "ENOENT" && code !== "ENOTDIR") || at === path.dirname(at)) throw e
      missing.unshift(path.basename(at))
    }
  }
}

const isWithin = (inner: string, outer: string) => inner === outer || inner.startsWith(outer.endsWith(path.sep) ? outer : `${outer}${path.sep}`)

/**
 * Why a backup of `dataDir` cannot go to `dest`, or undefined: `dest` is, or would be, the data dir or inside it
 * once symlinks are followed. (The backup's temporary copy is built beside `dest`, so `dest`'s parent being the
 * data dir is caught too.)
 */
export const checkOutsideDataDir = (dataDir: string, dest: string): string | undefined => {
  let dir: string
  let target: string
  try {
    dir = fs.realpathSync(dataDir)
    target = realPathOf(dest)
  } catch (e) {
    return `cannot resolve the real path of ${dest} or of the data dir ${dataDir}: ${(e as Error).message}`
  }
  if (!isWithin(target, dir)) return undefined
  const through = target === path.resolve(dest) && dir === path.resolve(dataDir) ? "" : ` (${dest} is ${target} once symlinks are followed, the data dir ${dir})`
  return `the backup cannot go inside the data dir ${dataDir}${through}`
}

/** Why a backup of `dataDir` cannot go to `dest` (absolute and normalised), or undefined: the one check of the CLI and the endpoint. */
export const checkBackupDestination = (dataDir: string, dest: string): string | undefined =>
  checkOutsideDataDir(dataDir, dest) ?? checkDestination(dest)
