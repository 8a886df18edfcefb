/**
 * `POST /_wo/backup`, the endpoint `wo backup` calls (see backup/control.ts): it answers only a client on this
 * machine that sends the token of the control file, and takes a backup into the directory the body names.
 */
import { Effect } from "effect"
import { randomBytes, timingSafeEqual } from "node:crypto"
import * as path from "node:path"
import { CONTROL_FILE, publishControl, TOKEN_HEADER } from "../../backup/control.ts"
import { copyStore } from "../../backup/copy-store.ts"
import { checkBackupDestination } from "../../backup/destination.ts"
import type { StoreFilesShape } from "../../log/store-files.ts"
import { isLoopback } from "../edge/auth.ts"
import { json, type EdgeRequest, type EdgeResponse } from "../edge/edge-types.ts"

const plainAddress = (address: string) => address.replace(/^::ffff:/i, "")

const sameToken = (sent: string | Array<string> | undefined, token: string) =>
  typeof sent === "string" && sent.length === token.length && timingSafeEqual(Buffer.from(sent), Buffer.from(token))

/**
 * The backup endpoint of the server whose store keeps `files`, and `publish`, which writes the control file once the
 * server listens (removed with the scope). `host`: the address the server listens on (a client on it is local).
 */
export const makeBackupControl = (files: StoreFilesShape, host: string) =>
  Effect.gen(function* () {
    const token = randomBytes(32).toString("hex")
    let running = false

    const backup = (request: EdgeRequest): Effect.Effect<EdgeResponse> =>
      Effect.gen(function* () {
        const from = plainAddress(request.remoteAddress)
        if (!isLoopback(from) && from !== plainAddress(host)) return json(403, { error: "the backup endpoint answers only on this machine" })
        if (!sameToken(request.headers[TOKEN_HEADER], token)) return json(403, { error: `a valid ${TOKEN_HEADER} is required (from ${CONTROL_FILE})` })
        if (request.method !== "POST") return json(405, { error: "POST only" }, { allow: "POST" })
        let sent: unknown
        try {
          sent = (JSON.parse(request.body.toString("utf8")) as { dest?: unknown }).dest
        } catch {
          sent = undefined
        }
        if (typeof sent !== "string" || !path.isAbsolute(sent)) return json(400, { error: "the body must be {\"dest\": <an absolute path>}" })
        const dest = path.resolve(sent) // the path checked is the path written (backup/destination.ts)
        const problem = checkBackupDestination(files.dir, dest)
        if (problem !== undefined) return json(409, { error: problem })
        if (running) return json(409, { error: "a backup of this data dir is already running" })
        const hold = files.whileNoWrites
        if (hold === undefined) return json(500, { error: "this store cannot hold its writes for a backup" })
        running = true
        // Not cut short by a client that goes away: a backup is finished or removed, never left half-built.
        const taken = yield* copyStore(files.dir, dest, hold).pipe(
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

    const publish = (url: string) => publishControl(files.dir, url, token)

    return { backup, publish }
  })
