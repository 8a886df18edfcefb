/**
 * Every file of a directory and its folders, as `path size sha256`, sorted: two listings are equal exactly when no
 * file was added, removed or changed (what the tools that only check must leave as it was).
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"

export const filesOf = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name)).flatMap((entry) => {
    const where = path.join(dir, entry.name)
    if (entry.isDirectory()) return filesOf(where).map((line) => `${entry.name}/${line}`)
    const bytes = fs.readFileSync(where)
    return [`${entry.name} ${bytes.length} ${createHash("sha256").update(bytes).digest("hex")}`]
  })

/** The numbers of LevelDB's write-ahead logs (`NNNNNN.log`) in a data dir, in order: a reopen starts a higher one. */
export const writeAheadLogs = (dir: string): Array<number> =>
  fs.readdirSync(dir).filter((f) => f.endsWith(".log")).map((f) => Number.parseInt(f, 10)).sort((a, b) => a - b)
