/**
 * `wo repair-current`: the way back for a data dir whose `CURRENT` is lost or damaged. `CURRENT` only names the
 * live MANIFEST (LevelDB's list of table and log files); while the MANIFEST and the files it lists are there,
 * naming it again restores the store whole. Each MANIFEST, newest first, is tried on a private copy
 * (snapshot.ts); the first that opens with nothing dropped is the one. The data dir is written only when the
 * caller asks (`write`), and then only `CURRENT` (the damaged one, if any, is kept beside it).
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { type StoreError, StoreFailed, DataCorrupt, withReason } from "../../../domain/errors.ts"
import { readFullHead } from "../classic-level-log.ts"
import { inspectDataDir, manifestsNewestFirst, notADirectory } from "../data-dir.ts"
import { openDb } from "../level-db.ts"
import { snapshotOf } from "./snapshot.ts"
import { fsyncPath } from "../../../support/fsync-path.ts"

export type CurrentRepair =
  | { readonly _tag: "NothingToDo"; readonly manifest: string }
  | {
    readonly _tag: "Planned"
    /** Why the dir needs it: "it has no CURRENT file", ... */
    readonly problem: string
    readonly manifest: string
    /** The newest event in the store once CURRENT names `manifest` (0 for none). */
    readonly lastSeq: number
    /** MANIFESTs tried before `manifest` and why each failed. */
    readonly rejected: ReadonlyArray<string>
  }

/** Opens a private copy whose CURRENT names `manifest`, and reads the newest event seq. */
const tryManifest = (dir: string, manifest: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const copy = yield* snapshotOf(dir)
      fs.writeFileSync(path.join(copy, "CURRENT"), `${manifest}\n`)
      const h = yield* Effect.mapError(
        openDb(copy, { checkOnly: true }),
        (e) => withReason(e, e.reason.replaceAll(copy, dir))
      )
      const head = yield* h.read("cannot read the store", readFullHead)
      return head.lastSeq
    })
  )

/** What `CURRENT` should name, checked on a private copy; writes nothing. */
export const planCurrentRepair = (dir: string): Effect.Effect<CurrentRepair, StoreError> =>
  Effect.gen(function* () {
    const state = inspectDataDir(dir)
    switch (state._tag) {
      case "Store":
        return { _tag: "NothingToDo", manifest: state.manifest } as const
      case "NotADirectory":
        return yield* notADirectory(dir)
      case "Absent":
      case "Empty":
        return yield* new StoreFailed({ reason: `the data dir ${dir} holds no store (it is ${state._tag === "Absent" ? "absent" : "empty"})` })
    }
    const manifests = manifestsNewestFirst(dir)
    if (manifests.length === 0) {
      return yield* new DataCorrupt({
        reason: `${dir}: ${state.problem}, and no MANIFEST file is left to name in it; restore the dir from a backup (\`wo restore <backup> <new-data-dir>\`)`
      })
    }
    const rejected: Array<string> = []
    for (const manifest of manifests) {
      const opened = yield* Effect.either(tryManifest(dir, manifest))
      if (opened._tag === "Right") return { _tag: "Planned", problem: state.problem, manifest, lastSeq: opened.right, rejected } as const
      rejected.push(`${manifest}: ${opened.left.reason}`)
    }
    return yield* new DataCorrupt({
      reason: `${dir}: ${state.problem}, and no MANIFEST opens whole:\n${rejected.join("\n")}\nNothing was written; restore the dir from a backup (\`wo restore <backup> <new-data-dir>\`)`
    })
  }).pipe(Effect.catchAllDefect((e) => Effect.fail(new StoreFailed({ reason: `cannot read the data dir ${dir}: ${String(e)}` }))))

/**
 * Writes `CURRENT` naming `manifest`: a new file, synced, renamed over the old one, and the dir synced. Returns
 * where the damaged `CURRENT` was kept, if there was one.
 */
export const writeCurrent = (dir: string, manifest: string): string | undefined => {
  const current = path.join(dir, "CURRENT")
  let kept: string | undefined
  if (fs.existsSync(current)) {
    kept = path.join(dir, `CURRENT.wo-damaged-${new Date().toISOString().replace(/[:.]/g, "-")}`)
    fs.copyFileSync(current, kept)
  }
  const fresh = path.join(dir, "CURRENT.wo-new")
  const fd = fs.openSync(fresh, "w")
  try {
    fs.writeSync(fd, `${manifest}\n`)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  fs.renameSync(fresh, current)
  fsyncPath(dir)
  return kept
}
