/**
 * The check every store runs after loading its rows: as many rows per type as the store recorded with its last
 * batch. A row lost, or moved out of the rows by a damaged key, shows here rather than as a missing row served.
 */
import { Effect } from "effect"
import { DataCorrupt } from "../domain/errors.ts"

export const checkRowCounts = (recorded: ReadonlyMap<string, number>, seen: ReadonlyMap<string, number>) =>
  Effect.suspend(() => {
    for (const type of new Set([...recorded.keys(), ...seen.keys()])) {
      const want = recorded.get(type) ?? 0
      const have = seen.get(type) ?? 0
      if (want !== have) {
        return Effect.fail(new DataCorrupt({
          reason: `corrupt store: ${have} stored rows of type ${type}, but the store recorded ${want} (rows lost or moved by damaged keys)`
        }))
      }
    }
    return Effect.void
  })
