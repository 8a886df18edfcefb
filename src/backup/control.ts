/**
 * How `wo backup` reaches the server that holds a data dir. LevelDB locks the dir, so no other process can open
 * it; only the server can read a consistent snapshot of it. At startup the server writes `WO-CONTROL` into the
 * data dir (its pid, an address on this machine and a random token; readable by the owner only) and removes it at
 * shutdown. `POST /_wo/backup` takes a backup into the directory the body names, and answers what it holds.
 *
 * Who may ask: whoever can read the data dir (the token is in it) from this machine (a loopback or the server's
 * own address). Anyone who can read the data dir can already copy the data; the token only keeps other local
 * users and the network out.
 */
import { Effect } from "effect"
import { randomBytes, timingSafeEqual } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import { isLoopback } from "../http/auth.ts"
import { json, type EdgeRequest, type EdgeResponse } from "../http/edge-types.ts"
import type { LevelDbShape } from "../log/level-db.ts"
import { checkDestination, copyStore } from "./copy-store.ts"

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

const plainAddress = (address: string) => address.replace(/^::ffff:/i, "")

const sameToken = (sent: string | Array<string> | undefined, token: string) =>
  typeof sent === "string" && sent.length === token.length && timingSafeEqual(Buffer.from(sent), Buffer.from(token))

/**
 * The backup endpoint of the server holding `db`, and `publish`, which writes the control file once the server
 * listens (removed with the scope). `host`: the address the server listens on (a client on it is local).
 */
export const makeBackupControl = (db: LevelDbShape, host: string) =>
  Effect.gen(function* () {
    const token = randomBytes(32).toString("hex")
    let running = false

    const backup = (request: EdgeRequest): Effect.Effect<EdgeResponse> =>
      Effect.gen(function* () {
        const from = plainAddress(request.remoteAddress)
        if (!isLoopback(from) && from !== plainAddress(host)) return json(403, { error: "the backup endpoint answers only on this machine" })
        if (!sameToken(request.headers[TOKEN_HEADER], token)) return json(403, { error: `a valid ${TOKEN_HEADER} is required (from ${CONTROL_FILE})` })
        if (request.method !== "POST") return json(405, { error: "POST only" }, { allow: "POST" })
        let dest: unknown
        try {
          dest = (JSON.parse(request.body.toString("utf8")) as { dest?: unknown }).dest
        } catch {
          dest = undefined
        }
        if (typeof dest !== "string" || !path.isAbsolute(dest)) return json(400, { error: "the body must be {\"dest\": <an absolute path>}" })
        const problem = checkDestination(dest)
        if (problem !== undefined) return json(409, { error: problem })
        if (running) return json(409, { error: "a backup of this data dir is already running" })
        running = true
        const hold = db.whileNoWrites
        if (hold === undefined) return json(500, { error: "this store cannot hold its writes for a backup" })
        // Not cut short by a client that goes away: a backup is finished or removed, never left half-built.
        const taken = yield* copyStore(db.dir, dest, hold).pipe(
          Effect.uninterruptible,
          Effect.ensuring(Effect.sync(() => {
            running = false
          })),
          Effect.either
        )
        if (taken._tag === "Left") {
          yield* Effect.logError(`backup to ${dest} failed: ${taken.left.reason}`)
          return json(500, { error: taken.left.reason })
        }
        yield* Effect.logInfo(`backup to ${dest}: seq ${taken.right.seq} in ${taken.right.millis} ms (writes held ${taken.right.heldMillis} ms)`)
        return json(200, taken.right)
      })

    const publish = (url: string) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          const file = path.join(db.dir, CONTROL_FILE)
          const record: ControlRecord = { pid: process.pid, url: reachableUrl(url), token }
          fs.writeFileSync(`${file}.tmp`, JSON.stringify(record), { mode: 0o600 })
          fs.renameSync(`${file}.tmp`, file)
        }),
        () => Effect.sync(() => fs.rmSync(path.join(db.dir, CONTROL_FILE), { force: true }))
      )

    return { backup, publish }
  })
