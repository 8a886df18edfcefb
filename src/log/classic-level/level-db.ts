/**
 * The classic-level database as a scoped service, shared by the EventLog and the session store (different key
 * prefixes). It owns the two rules that keep LevelDB from losing acknowledged writes:
 *
 * - After a failed write, nothing else is written until the database has been reopened. A failed append (a full
 *   disk) can leave a torn record in LevelDB's write-ahead log, and LevelDB keeps appending after it: on the next
 *   open its log reader loses its place at the torn record and drops every record after it, acknowledged or not.
 *   Reopening seals the torn record at the end of the old log and starts a fresh one. Reads keep using the old
 *   handle until then; the reopen waits until the disk has room again.
 * - Other threads of the process may read the database (`lendReads`: classic-level's multithreading, where every
 *   thread's handle is one LevelDB instance, closed with the last handle). A reopen first ends every such reader:
 *   a handle left open elsewhere would keep the old instance, and its torn write-ahead log, in use.
 *   Two runtimes of one process on one data dir are refused, as LevelDB's lock refuses two processes.
 * - LevelDB recovers from a damaged log by dropping records and only says so in the data dir's `LOG` file, which
 *   its next open rotates away. So every open reads its own fresh `LOG` at once, copies it beside the data when
 *   something was dropped, leaves a marker that refuses later opens too, and refuses to go on unless the
 *   operator accepts the loss (`--accept-data-loss`).
 */
import { ClassicLevel } from "classic-level"
import { Context, Effect, Layer, type Scope } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { fdLimit, storeOpenFiles } from "../../support/fd-limit.ts"
import { DataCorrupt, isStoreError, StoreFailed, type StoreError } from "../../domain/errors.ts"
import { prepareDataDir } from "./data-dir.ts"
import { silentWalDamage } from "./wal-check.ts"
import { holdWriteAheadLogs } from "./wal-hold.ts"
import { StoreFiles } from "../store-files.ts"

export type Db = ClassicLevel<string, string>

export const storeError = (what: string) => (e: unknown) =>
  new StoreFailed({ reason: `${what}: ${e instanceof Error ? e.message : String(e)}` })

export interface OpenOptions {
  /** Serve what is left after LevelDB dropped data at open (and clear an earlier refusal's marker). */
  readonly acceptDataLoss?: boolean
  /**
   * The open of a private copy by a tool that only reads (read-only-db.ts): it keeps no evidence, leaves no marker
   * and clears none, since the copy is thrown away; the data dir itself was never opened.
   */
  readonly checkOnly?: boolean
  /** The server's open: keep the write-ahead logs as they were, as evidence for the acknowledged-head check (wal-hold.ts). */
  readonly holdWriteAheadLogs?: boolean
  /** The server's open: other threads may read the database (`lendReads`). */
  readonly threads?: boolean
}

/** The file that makes every later open refuse, until the loss is accepted. */
export const DATA_LOSS_MARKER = "WO-DATA-LOSS"
/** Below this much free space a failed write is taken for a full disk, and the reopen waits. */
const MIN_FREE_BYTES = 1024 * 1024
/** What LevelDB writes to `LOG` when it skips records or files while recovering. */
const DROPPED = /dropping|corruption|ignoring error|lost|missing files/i

export interface LevelDbShape {
  readonly dir: string
  /** Runs a read on the open database (a StoreError while it is closed for a reopen). */
  readonly read: <A>(what: string, f: (db: Db) => Promise<A>) => Effect.Effect<A, StoreError>
  /**
   * Runs a write. The first failure marks the store unwritable: every later write first reopens it (a fresh
   * write-ahead log), and fails fast while that is not possible (the disk is still full).
   */
  readonly write: <A>(what: string, f: (db: Db) => Promise<A>) => Effect.Effect<A, StoreError>
  /** The open database for a synchronous read (`getSync`), or undefined while it is closed for a reopen. */
  readonly current?: () => Db | undefined
  /** Reopens the store if a write failed since the last open; succeeds at once otherwise. */
  readonly ensureWritable: Effect.Effect<void, StoreError>
  /** How many times the store was reopened after a failed write. */
  readonly reopens: () => number
  /**
   * Present when opened with `threads`: lends the database to a reader in another thread of this process for as
   * long as the scope lasts, answering the data dir it opens (with classic-level's `multithreading`). `end` must
   * close that reader's handle (end its thread): a reopen awaits it first.
   */
  readonly lendReads?: (end: () => Promise<void>) => Effect.Effect<string, never, Scope.Scope>
  /**
   * Runs `f` once no write is in flight, holding new writes until it returns (`wo backup` pins the files of one
   * state: backup/pin-files.ts). `f` must be brief.
   */
  readonly whileNoWrites?: <A>(f: () => Promise<A>) => Effect.Effect<A, StoreError>
  /**
   * Runs a write once no other write is in flight, holding new writes until it returns: a write that must not
   * interleave with the writer's batches (the index backfill: projections/rows/index-backfill.ts). A failure marks the
   * store unwritable, as `write`'s does. `f` must be brief.
   */
  readonly writeAlone?: <A>(what: string, f: (db: Db) => Promise<A>) => Effect.Effect<A, StoreError>
}

