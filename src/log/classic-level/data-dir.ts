/**
 * What a data dir holds, judged from its file names before LevelDB touches it. LevelDB finds its files through
 * `CURRENT`, which names the live `MANIFEST-NNNNNN`; opened with `createIfMissing` in a dir whose `CURRENT` is
 * gone, it starts a fresh database there and deletes every table and log it does not know: all the data. So a
 * database is created only in an absent or empty dir, and a dir that holds files but no usable `CURRENT` is
 * refused, with every file kept and the way back named (`wo repair-current`, repair-current.ts).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { HELD_WRITE_AHEAD_LOGS } from "./wal-hold.ts"
import { FENCE_MEMORY_FILE, FENCE_MEMORY_TEMP } from "../postgres/fence-memory.ts"
import { StoreFailed } from "../../domain/errors.ts"

export type DataDirState =
  | { readonly _tag: "Absent" }
  | { readonly _tag: "NotADirectory" }
  /** No files, or only LevelDB's lock and info log, which hold no data. */
  | { readonly _tag: "Empty" }
  /** `CURRENT` names a MANIFEST that is there. */
  | { readonly _tag: "Store"; readonly manifest: string }
  /** Files, but no usable `CURRENT`: `problem` says why. */
  | { readonly _tag: "Headless"; readonly problem: string; readonly files: ReadonlyArray<string> }

/** Files beside the data that hold none of it: LevelDB's, and a PostgreSQL node's memory of its store. */
const NO_DATA = new Set(["LOCK", "LOG", "LOG.old", FENCE_MEMORY_FILE, FENCE_MEMORY_TEMP])
const MANIFEST = /^MANIFEST-(\d+)$/

/** The server's held write-ahead logs (wal-hold.ts), made before an open: empty, it says only that there were none. */
const isEmptyHeldFolder = (dir: string, name: string) => {
  if (name !== HELD_WRITE_AHEAD_LOGS) return false
  try {
    return fs.readdirSync(path.join(dir, name)).length === 0
  } catch {
    return false
  }
}

export const inspectDataDir = (dir: string): DataDirState => {
  let stat: fs.Stats
  try {
    stat = fs.statSync(dir)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return { _tag: "Absent" }
    throw e
  }
  if (!stat.isDirectory()) return { _tag: "NotADirectory" }
  const files = fs.readdirSync(dir).sort()
  if (files.every((f) => NO_DATA.has(f) || isEmptyHeldFolder(dir, f))) return { _tag: "Empty" }
  const headless = (problem: string): DataDirState => ({ _tag: "Headless", problem, files })
  if (!files.includes("CURRENT")) return headless("it has no CURRENT file")
  const current = fs.readFileSync(path.join(dir, "CURRENT"), "utf8")
  // LevelDB's own form: the MANIFEST's name and a newline.
  const manifest = current.slice(0, -1)
  if (!current.endsWith("\n") || !MANIFEST.test(manifest)) return headless(`its CURRENT file is damaged (it holds ${JSON.stringify(current.slice(0, 40))})`)
  if (!files.includes(manifest)) return headless(`its CURRENT file names ${manifest}, which is missing`)
  return { _tag: "Store", manifest }
}

/** The dir's MANIFEST files, newest (highest number) first. */
export const manifestsNewestFirst = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(dir).filter((f) => MANIFEST.test(f)).sort((a, b) => Number(MANIFEST.exec(b)![1]) - Number(MANIFEST.exec(a)![1]))

const listed = (files: ReadonlyArray<string>) =>
  `${files.length} file${files.length === 1 ? "" : "s"}: ${files.slice(0, 8).join(", ")}${files.length > 8 ? ", ..." : ""}`

export const notADirectory = (dir: string) => new StoreFailed({ reason: `the data dir ${dir} is a file, not a directory` })

/** The refusal of a dir that holds files but no usable `CURRENT`, with the way back. */
export const headless = (dir: string, state: Extract<DataDirState, { _tag: "Headless" }>) =>
  new StoreFailed({
    reason: `the data dir ${dir} is not empty (${listed(state.files)}) but ${state.problem}, so LevelDB cannot find its data; ` +
      `nothing was changed. To recover: \`wo repair-current ${dir}\` shows how CURRENT would be rebuilt from the newest MANIFEST ` +
      `(add --write to do it), then run \`wo verify ${dir}\`; or restore the dir from a backup (\`wo restore <backup> <new-data-dir>\`).`
  })

/**
 * Readies the dir of a store about to be opened for writing: creates an absent one, refuses a file or a dir
 * without a usable `CURRENT`. Returns whether LevelDB may create a database there.
 */
export const prepareDataDir = (dir: string): boolean => {
  const state = inspectDataDir(dir)
  switch (state._tag) {
    case "Absent":
      fs.mkdirSync(dir, { recursive: true })
      return true
    case "Empty":
      return true
    case "Store":
      return false
    case "NotADirectory":
      throw notADirectory(dir)
    case "Headless":
      throw headless(dir, state)
  }
}
