/**
 * The temporary copies a killed backup (or restore) leaves behind. A copy is built as `<dest>.partial-<pid>-<ms>`
 * beside its destination and renamed into place once whole; a failure removes it, but a process killed mid-copy
 * (kill -9, a power cut) cannot, and the dir would stay forever. So each backup first removes the ones it
 * recognises in its destination's parent:
 * - the name has the form above, with a time before this backup started (never the copy being built now);
 * - the process that built it is gone, or is this one and is not building it now (a backup run in a fresh
 *   container often gets the pid its killed predecessor had);
 * - it is a directory that holds only the files a copy holds (LevelDB's and writeonce's own), no subdirectory.
 * Anything else is left as it is.
 */
import * as fs from "node:fs"
import * as path from "node:path"

const PARTIAL = /^.+\.partial-(\d+)-(\d+)$/
/** What a copy holds: LevelDB's files (with those its open writes), and writeonce's `WO-*` files beside them. */
const COPY_FILE = /^(CURRENT|LOCK|LOG|LOG\.old|MANIFEST-\d+|\d+\.(ldb|sst|log)|WO-[A-Z-]+(\.tmp)?)$/

/** The copies this process is building now. */
const building = new Set<string>()

/** The temporary name a copy into `dest` is built under, by this process, from now until `done` is called. */
export const startPartial = (dest: string, now: number) => {
  const name = `${dest}.partial-${process.pid}-${now}`
  building.add(name)
  return { name, done: () => building.delete(name) }
}

/** Whether a process with this pid exists (one of another user's counts). */
export const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

const isCopy = (dir: string) => {
  try {
    if (!fs.lstatSync(dir).isDirectory()) return false
    return fs.readdirSync(dir, { withFileTypes: true }).every((entry) => entry.isFile() && COPY_FILE.test(entry.name))
  } catch {
    return false
  }
}

/**
 * Removes the leftover copies beside `dest` that were started before `startedAt`, by a process that is gone or by
 * this one; returns the paths removed. A leftover that cannot be removed is skipped: the backup does not depend on it.
 */
export const removeLeftoverCopies = (dest: string, startedAt: number): ReadonlyArray<string> => {
  const parent = path.dirname(dest)
  let names: Array<string>
  try {
    names = fs.readdirSync(parent)
  } catch {
    return []
  }
  const removed: Array<string> = []
  for (const name of names) {
    const match = PARTIAL.exec(name)
    if (match === null) continue
    const pid = Number(match[1])
    const leftover = path.join(parent, name)
    if (!(Number(match[2]) < startedAt) || (pid === process.pid ? building.has(leftover) : isAlive(pid))) continue
    if (!isCopy(leftover)) continue
    try {
      fs.rmSync(leftover, { recursive: true, force: true })
      removed.push(leftover)
    } catch {
      // kept: the next backup tries again
    }
  }
  return removed
}