export class LevelDb extends Context.Tag("writeonce/LevelDb")<LevelDb, LevelDbShape>() {}

const messageOf = (e: unknown): string => {
  const cause = (e as { cause?: { message?: string } })?.cause
  return cause?.message ?? (e instanceof Error ? e.message : String(e))
}

const explainOpenFailure = (dir: string, e: unknown): StoreError => {
  if (isStoreError(e)) return e
  const code = (e as { cause?: { code?: string }; code?: string })?.cause?.code ?? (e as { code?: string })?.code
  const message = messageOf(e)
  if (/read-only file system|EROFS/i.test(message) || code === "EROFS") {
    return new StoreFailed({ reason: `the data dir ${dir} is on a read-only file system; writeonce must write there` })
  }
  if (/permission denied|EACCES|EPERM/i.test(message) || code === "EACCES" || code === "EPERM") {
    return new StoreFailed({ reason: `no permission to write in the data dir ${dir}: ${message}` })
  }
  if (code === "LEVEL_LOCKED") {
    return new StoreFailed({ reason: `the data dir ${dir} is in use by another process (is a server already running on it?)` })
  }
  return new StoreFailed({ reason: `cannot open the data dir ${dir}: ${message}` })
}

const readLog = (dir: string) => {
  try {
    return fs.readFileSync(path.join(dir, "LOG"), "utf8")
  } catch {
    return ""
  }
}

export interface Opened {
  readonly db: Db
  /** The `LOG` lines in which LevelDB reported dropping data during this open (empty when none). */
  readonly dropped: ReadonlyArray<string>
  /** Where those lines were kept, when there were any. */
  readonly evidence?: string
}

/**
 * Opens the database and checks what LevelDB dropped while recovering. `afterFailedWrite`: the open that seals
 * a torn record; the record it drops was never acknowledged, so that loss is reported, not refused.
 */
