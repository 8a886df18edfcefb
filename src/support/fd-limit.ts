/**
 * The process's budget of open files: its soft limit, read once, and how it is shared between connections (the
 * connection caps' defaults), the store's table files and the rest. The start-up lines say the limit. Node has no getrlimit; Linux says it in /proc/self/limits, and elsewhere a shell's
 * `ulimit -n` says the limit it inherited from this process. (Node itself raises the soft limit to the hard one as
 * it starts, so this is the limit after that.)
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"

export interface FdLimit {
  /** Files (sockets included) this process may hold open at once. */
  readonly limit: number
  /** Where it was read: `/proc/self/limits`, `ulimit -n`, or `assumed` when neither said. */
  readonly source: "/proc/self/limits" | "ulimit -n" | "assumed"
}

/** What "unlimited" counts as, and the limit assumed when none can be read (a common soft limit). */
export const UNLIMITED_FILES = 1_048_576
export const ASSUMED_FILES = 1024

/** `Max open files  1024  4096  files` -> 1024; undefined when the text has no such line. */
export const parseProcLimits = (text: string): number | undefined => {
  const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(text)
  if (m === null) return undefined
  return m[1] === "unlimited" ? UNLIMITED_FILES : Number(m[1])
}

const parseUlimit = (text: string): number | undefined => {
  const s = text.trim()
  if (s === "unlimited") return UNLIMITED_FILES
  return /^\d+$/.test(s) ? Number(s) : undefined
}

const read = (): FdLimit => {
  try {
    const limit = parseProcLimits(fs.readFileSync("/proc/self/limits", "utf8"))
    if (limit !== undefined && limit > 0) return { limit, source: "/proc/self/limits" }
  } catch {
    // Not Linux: ask a shell.
  }
  try {
    const limit = parseUlimit(execFileSync("/bin/sh", ["-c", "ulimit -n"], { encoding: "utf8", timeout: 2000, stdio: ["ignore", "pipe", "ignore"] }))
    if (limit !== undefined && limit > 0) return { limit, source: "ulimit -n" }
  } catch {
    // No shell (Windows): assume a common limit.
  }
  return { limit: ASSUMED_FILES, source: "assumed" }
}

let known: FdLimit | undefined

/** The soft open-file limit, read at the first call and remembered (it does not change while the process runs). */
export const fdLimit = (): FdLimit => (known ??= read())

/**
 * Files kept for what else the process opens besides connections (the store's files, PostgreSQL connections, a
 * backup's copies, stdio): a quarter of the limit, at least 64 and at most 1024.
 */
export const reservedFiles = (files: number) => Math.min(1024, Math.max(64, Math.ceil(files / 4)))

/**
 * The table files LevelDB may keep open (its `maxOpenFiles`, 1000 by default): at most half the reserved files, so
 * that a large store and a full set of connections together stay below the process's limit.
 */
export const storeOpenFiles = (files: number) => Math.min(1000, Math.max(32, Math.floor(reservedFiles(files) / 2)))

export interface ConnectionCaps {
  /** Most connections one client address may hold open. */
  readonly perClient: number
  /** Most connections open in all. */
  readonly total: number
}

/**
 * The default caps for a process that may open `files` files (or, given `total`, for that total): all the files
 * but the reserved ones in all, and half of the total per address, so that one client alone never locks out the
 * others.
 */
export const connectionCapsFor = (files: number, total = Math.max(8, files - reservedFiles(files))): ConnectionCaps => ({
  total,
  perClient: Math.max(1, Math.floor(total / 2))
})
