/**
 * The store as the tools that only read open it (`wo verify`, `wo replay`): LevelDB works on a private copy
 * (snapshot.ts) and the data dir is never written. A dir the server would refuse is refused here with the same
 * reasons, named after the data dir, not the copy; writes fail.
 */
import { Effect } from "effect"
import { type StoreError, StoreFailed, withReason } from "../../../domain/errors.ts"
import { headless, inspectDataDir, notADirectory } from "../data-dir.ts"
import { openDb, type LevelDbShape } from "../level-db.ts"
import { snapshotOf } from "./snapshot.ts"

export interface ReadOnlyOptions {
  /** Read what is left although LevelDB drops data while opening the copy (or an earlier open did). */
  readonly acceptDataLoss?: boolean
}

/** Fails unless `dir` holds a store LevelDB can find: never creates one, never opens a dir without CURRENT. */
export const requireStore = (dir: string): Effect.Effect<void, StoreError> =>
  Effect.suspend(() => {
    const state = inspectDataDir(dir)
    switch (state._tag) {
      case "Store":
        return Effect.void
      case "Absent":
        return Effect.fail(new StoreFailed({ reason: `the data dir ${dir} does not exist` }))
      case "Empty":
        return Effect.fail(new StoreFailed({ reason: `the data dir ${dir} holds no store (it is empty)` }))
      case "NotADirectory":
        return Effect.fail(notADirectory(dir))
      case "Headless":
        return Effect.fail(headless(dir, state))
    }
  }).pipe(Effect.catchAllDefect((e) => Effect.fail(new StoreFailed({ reason: `cannot read the data dir ${dir}: ${String(e)}` }))))

/** Opens a private copy of `dir`, inside `scope`: the copy is removed with it. */
export const openReadOnly = (dir: string, options: ReadOnlyOptions = {}) =>
  Effect.gen(function* () {
    yield* requireStore(dir)
    const copy = yield* snapshotOf(dir)
    const named = (e: StoreError) => withReason(e, e.reason.replaceAll(copy, dir))
    const h = yield* Effect.mapError(openDb(copy, { ...options, checkOnly: true }), named)
    const readOnly = new StoreFailed({ reason: `${dir} is open read-only (a private copy, for a check)` })
    return {
      ...h,
      dir,
      read: (what, f) => Effect.mapError(h.read(what, f), named),
      write: () => Effect.fail(readOnly)
    } satisfies LevelDbShape
  })
