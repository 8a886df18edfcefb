/**
 * A backup: the LevelDB files of one state of the store, copied into a new directory.
 *
 * Why not a copy of the live files as they are: LevelDB appends to its write-ahead log and MANIFEST, and writes
 * and deletes tables, while the server runs, so files copied one after another belong to different moments. Here
 * the writes are held for a moment (LevelDbShape.whileNoWrites: the batch in flight finishes, the next waits)
 * while the files of that state are opened (pin-files.ts); then the writes go on and the pinned files are copied
 * up to their pinned sizes. The hold lasts one listing and a few opens, not the copy. Every append is one atomic,
 * synced batch (events, rows, counters, checkpoint and views together), so the state holds whole batches only.
 *
 * (Reading a LevelDB snapshot through an iterator into a fresh database is consistent too, and never holds the
 * writer, but rewriting every record through LevelDB takes 3 to 6 times as long as `wo verify`.)
 *
 * The copy is built under a temporary name beside `dest`, opened once (LevelDB replays its write-ahead log;
 * an open that drops anything fails the backup), and renamed into place once whole and durable: a `dest` that
 * exists is always a finished backup; the temporary copies a killed backup leaves are removed by the next one
 * (leftovers.ts). Beside LevelDB's files it holds:
 * - `WO-ACKED` (acked-head.ts) claiming exactly the seq it holds: a server started on it finds every acknowledged
 *   seq there and reports no lost writes;
 * - `WO-ACCEPTED-LOSS`, if the source has one (losses accepted earlier, which `wo verify` reads as accepted);
 * - `WO-BACKUP`: the seq it holds, when and from where it was taken.
 */
import { Effect, Exit } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type StoreError, StoreFailed, withReason } from "../domain/errors.ts"
import { ACCEPTED_LOSS_FILE } from "../log/classic-level/accepted-loss.ts"
import { openAckedHead } from "../log/classic-level/acked-head.ts"
import { openDb, storeError } from "../log/classic-level/level-db.ts"
import * as K from "../log/classic-level/log-keys.ts"
import { unseal } from "../log/record.ts"
import { fsyncPath } from "../support/fsync-path.ts"
import { checkBackupDestination } from "./destination.ts"
import { removeLeftoverCopies, startPartial } from "./leftovers.ts"
import { copyPinned, pinFiles, type PinnedFile } from "./pin-files.ts"

export const BACKUP_FILE = "WO-BACKUP"

export interface BackupInfo {
  /** The highest event seq the backup holds: every event up to it, none after it. */
  readonly seq: number
  /** Bytes of LevelDB files copied. */
  readonly bytes: number
  /** ISO time the state was pinned. */
  readonly takenAt: string
  /** The data dir it was taken from. */
  readonly source: string
  /** How long the writes were held, and the whole backup. */
  readonly heldMillis: number
  readonly millis: number
}

/** The copy's head: its last event's seq, and its id counters. */
const readHead = (dir: string) =>
  Effect.scoped(Effect.gen(function* () {
    const h = yield* openDb(dir, { checkOnly: true })
    return yield* h.read("cannot read the copy", async (db) => {
      let seq = 0
      for await (const key of db.keys({ gte: K.EVENTS_START, lt: K.EVENTS_END, reverse: true, limit: 1 })) seq = K.seqOfEventKey(key)
      const counters = new Map<string, number>()
      for await (const [key, value] of db.iterator({ gte: K.COUNTER_PREFIX, lt: `${K.COUNTER_PREFIX}~` })) {
        counters.set(key.slice(K.COUNTER_PREFIX.length), Number(unseal(key, value)))
      }
      return { seq, counters }
    })
  }))

/**
 * Copies the store in `sourceDir` into `dest` (new or empty, outside `sourceDir`: destination.ts). `pin` opens the files of one state: the running server's holds its
 * writes meanwhile; a stopped dir's needs no hold.
 */
export const copyStore = (
  sourceDir: string,
  destination: string,
  pin: (f: () => Promise<Array<PinnedFile>>) => Effect.Effect<Array<PinnedFile>, StoreError>
): Effect.Effect<BackupInfo, StoreError> =>
  Effect.gen(function* () {
    const dest = path.resolve(destination) // the path checked is the path written (destination.ts)
    const problem = checkBackupDestination(sourceDir, dest)
    if (problem !== undefined) return yield* new StoreFailed({ reason: problem })
    const started = Date.now()
    const removed = removeLeftoverCopies(dest, started)
    if (removed.length > 0) yield* Effect.logInfo(`removed ${removed.length} leftover temporary cop${removed.length === 1 ? "y" : "ies"} of an interrupted backup or restore: ${removed.join(", ")}`)
    const partial = startPartial(dest, started)
    const building = partial.name
    const fail = storeError(`cannot back up ${sourceDir} to ${dest}`)
    yield* Effect.try({ try: () => fs.mkdirSync(building), catch: fail }).pipe(Effect.tapError(() => Effect.sync(partial.done)))
    return yield* Effect.gen(function* () {
      // The files beside LevelDB change only when a server opens the dir: read now, they match the state.
      const accepted = path.join(sourceDir, ACCEPTED_LOSS_FILE)
      yield* Effect.try({
        try: () => fs.existsSync(accepted) && fs.copyFileSync(accepted, path.join(building, ACCEPTED_LOSS_FILE)),
        catch: fail
      })
      const takenAt = new Date().toISOString()
      const holdStart = Date.now()
      const files = yield* pin(async () => pinFiles(sourceDir))
      const heldMillis = Date.now() - holdStart
      yield* Effect.tryPromise({ try: () => copyPinned(files, building), catch: fail })
      const { seq, counters } = yield* readHead(building).pipe(
        Effect.mapError((e) => withReason(e, e.reason.replaceAll(building, `the copy of ${sourceDir}`)))
      )
      const info: BackupInfo = {
        seq,
        bytes: files.reduce((n, f) => n + f.size, 0),
        takenAt,
        source: sourceDir,
        heldMillis,
        millis: Date.now() - started
      }
      yield* Effect.tryPromise({
        try: async () => {
          // The acknowledged head of the copy is what it holds: a server started on it reports no lost writes.
          await openAckedHead(building, seq, counters, true).close()
          fs.writeFileSync(path.join(building, BACKUP_FILE), `${JSON.stringify(info)}\n`)
          fsyncPath(path.join(building, BACKUP_FILE))
          fsyncPath(building)
          if (fs.existsSync(dest)) fs.rmdirSync(dest) // empty (checked above): replaced by the finished copy
          fs.renameSync(building, dest)
          fsyncPath(path.dirname(dest))
        },
        catch: fail
      })
      return info
    }).pipe(Effect.onExit((exit) =>
      Effect.sync(() => {
        if (Exit.isFailure(exit)) fs.rmSync(building, { recursive: true, force: true })
        partial.done()
      })
    ))
  })

/** What a backup says about itself, or undefined for a dir that is not one. */
export const readBackupInfo = (dir: string): BackupInfo | undefined => {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, BACKUP_FILE), "utf8")) as BackupInfo
  } catch {
    return undefined
  }
}
