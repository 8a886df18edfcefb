/**
 * `wo backup <data-dir> <dest>` and `wo restore <backup> <data-dir>`.
 *
 * A running server holds LevelDB's lock on its data dir: it is asked for the backup through the endpoint its
 * control file names (control.ts), and copies the files of one state while it goes on writing (copy-store.ts). A
 * dir no server holds is copied the same way without a hold; it is only read, never written.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as path from "node:path"
import { type StoreError, StoreFailed } from "../domain/errors.ts"
import { readAckedRecord } from "../log/classic-level/acked-head.ts"
import { openReadOnly, requireStore } from "../log/classic-level/offline/read-only-db.ts"
import { lockHolder } from "../log/classic-level/offline/snapshot.ts"
import { verifyStore } from "../log/classic-level/offline/verify.ts"
import { BACKUP_PATH, CONTROL_FILE, readControlRecord, TOKEN_HEADER, type ControlRecord } from "./control.ts"
import { copyStore, readBackupInfo, type BackupInfo } from "./copy-store.ts"
import { fsyncPath } from "../support/fsync-path.ts"
import { checkBackupDestination, checkDestination } from "./destination.ts"
import { isAlive, removeLeftoverCopies, startPartial } from "./leftovers.ts"

export interface TakenBackup extends BackupInfo {
  /** The running server's pid that took it, or undefined for a copy of a stopped dir. */
  readonly server?: number
}

const unavailable = (reason: string) => new StoreFailed({ reason })

/** POSTs to the server's backup endpoint; no timeout (a large store takes a while), the answer says how it went. */
const askServer = (control: ControlRecord, dest: string) =>
  Effect.async<BackupInfo, StoreError | "unreachable">((resume) => {
    const body = JSON.stringify({ dest })
    const req = http.request(new URL(BACKUP_PATH, control.url), {
      method: "POST",
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), [TOKEN_HEADER]: control.token }
    }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let answer: { error?: string } & Partial<BackupInfo> = {}
        try {
          answer = JSON.parse(text)
        } catch {
          answer = { error: text.slice(0, 200) }
        }
        if (res.statusCode === 200) resume(Effect.succeed(answer as BackupInfo))
        else resume(Effect.fail(unavailable(`the server (pid ${control.pid}) refused the backup: ${answer.error ?? `HTTP ${res.statusCode}`}`)))
      })
      res.on("error", (e) => resume(Effect.fail(unavailable(`the server's answer broke off: ${e.message}`))))
    })
    req.on("error", (e) => {
      const code = (e as NodeJS.ErrnoException).code
      resume(Effect.fail(code === "ECONNREFUSED" ? "unreachable" : unavailable(`cannot reach the server at ${control.url}: ${e.message}`)))
    })
    req.end(body)
  })

/** A copy of a dir no server holds: nothing writes it, so its files are pinned without a hold. */
const copyStopped = (dir: string, dest: string) =>
  Effect.gen(function* () {
    const info = yield* copyStore(dir, dest, (f) => Effect.tryPromise({ try: f, catch: (e) => unavailable(`cannot read ${dir}: ${String(e)}`) }))
    const holder = lockHolder(dir)
    // A store that lost acknowledged writes is not backed up as if whole: the copy would hide the loss.
    const found = readAckedRecord(dir)
    const lost = found._tag === "Found" && found.record.acked > info.seq
    if (holder !== undefined || lost) fs.rmSync(dest, { recursive: true, force: true })
    if (holder !== undefined) return yield* unavailable(`a server (pid ${holder}) started on ${dir} during the backup; nothing was backed up: try again`)
    if (lost) {
      return yield* unavailable(
        `${dir} ends at seq ${info.seq} but seqs up to ${(found as { record: { acked: number } }).record.acked} were acknowledged: ` +
          `it lost acknowledged writes. Nothing was backed up; run \`wo verify ${dir}\``
      )
    }
    return info
  })

export const takeBackup = (dataDir: string, destination: string): Effect.Effect<TakenBackup, StoreError> =>
  Effect.gen(function* () {
    const dir = path.resolve(dataDir)
    const dest = path.resolve(destination)
    yield* requireStore(dir)
    const problem = checkBackupDestination(dir, dest)
    if (problem !== undefined) return yield* unavailable(`cannot back up to ${dest}: ${problem}`)
    const control = readControlRecord(dir)
    if (control !== undefined && isAlive(control.pid)) {
      const answer = yield* Effect.either(askServer(control, dest))
      if (answer._tag === "Right") return { ...answer.right, server: control.pid }
      // A stale control file whose pid was reused by another process: no server listens there.
      if (answer.left !== "unreachable" || lockHolder(dir) !== undefined) {
        return yield* answer.left === "unreachable" ? unavailable(`the server (pid ${control.pid}) does not answer at ${control.url}`) : answer.left
      }
    }
    const holder = lockHolder(dir)
    if (holder !== undefined) {
      return yield* unavailable(
        `the data dir ${dir} is in use by pid ${holder}, which has not published its backup endpoint (${CONTROL_FILE}): ` +
          "is it still starting, or a writeonce without `wo backup`? Try again once it serves, or stop it"
      )
    }
    return yield* copyStopped(dir, dest)
  })

/** fsyncs every file and directory under `dir`: the restored copy survives a power cut. */
const syncTree = (dir: string) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name)
    if (entry.isDirectory()) syncTree(p)
    else fsyncPath(p)
  }
  fsyncPath(dir)
}

/**
 * Restores a backup into a new data dir: verifies it first, refuses a data dir that holds anything, and copies it
 * whole under a temporary name before renaming it into place. The backup itself is left as it is.
 */
export const restoreBackup = (backupDir: string, dataDir: string) =>
  Effect.gen(function* () {
    const from = path.resolve(backupDir)
    const to = path.resolve(dataDir)
    yield* requireStore(from)
    const info = readBackupInfo(from)
    if (info === undefined) return yield* unavailable(`${from} is not a backup taken by \`wo backup\` (it has no WO-BACKUP file)`)
    const problem = checkDestination(to)
    if (problem !== undefined) return yield* unavailable(`cannot restore into ${to}: ${problem}`)
    const report = yield* Effect.scoped(Effect.flatMap(openReadOnly(from), verifyStore))
    if (report.problems.length > 0) {
      return yield* unavailable(`the backup ${from} does not verify; nothing was restored:\n  - ${report.problems.join("\n  - ")}`)
    }
    const started = Date.now()
    const removed = removeLeftoverCopies(to, started)
    if (removed.length > 0) yield* Effect.logInfo(`removed ${removed.length} leftover temporary cop${removed.length === 1 ? "y" : "ies"} of an interrupted backup or restore: ${removed.join(", ")}`)
    const partial = startPartial(to, started)
    yield* Effect.try({
      try: () => {
        const building = partial.name
        try {
          fs.cpSync(from, building, { recursive: true, filter: (src) => !/^(LOCK|LOG|LOG\.old)$/.test(path.basename(src)) || src === from })
          syncTree(building)
          if (fs.existsSync(to)) fs.rmdirSync(to)
          fs.renameSync(building, to)
        } catch (e) {
          fs.rmSync(building, { recursive: true, force: true })
          throw e
        }
      },
      catch: (e) => unavailable(`cannot restore into ${to}: ${e instanceof Error ? e.message : String(e)}`)
    }).pipe(Effect.ensuring(Effect.sync(partial.done)))
    return { info, events: report.events }
  })
