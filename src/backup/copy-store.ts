/**
 * A backup: every key of the store as one LevelDB snapshot saw it, written into a fresh classic-level directory.
 *
 * Why a snapshot read, not a file copy: LevelDB rewrites its write-ahead log, MANIFEST and tables while the server
 * writes, so files copied one after another belong to different moments. A classic-level iterator reads from an
 * implicit snapshot taken when it is created: it sees whole batches only (each append is one atomic batch: events,
 * rows, counters and checkpoint together), and none of the batches written after it. The copy is read in chunks
 * (`nextv`) on the thread pool, so the writer's batches go on between chunks; it never holds the writer.
 *
 * The copy is built under a temporary name beside `dest` and renamed into place once it is whole and durable, so a
 * `dest` that exists is always a finished backup. Beside LevelDB's files it holds:
 * - `WO-ACKED` (acked-head.ts) claiming exactly the seq it holds: a server started on it finds every acknowledged
 *   seq there and reports no lost writes;
 * - `WO-ACCEPTED-LOSS`, if the source has one (losses accepted earlier, which `wo verify` reads as accepted);
 * - `WO-BACKUP`: the seq it holds, when and from where it was taken.
 */
import { ClassicLevel } from "classic-level"
import * as fs from "node:fs"
import * as path from "node:path"
import { ACCEPTED_LOSS_FILE } from "../log/accepted-loss.ts"
import { openAckedHead } from "../log/acked-head.ts"
import type { Db } from "../log/level-db.ts"
import * as K from "../log/log-keys.ts"
import { unseal } from "../log/record.ts"

export const BACKUP_FILE = "WO-BACKUP"
/** Keys per chunk: small enough that the writer's batches interleave, large enough to read at full speed. */
const CHUNK = 1000

export interface BackupInfo {
  /** The highest event seq the backup holds: every event up to it, none after it. */
  readonly seq: number
  readonly events: number
  readonly keys: number
  /** ISO time the snapshot was taken. */
  readonly takenAt: string
  /** The data dir it was taken from. */
  readonly source: string
  readonly millis: number
}

/** Fails unless `dest` can receive a backup: absent, or an empty directory. */
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

export const fsyncPath = (p: string) => {
  const fd = fs.openSync(p, "r")
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** The id counters as the copied store holds them. */
const readCounters = async (db: Db) => {
  const counters = new Map<string, number>()
  for await (const [key, value] of db.iterator({ gte: K.COUNTER_PREFIX, lt: `${K.COUNTER_PREFIX}~` })) {
    const n = Number(unseal(key, value))
    if (Number.isSafeInteger(n)) counters.set(key.slice(K.COUNTER_PREFIX.length), n)
  }
  return counters
}

/**
 * Copies `source` (an open store: the running server's, or a read-only tool's private copy) into `dest`.
 * `sourceDir`: the data dir the store lives in, for the files beside LevelDB.
 */
export const copyStore = async (source: Db, sourceDir: string, dest: string): Promise<BackupInfo> => {
  const problem = checkDestination(dest)
  if (problem !== undefined) throw new Error(problem)
  const started = Date.now()
  const takenAt = new Date().toISOString()
  const building = `${dest}.partial-${process.pid}-${Date.now()}`
  fs.mkdirSync(building)
  let target: Db | undefined
  try {
    // Raw bytes both ways: the records are copied as they are, checksums and all, never decoded.
    const it = source.iterator({ keyEncoding: "buffer", valueEncoding: "buffer" })
    // The files beside LevelDB change only when a server opens the dir: read now, they match the snapshot.
    const accepted = path.join(sourceDir, ACCEPTED_LOSS_FILE)
    if (fs.existsSync(accepted)) fs.copyFileSync(accepted, path.join(building, ACCEPTED_LOSS_FILE))
    target = new ClassicLevel<string, string>(building, { keyEncoding: "utf8", valueEncoding: "utf8" })
    await target.open({ createIfMissing: true, errorIfExists: true })
    let seq = 0
    let events = 0
    let keys = 0
    let last: readonly [Buffer, Buffer] | undefined
    const eventsStart = Buffer.from(K.EVENTS_START)
    const eventsEnd = Buffer.from(K.EVENTS_END)
    try {
      for (;;) {
        const entries = await it.nextv(CHUNK)
        if (entries.length === 0) break
        const batch = target.batch()
        for (const [key, value] of entries) {
          batch.put(key as unknown as string, value as unknown as string, { keyEncoding: "buffer", valueEncoding: "buffer" })
          if (Buffer.compare(key as unknown as Buffer, eventsStart) >= 0 && Buffer.compare(key as unknown as Buffer, eventsEnd) < 0) {
            events++
            seq = K.seqOfEventKey((key as unknown as Buffer).toString("utf8"))
          }
        }
        keys += entries.length
        last = entries[entries.length - 1] as unknown as readonly [Buffer, Buffer]
        await batch.write()
      }
    } finally {
      await it.close()
    }
    // The last key rewritten as it is, synced: that makes the whole copy durable (LevelDB syncs a table when it
    // writes one, and the synced write-ahead log holds the rest).
    if (last !== undefined) await target.put(last[0] as never, last[1] as never, { keyEncoding: "buffer", valueEncoding: "buffer", sync: true })
    const counters = await readCounters(target)
    await target.close()
    target = undefined
    // The acknowledged head of the copy is what it holds: a server started on it reports no lost writes.
    const record = openAckedHead(building, seq, counters, true)
    await record.close()
    const info: BackupInfo = { seq, events, keys, takenAt, source: sourceDir, millis: Date.now() - started }
    fs.writeFileSync(path.join(building, BACKUP_FILE), `${JSON.stringify(info)}\n`)
    fsyncPath(path.join(building, BACKUP_FILE))
    fsyncPath(building)
    if (fs.existsSync(dest)) fs.rmdirSync(dest) // empty (checked above): replaced by the finished copy
    fs.renameSync(building, dest)
    fsyncPath(path.dirname(dest))
    return info
  } catch (e) {
    await target?.close().catch(() => undefined)
    fs.rmSync(building, { recursive: true, force: true })
    throw e
  }
}

/** What a backup says about itself, or undefined for a dir that is not one. */
export const readBackupInfo = (dir: string): BackupInfo | undefined => {
  try {
    return JSON.parse(fs.readFileSync(path.join(dir, BACKUP_FILE), "utf8")) as BackupInfo
  } catch {
    return undefined
  }
}
