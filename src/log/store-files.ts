/**
 * The embedded store's files, as what copies them whole (`wo backup`) sees them: the directory they live in, and a
 * hold on writes while the files of one state are pinned. The HTTP routes reach the store through this port and
 * never through the classic-level adapter, which provides it (classic-level/level-db.ts).
 */
import { Context, type Effect } from "effect"
import type { StoreError } from "../domain/errors.ts"

export interface StoreFilesShape {
  /** The data dir. */
  readonly dir: string
  /**
   * Runs `f` once no write is in flight, holding new writes until it returns. `f` must be brief. Absent when the
   * store cannot hold its writes.
   */
  readonly whileNoWrites?: <A>(f: () => Promise<A>) => Effect.Effect<A, StoreError>
}

export class StoreFiles extends Context.Tag("writeonce/StoreFiles")<StoreFiles, StoreFilesShape>() {}
