/**
 * A node's blocks of ids (commands/id-blocks.ts), against a reservation that hands out consecutive blocks as the
 * store's does (the store itself: test/cluster/id-blocks.test.ts): ids in order within and across blocks that follow
 * each other, none once the blocks are used up (until a refill), another node's block skipped, ids given never
 * given again.
 */
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { makeIdBlocks } from "../../src/commands/id-blocks.ts"

/** The store's reservation: per type, the highest id handed out moves past each block. */
const store = () => {
  const last = new Map<string, number>()
  const calls: Array<string> = []
  return {
    calls,
    /** The highest id of `type` handed out. */
    highest: (type: string) => last.get(type) ?? 0,
    /** The store's give-back: the highest id handed out moves back to `keep` only if it is still `blockLast`. */
    release: (unused: ReadonlyArray<{ type: string; keep: number; blockLast: number }>) =>
      Effect.sync(() =>
        unused.flatMap(({ type, keep, blockLast }) => {
          if (last.get(type) !== blockLast || keep >= blockLast) return []
          last.set(type, keep)
          return [type]
        })
      ),
    /** Another node reserves `count` ids of `type`. */
    elsewhere: (type: string, count: number) => last.set(type, (last.get(type) ?? 0) + count),
    reserve: (type: string, count: number) =>
      Effect.sync(() => {
        calls.push(type)
        last.set(type, (last.get(type) ?? 0) + count)
        return last.get(type)!
      })
  }
}

/** Gives `n` ids of `type` as one batch would: each after the last, then marked given. */
const give = (blocks: ReturnType<typeof makeIdBlocks>, type: string, n: number) => {
  const ids: Array<number | undefined> = []
  let after: number | undefined
  for (let i = 0; i < n; i++) {
    const id = blocks.next(type, after)
    ids.push(id)
    if (id !== undefined) after = id
  }
  if (after !== undefined) blocks.gave(type, after)
  return ids
}

describe("a node's blocks of ids", () => {
  it("gives 1, 2, 3… from its first block, and reserves the next before it runs out: one node's ids follow on", () => {
    const s = store()
    const blocks = makeIdBlocks(10, s.reserve)
    expect(blocks.next("loans", undefined)).toBeUndefined()
    Effect.runSync(blocks.refill([]))
    expect(give(blocks, "loans", 3)).toEqual([1, 2, 3])
    Effect.runSync(blocks.refill([]))
    expect(s.calls).toEqual(["loans"])
    expect(give(blocks, "loans", 4)).toEqual([4, 5, 6, 7])
    // Less than half a block left: the next block is reserved ahead, and continues this one.
    Effect.runSync(blocks.refill([]))
    expect(s.calls).toEqual(["loans", "loans"])
    expect(give(blocks, "loans", 8)).toEqual([8, 9, 10, 11, 12, 13, 14, 15])
  })

  it("skips the ids another node reserved, and gives nothing past its blocks until a refill", () => {
    const s = store()
    const blocks = makeIdBlocks(4, s.reserve)
    Effect.runSync(blocks.refill(["members"]))
    s.elsewhere("members", 4)
    expect(give(blocks, "members", 3)).toEqual([1, 2, 3])
    Effect.runSync(blocks.refill([]))
    expect(give(blocks, "members", 4)).toEqual([4, 9, 10, 11])
    expect(give(blocks, "members", 2)).toEqual([12, undefined])
    Effect.runSync(blocks.refill([]))
    expect(give(blocks, "members", 1)).toEqual([13])
  })

  it("an id decided in a batch is never given again, written or not", () => {
    const s = store()
    const blocks = makeIdBlocks(100, s.reserve)
    Effect.runSync(blocks.refill(["books"]))
    expect(blocks.next("books", undefined)).toBe(1)
    blocks.gave("books", 1)
    // The batch failed, or its create was refused: decided again, it takes the next id.
    expect(blocks.next("books", undefined)).toBe(2)
  })

  it("a clean stop gives back the unused end of the last block: the next node goes on from the last id given", () => {
    const s = store()
    const first = makeIdBlocks(10, s.reserve)
    Effect.runSync(first.refill(["loans", "members"]))
    expect(give(first, "loans", 3)).toEqual([1, 2, 3])
    expect(Effect.runSync(first.giveBack(s.release))).toEqual(["loans", "members"])
    expect([s.highest("loans"), s.highest("members")]).toEqual([3, 0])
    const next = makeIdBlocks(10, s.reserve)
    Effect.runSync(next.refill(["loans"]))
    expect(give(next, "loans", 2)).toEqual([4, 5])
  })

  it("gives nothing back when another node reserved after its last block: those ids stay unused", () => {
    const s = store()
    const blocks = makeIdBlocks(10, s.reserve)
    Effect.runSync(blocks.refill(["loans"]))
    expect(give(blocks, "loans", 3)).toEqual([1, 2, 3])
    s.elsewhere("loans", 10)
    expect(Effect.runSync(blocks.giveBack(s.release))).toEqual([])
    expect(s.highest("loans")).toBe(20)
  })

  it("nodes reserving, giving and stopping cleanly in any order never give one id twice", () => {
    let seed = 12345
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed % n
    }
    for (let round = 0; round < 200; round++) {
      const s = store()
      const given: Array<number> = []
      const fresh = () => makeIdBlocks(1 + random(8), s.reserve)
      const nodes = [fresh(), fresh(), fresh()]
      for (let step = 0; step < 60; step++) {
        const n = random(nodes.length)
        const action = random(3)
        if (action === 0) Effect.runSync(nodes[n].refill(["loans"]))
        else if (action === 1) given.push(...give(nodes[n], "loans", 1 + random(5)).filter((id) => id !== undefined))
        else {
          Effect.runSync(nodes[n].giveBack(s.release))
          nodes[n] = fresh() // the node stopped; another starts in its place
        }
      }
      expect(new Set(given).size, `round ${round}`).toBe(given.length)
      expect(Math.max(0, ...given)).toBeLessThanOrEqual(s.highest("loans"))
    }
  })
})
