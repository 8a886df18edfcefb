/**
 * A private copy of a data dir, for the tools that only read (`wo verify`, `wo replay`, `wo repair-current`'s
 * trial open). LevelDB has no read-only open: opening replays the write-ahead log into a new table file, writes a
 * new MANIFEST and CURRENT, rotates `LOG` and deletes the files it no longer needs. On the copy it may do all of
 * that; the data dir is never written.
 *
 * Table files (`*.ldb`, `*.sst`) are never changed once written, only deleted: they are hard-linked, and deleting
 * a link in the copy leaves the original in place. Everything else (CURRENT, MANIFEST-*, the `*.log` files, which
 * an open may append to, and writeonce's own files) is copied. A table is copied too where no hard link can be
 * made (the copy is on another file system: set TMPDIR to a dir on the data dir's file system to avoid that).
 *
 * A copy is consistent only while nothing writes the dir: a dir locked by a running server is refused, and so
 * is one whose files changed while they were copied (a writer this check cannot see).
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { isStoreError, StoreFailed, type StoreError } from "../../../domain/errors.ts"

/** Left out of the copy: LevelDB's lock and info log (it makes its own) and the evidence earlier opens kept. */
const LEFT_OUT = /^(LOCK|LOG|LOG\.old|wo-evidence-.*)$/
const TABLE = /^\d+\.(ldb|sst)$/

/** The Linux device number as /proc/locks prints it: major:minor in hex. */
const deviceOf = (dev: number) => {
  const major = ((dev >> 8) & 0xfff) | (Math.floor(dev / 2 ** 32) & ~0xfff)
  const minor = (dev & 0xff) | ((dev >> 12) & ~0xff & 0xfffff)
  return `${major.toString(16).padStart(2, "0")}:${minor.toString(16).padStart(2, "0")}`
}

/** The pid holding LevelDB's lock on the dir (a running server), from /proc/locks; undefined if none or unknown. */
export const lockHolder = (dir: string): number | undefined => {
  let stat: fs.Stats
  let locks: string
  try {
    stat = fs.statSync(path.join(dir, "LOCK"))
    locks = fs.readFileSync("/proc/locks", "utf8")
  } catch {
    return undefined
  }
  const file = `${deviceOf(stat.dev)}:${stat.ino}`
  for (const line of locks.split("\n")) {
    const m = /^\d+:\s+POSIX\s+\S+\s+WRITE\s+(\d+)\s+(\S+)\s/.exec(line)
    if (m !== null && m[2] === file) return Number(m[1])
  }
  return undefined
}

/** Names, sizes and CURRENT's content: what changes when anything writes the dir. */
const fingerprint = (dir: string) => {
  const names = fs.readdirSync(dir).filter((f) => f !== "LOG" && f !== "LOG.old").sort()
  const sizes = names.map((f) => `${f}:${fs.statSync(path.join(dir, f)).size}`)
  const current = names.includes("CURRENT") ? fs.readFileSync(path.join(dir, "CURRENT"), "utf8") : ""
  return `${sizes.join(",")}|${current}`
}

const linkOrCopy = (from: string, to: string) => {
  try {
    fs.linkSync(from, to)
  } catch {
    fs.copyFileSync(from, to)
  }
}

const copyInto = (dir: string, copy: string) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isFile() || LEFT_OUT.test(entry.name)) continue
    const from = path.join(dir, entry.name)
    const to = path.join(copy, entry.name)
    if (TABLE.test(entry.name)) linkOrCopy(from, to)
    else fs.copyFileSync(from, to)
  }
}

const inUse = (dir: string, pid: number) =>
  new StoreFailed({
    reason: `the data dir ${dir} is in use by a running server (pid ${pid}); stop it first: a check of files that are being ` +
      "written would not be consistent"
  })

const make = (dir: string): string => {
  const holder = lockHolder(dir)
  if (holder !== undefined) throw inUse(dir, holder)
  const before = fingerprint(dir)
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), "wo-snapshot-"))
  try {
    copyInto(dir, copy)
    const after = fingerprint(dir)
    const holderAfter = lockHolder(dir)
    if (holderAfter !== undefined) throw inUse(dir, holderAfter)
    if (after !== before) {
      throw new StoreFailed({
        reason: `the files of ${dir} changed while they were copied for the check: is a server running on it? Stop it and try again`
      })
    }
    return copy
  } catch (e) {
    fs.rmSync(copy, { recursive: true, force: true })
    throw e
  }
}

/** A private copy of `dir`, removed with the scope. */
export const snapshotOf = (dir: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => make(dir),
      catch: (e) =>
        isStoreError(e)
          ? e
          : new StoreFailed({ reason: `cannot copy ${dir} for the check: ${e instanceof Error ? e.message : String(e)}` })
    }),
    (copy) => Effect.sync(() => fs.rmSync(copy, { recursive: true, force: true }))
  )
