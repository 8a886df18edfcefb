/**
 * The write-ahead logs as they were before the server's last open, kept as evidence. LevelDB's open replays each
 * `NNNNNN.log` into a table and deletes it; if the open then turns out to have lost acknowledged writes (a log
 * truncated or replaced), that log is the evidence. So before each open the server hard-links the logs into
 * `WO-WAL-BEFORE-OPEN/` (no copy: a link costs a directory entry), replacing the links of the open before. A refusal
 * renames that folder to a `wo-evidence-*` name, which nothing deletes.
 */
import * as fs from "node:fs"
import * as path from "node:path"

export const HELD_WRITE_AHEAD_LOGS = "WO-WAL-BEFORE-OPEN"
const HELD = HELD_WRITE_AHEAD_LOGS

/** Links the dir's write-ahead logs into the held folder (best effort: evidence must never stop an open). */
export const holdWriteAheadLogs = (dir: string) => {
  try {
    const held = path.join(dir, HELD)
    fs.rmSync(held, { recursive: true, force: true })
    const logs = fs.readdirSync(dir).filter((f) => /^\d+\.log$/.test(f))
    fs.mkdirSync(held) // even empty: it then shows there was no log to replay
    for (const name of logs) fs.linkSync(path.join(dir, name), path.join(held, name))
  } catch {
    // No links (a file system without hard links, a dir not yet made): nothing held.
  }
}

/** Renames the held logs to `name` and answers its path (undefined when none were held). */
export const keptWriteAheadLogs = (dir: string, name: string): string | undefined => {
  const held = path.join(dir, HELD)
  if (!fs.existsSync(held)) return undefined
  const kept = path.join(dir, name)
  fs.renameSync(held, kept)
  return kept
}