const openChecked = async (dir: string, options: OpenOptions, afterFailedWrite: boolean): Promise<Opened> => {
  // Before anything else: LevelDB creates a database only in an absent or empty dir (data-dir.ts).
  const createIfMissing = prepareDataDir(dir)
  const marker = path.join(dir, DATA_LOSS_MARKER)
  const keep = !options.checkOnly
  const unchanged = options.checkOnly ? " (found on a private copy: nothing in the data dir was changed)" : ""
  if (!options.acceptDataLoss && fs.existsSync(marker)) {
    throw new DataCorrupt({
      reason: `an earlier open of ${dir} found that LevelDB dropped data:\n${fs.readFileSync(marker, "utf8").trim()}\n` +
        "Restore the data dir from a backup (`wo restore <backup> <new-data-dir>`, a backup taken by `wo backup`), or start with --accept-data-loss to serve what is left."
    })
  }
  const stamp = new Date().toISOString().replace(/[:.]/g, "-")
  // Checked before the open, which would delete the damaged log: it is kept as evidence instead.
  const silent = afterFailedWrite ? [] : silentWalDamage(dir)
  if (silent.length > 0 && !options.acceptDataLoss && !keep) {
    throw new DataCorrupt({
      reason: `LevelDB would drop acknowledged writes while opening ${dir}:\n${silent.join("\n")}${unchanged}\n` +
        "Restore the data dir from a backup (`wo restore <backup> <new-data-dir>`, a backup taken by `wo backup`), or start with --accept-data-loss to serve what is left."
    })
  }
  if (silent.length > 0 && !options.acceptDataLoss) {
    const kept = silent.map((line) => {
      const file = line.slice(0, line.indexOf(":"))
      const copy = path.join(dir, `wo-evidence-${stamp}-${path.basename(file)}`)
      fs.copyFileSync(file, copy)
      return copy
    })
    const report = `${silent.join("\n")}\n(the damaged logs are kept as ${kept.join(", ")})`
    fs.writeFileSync(marker, `${report}\n`)
    throw new DataCorrupt({
      reason: `LevelDB would drop acknowledged writes while opening ${dir}:\n${report}\n` +
        "Restore the data dir from a backup (`wo restore <backup> <new-data-dir>`, a backup taken by `wo backup`), or start with --accept-data-loss to serve what is left."
    })
  }
  // Evidence for the acknowledged-head check (classic-level-log.ts), which can only run once the store is open.
  if (options.holdWriteAheadLogs && !afterFailedWrite) holdWriteAheadLogs(dir)
  const db: Db = new ClassicLevel(dir, { keyEncoding: "utf8", valueEncoding: "utf8" })
  await db.open({ createIfMissing, maxOpenFiles: storeOpenFiles(fdLimit().limit), multithreading: options.threads === true })
  const dropped = [...silent, ...readLog(dir).split("\n").filter((line) => DROPPED.test(line))]
  if (dropped.length === 0) {
    if (options.acceptDataLoss && keep) fs.rmSync(marker, { force: true })
    return { db, dropped }
  }
  if (!keep) {
    if (options.acceptDataLoss) return { db, dropped }
    await db.close()
    throw new DataCorrupt({
      reason: `LevelDB drops data while opening ${dir}; acknowledged writes may be lost:\n${dropped.join("\n")}${unchanged}\n` +
        "Restore the data dir from a backup (`wo restore <backup> <new-data-dir>`, a backup taken by `wo backup`), or start with --accept-data-loss to serve what is left."
    })
  }
  const evidence = path.join(dir, `wo-evidence-${stamp}.LOG`)
  fs.copyFileSync(path.join(dir, "LOG"), evidence)
  if (afterFailedWrite || options.acceptDataLoss) {
    if (options.acceptDataLoss) fs.rmSync(marker, { force: true })
    return { db, dropped, evidence }
  }
  const report = `${dropped.join("\n")}\n(LevelDB's LOG of that open is kept as ${evidence})`
  fs.writeFileSync(marker, `${report}\n`)
  await db.close()
  throw new DataCorrupt({
    reason: `LevelDB dropped data while opening ${dir}; acknowledged writes may be lost:\n${report}\n` +
      "Restore the data dir from a backup (`wo restore <backup> <new-data-dir>`, a backup taken by `wo backup`), or start with --accept-data-loss to serve what is left."
  })
}

