/**
 * How `wo backup` reaches the server that holds a data dir. LevelDB locks the dir, so no other process can open
 * it; only the server can read a consistent snapshot of it. At startup the server writes `WO-CONTROL` into the
 * data dir (its pid, an address on this machine and a random token; readable by the owner only) and removes it at
 * shutdown. `POST /_wo/backup` takes a backup into the directory the body names, and answers what it holds
 * (the endpoint: http/routes/backup-route.ts).
 *
 * Who may ask: whoever can read the data dir (the token is in it) from this machine (a loopback or the server's
 * own address). Anyone who can read the data dir can already copy the data; the token only keeps other local
 * users and the network out.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

export const CONTROL_FILE = "WO-CONTROL"
export const BACKUP_PATH = "/_wo/backup"
export const TOKEN_HEADER = "x-wo-control-token"

export interface ControlRecord {
  readonly pid: number
  /** Where this machine reaches the server. */
  readonly url: string
  readonly token: string
}

export const readControlRecord = (dataDir: string): ControlRecord | undefined => {
  try {
    const record = JSON.parse(fs.readFileSync(path.join(dataDir, CONTROL_FILE), "utf8")) as ControlRecord
    return typeof record.pid === "number" && typeof record.url === "string" && typeof record.token === "string" ? record : undefined
  } catch {
    return undefined
  }
}

/** A wildcard listen address is reached through loopback. */
const reachableUrl = (url: string) => url.replace("//0.0.0.0:", "//127.0.0.1:").replace("//[::]:", "//[::1]:")

/** Writes the control file of the server holding `dir`, which listens at `url`; removed with the scope. */
export const publishControl = (dir: string, url: string, token: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const file = path.join(dir, CONTROL_FILE)
      const record: ControlRecord = { pid: process.pid, url: reachableUrl(url), token }
      fs.writeFileSync(`${file}.tmp`, JSON.stringify(record), { mode: 0o600 })
      fs.renameSync(`${file}.tmp`, file)
    }),
    () => Effect.sync(() => fs.rmSync(path.join(dir, CONTROL_FILE), { force: true }))
  )
