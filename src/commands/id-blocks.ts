/**
 * A node's blocks of ids on a shared log (PostgreSQL). Each node reserves the next ids of a type from the store, a
 * block at a time (one statement: the type's highest id handed out moves past the block), and gives them to its
 * creates without asking: two nodes creating in one type at once never decide the same id, so neither is refused and
 * decided again. The store writes a create whose id it handed out and no row has (append-plan.ts).
 *
 * Ids stay unique forever: a block is handed out once, and the ids of a block its node never used (it was killed,
 * or its batch failed) are skipped, never given again. One exception keeps a lone node's ids dense across restarts:
 * at a clean stop, a node gives back the unused end of each type's last block, only if no reservation came after it
 * (the store's highest id handed out is still that block's last). No id above the node's highest given one was then
 * handed to anyone else, and the node gives no more: nothing handed out is handed out again. Those give-backs nest
 * like a stack: a node's can only succeed once every block reserved after its own was given back whole. A single node gives 1, 2, 3…: its blocks follow each other
 * while no other node reserves in between. On several nodes, ids are unique but not in creation order across nodes.
 *
 * The writer (group-commit.ts) decides with `next`, marks what it gave with `gave`, and calls `refill` before each
 * batch: a type whose blocks ran out in the last batch (its submission is decided again in the next one), or that
 * runs low, or that the batch creates in and has no block yet, gets a new block.
 */
import { Effect } from "effect"
import { StoreFailed, type StoreError } from "../domain/errors.ts"
import { MAX_ID } from "../domain/ids.ts"
import type { UnusedIds } from "../log/event-log.ts"

/** Ids `first` to `last`, both included, that this node may still give. */
type Range = { first: number; last: number }

export interface IdBlocks {
  /**
   * The id this node gives the next create of `type`, past `after` (the last id given in the batch being decided;
   * undefined: none yet), or undefined when its blocks are used up (the create waits for the next batch).
   */
  readonly next: (type: string, after: number | undefined) => number | undefined
  /** The ids of `type` up to `id` are given (written or not): they are never given again. */
  readonly gave: (type: string, id: number) => void
  /** Reserves a block for each type that ran out, runs low, or is in `wanted` with no id left. */
  readonly refill: (wanted: Iterable<string>) => Effect.Effect<void, StoreError>
  /**
   * At a clean stop, once the writer gives no more ids: gives back the unused end of each type's last block
   * (`release`: the store's conditional give-back); answers the types whose ids were given back.
   */
  readonly giveBack: (
    release: (unused: ReadonlyArray<UnusedIds>) => Effect.Effect<ReadonlyArray<string>, StoreError>
  ) => Effect.Effect<ReadonlyArray<string>, StoreError>
}

/**
 * `size`: the ids per block (WO_ID_BLOCK). `reserve(type, count)`: the store's reservation, answering the block's
 * last id.
 */
export const makeIdBlocks = (size: number, reserve: (type: string, count: number) => Effect.Effect<number, StoreError>): IdBlocks => {
  // Per type, the ranges left, in ascending order.
  const left = new Map<string, Array<Range>>()
  // The types a create found with no id left since the last refill.
  const starved = new Set<string>()
  // Per type, the last id of the last block reserved: the store's highest id handed out, unless another node reserved since.
  const lastReserved = new Map<string, number>()
  const room = (type: string) => {
    let n = 0
    for (const r of left.get(type) ?? []) n += r.last - r.first + 1
    return n
  }
  const reserveOne = (type: string) =>
    Effect.flatMap(reserve(type, size), (last) => {
      // Past the largest id the store keys rows by, the block is useless: creates of the type are refused.
      if (last - size + 1 > MAX_ID) return Effect.fail(new StoreFailed({ reason: `the ids of ${type} are used up (the largest is ${MAX_ID})` }))
      lastReserved.set(type, last)
      const ranges = left.get(type) ?? []
      const end = ranges[ranges.length - 1]
      // A block right after the one before (no other node reserved in between) continues it.
      if (end !== undefined && end.last + 1 === last - size + 1) end.last = last
      else ranges.push({ first: last - size + 1, last: Math.min(last, MAX_ID) })
      left.set(type, ranges)
      return Effect.void
    })
  return {
    next: (type, after) => {
      for (const r of left.get(type) ?? []) {
        if (after === undefined || after < r.first) return r.first
        if (after < r.last) return after + 1
      }
      starved.add(type)
      return undefined
    },
    gave: (type, id) => {
      const ranges = left.get(type)
      if (ranges === undefined) return
      while (ranges.length > 0 && ranges[0].last <= id) ranges.shift()
      if (ranges.length > 0 && ranges[0].first <= id) ranges[0].first = id + 1
    },
    refill: (wanted) =>
      Effect.suspend(() => {
        const types = new Set(starved)
        for (const type of wanted) if (room(type) === 0) types.add(type)
        // Ahead of need: a type with less than half a block left gets the next one now, not when a create misses.
        for (const type of left.keys()) if (room(type) < size / 2) types.add(type)
        starved.clear()
        return types.size === 0 ? Effect.void : Effect.forEach(types, reserveOne, { discard: true })
      }),
    giveBack: (release) =>
      Effect.suspend(() => {
        const unused: Array<UnusedIds> = []
        for (const [type, blockLast] of lastReserved) {
          const end = left.get(type)?.at(-1)
          // The end of the last block (ids are given in order: every id this node gave is below `first`); not a block
          // cut short at the largest id.
          if (end !== undefined && end.last === blockLast) unused.push({ type, keep: end.first - 1, blockLast })
        }
        return unused.length === 0 ? Effect.succeed([]) : release(unused)
      })
  }
}