const freeBytes = (dir: string): number => {
  try {
    const s = fs.statfsSync(dir)
    return s.bavail * s.bsize
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

/** Opens the data dir (refusing data that LevelDB dropped) and returns the shared handle, closed with the scope. */
export const openDb = (dir: string, options: OpenOptions = {}) =>
  Effect.gen(function* () {
    if (options.threads === true) yield* holdInProcess(dir)
    const first = yield* Effect.tryPromise({ try: () => openChecked(dir, options, false), catch: (e) => explainOpenFailure(dir, e) })
    if (first.dropped.length > 0) {
      yield* Effect.logWarning(
        `--accept-data-loss: serving ${dir} although LevelDB dropped data while opening it` +
          `${first.evidence === undefined ? "" : ` (kept in ${first.evidence})`}:\n` +
          first.dropped.join("\n")
      )
    }
    let db: Db | undefined = first.db
    /** Why the store is unwritable (a write failed since the last open), or undefined. */
    let broken: string | undefined
    let reopens = 0
    const lock = yield* Effect.makeSemaphore(1)

    const closed = () => new StoreFailed({ reason: `the store is closed while it reopens after a failed write (${broken})` })

    /** The readers in other threads the database is lent to, each with how to end it. */
    const lent = new Set<() => Promise<void>>()
    const endLent = Effect.promise(() => Promise.all([...lent].map((end) => end().catch(() => undefined)))).pipe(Effect.zipRight(Effect.sync(() => lent.clear())))

    const reopen = Effect.gen(function* () {
      if (broken === undefined) return
      const free = freeBytes(dir)
      if (free < MIN_FREE_BYTES) {
        return yield* new StoreFailed({
          reason: `the disk holding ${dir} is full (${Math.round(free / 1024)} KiB free) since a write failed (${broken}); ` +
            "writes resume once space returns, reads go on"
        })
      }
      const old = db
      db = undefined
      yield* endLent
      if (old !== undefined) yield* Effect.promise(() => old.close().catch(() => undefined))
      const opened = yield* Effect.tryPromise({ try: () => openChecked(dir, options, true), catch: (e) => explainOpenFailure(dir, e) })
      db = opened.db
      yield* Effect.logWarning(
        `reopened the store after a failed write (${broken}); new writes go to a fresh write-ahead log` +
          (opened.dropped.length > 0 ? `; LevelDB dropped the failed write's torn record: ${opened.dropped.join(" | ")}` : "")
      )
      broken = undefined
      reopens++
    }).pipe(
      Effect.tapError((e) => Effect.logError(`cannot reopen the store yet: ${e.reason}`)),
      lock.withPermits(1)
    )

    const ensureWritable = Effect.suspend(() => (broken === undefined && db !== undefined ? Effect.void : reopen))

    yield* Effect.addFinalizer(() => Effect.zipRight(endLent, Effect.promise(() => db?.close().catch(() => undefined) ?? Promise.resolve())))

    // Writes in flight, and the hold of `whileNoWrites` (new writes wait for it).
    let inFlight = 0
    let held: Promise<void> | undefined
    let drained: (() => void) | undefined
    const enter: Effect.Effect<void> = Effect.suspend(() =>
      held === undefined ? Effect.sync(() => void inFlight++) : Effect.zipRight(Effect.promise(() => held!), enter))
    const leave = Effect.sync(() => {
      if (--inFlight === 0) drained?.()
    })
    const whileNoWrites = <A>(f: () => Promise<A>): Effect.Effect<A, StoreError> =>
      Effect.suspend(() => {
        if (held !== undefined) return Effect.zipRight(Effect.promise(() => held!), whileNoWrites(f))
        let release!: () => void
        held = new Promise<void>((resolve) => (release = resolve))
        const idle = inFlight === 0 ? Promise.resolve() : new Promise<void>((resolve) => (drained = resolve))
        return Effect.tryPromise({ try: () => idle.then(f), catch: storeError("cannot hold the writes") }).pipe(
          Effect.ensuring(Effect.sync(() => {
            drained = undefined
            held = undefined
            release()
          }))
        )
      })

    return LevelDb.of({
      dir,
      read: (what, f) =>
        Effect.suspend(() => {
          const current = db
          if (current === undefined) return Effect.fail(closed())
          return Effect.tryPromise({ try: () => f(current), catch: storeError(what) })
        }),
      write: (what, f) =>
        Effect.acquireUseRelease(enter, () =>
          Effect.flatMap(ensureWritable, () =>
            Effect.tryPromise({
              try: () => f(db!),
              catch: (e) => {
                // From here on nothing is written to this write-ahead log: it may end in a torn record.
                broken ??= messageOf(e)
                return storeError(what)(e)
              }
            })), () => leave),
      current: () => db,
      whileNoWrites,
      writeAlone: (what, f) =>
        Effect.flatMap(ensureWritable, () =>
          Effect.mapError(
            whileNoWrites(() => f(db!).catch((e) => {
              broken ??= messageOf(e)
              throw e
            })),
            (e) => storeError(what)(e.reason)
          )),
      ensureWritable,
      reopens: () => reopens,
      ...(options.threads === true ? {
        lendReads: (end: () => Promise<void>) =>
          Effect.acquireRelease(Effect.sync(() => (lent.add(end), dir)), () => Effect.sync(() => void lent.delete(end)))
      } : {})
    })
  })

export const levelDbLayer = (dir: string, options: OpenOptions = {}) =>
  Layer.scoped(LevelDb, openDb(dir, { holdWriteAheadLogs: true, threads: true, ...options }))

// The data dirs open with `threads` in this process, on the global object: a process may hold two copies of this
// module (the `wo` launcher's and a bundle's), and both must see one set.
const OPEN = Symbol.for("writeonce.openDataDirs")
const openHere = ((globalThis as { [OPEN]?: Set<string> })[OPEN] ??= new Set<string>())

/**
 * Holds `dir` for this runtime until the scope closes. classic-level's multithreading shares one LevelDB instance
 * between the handles of one process, so LevelDB's lock no longer refuses a second runtime here: this does.
 */
const holdInProcess = (dir: string) =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const key = path.resolve(dir)
      if (openHere.has(key)) return Effect.fail(new StoreFailed({ reason: `the data dir ${dir} is in use by another runtime in this process` }))
      openHere.add(key)
      return Effect.succeed(key)
    }),
    (key) => Effect.sync(() => void openHere.delete(key))
  )

/** The port the backup endpoint reaches the data dir's files through (store-files.ts), over the open store. */
export const StoreFilesLive = Layer.effect(
  StoreFiles,
  Effect.map(LevelDb, (db) => ({ dir: db.dir, whileNoWrites: db.whileNoWrites }))
)
