/**
 * The plan of a batch against a picture of the shared log (log/postgres/append-plan.ts), with no database: the
 * seqs it takes, the ids it keeps (handed out in a block, free) or assigns to creates, what it leaves out as Stale or Duplicate (an app command
 * whole or not at all), and the result moved when the function wrote it behind other nodes' commits.
 */
import { describe, expect, it } from "vitest"
import type { Row } from "../../src/domain/catalog.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { Duplicate, isWritten, Stale, type AppendBatch, type AppendEntry, type StoredKey } from "../../src/log/event-log.ts"
import { expected, plan, shifted, touchedBy, type LogState } from "../../src/log/postgres/append-plan.ts"
import { makeLogPicture } from "../../src/log/postgres/log-picture.ts"
import { eventColumns } from "../../src/log/postgres/records.ts"

const entry = (
  seq: number,
  type: string,
  id: string,
  kind: StoredEvent["kind"],
  version: number,
  extra: Partial<StoredEvent> = {}
): AppendEntry => {
  const event: StoredEvent = { seq, at: 1_000, type, id, version, kind, data: kind === "deleted" ? {} : { n: seq }, ...extra }
  const row: Row | null = kind === "deleted" ? null : { id, version, n: seq }
  return { event, row, rowJson: row === null ? null : JSON.stringify(row) }
}

const batchOf = (entries: ReadonlyArray<AppendEntry>, extra: Partial<AppendBatch> = {}): AppendBatch => ({ entries, counters: new Map(), ...extra })

/** The log as the function answered it. */
const logState = (head: number, state: Partial<Omit<LogState, "head">> = {}): LogState => ({
  head,
  keys: state.keys ?? new Map(),
  versions: state.versions ?? new Map(),
  counts: state.counts ?? new Map(),
  ...(state.taken === undefined ? {} : { taken: state.taken })
})

const planOn = (batch: AppendBatch, state: LogState) => plan(batch, state, touchedBy(batch), "node-a")

const written = (outcome: unknown): AppendEntry => {
  expect(isWritten(outcome as AppendEntry)).toBe(true)
  return outcome as AppendEntry
}

describe("the plan of a batch on the shared log", () => {
  it("on a right picture, takes the seqs after the head, keeps the entries as decided, and moves the counters", () => {
    const picture = makeLogPicture(10, [{ type: "products", lastId: 5, rowCount: 5 }])
    const batch = batchOf([entry(11, "products", "6", "created", 1), entry(12, "products", "2", "updated", 3)])
    const touched = touchedBy(batch)
    const planned = plan(batch, expected(picture, touched), touched, "node-a")

    expect(planned.writes).toBe(true)
    expect(planned.result.lastSeq).toBe(12)
    expect(planned.result.replays).toBeUndefined()
    // The same events, not copies: the writer answers its changes as they are.
    expect(written(planned.result.outcomes[0]).event).toBe(batch.entries[0].event)
    expect(written(planned.result.outcomes[1]).event).toBe(batch.entries[1].event)
    expect(planned.counts.get("products")).toEqual({ lastId: 6, rowCount: 6 })
    expect(planned.last?.seq).toBe(12)
    expect(planned.last?.checksum).toBe(eventColumns(batch.entries[1].event).checksum)
    // What the function checks first: the head, then (after the keys) the entities at the versions decided on.
    expect(planned.args[0]).toBe(10)
    expect(planned.args.slice(3, 6)).toEqual([["products"], ["2"], [2]])
    // The picture itself is left as it was: it moves once the batch is written.
    expect(picture.counts.get("products")).toEqual({ lastId: 5, rowCount: 5 })
  })

  it("after other nodes' commits to other entities, takes the seqs after the head as the log answers it", () => {
    const batch = batchOf([entry(11, "products", "2", "updated", 3), entry(12, "products", "2", "updated", 4)])
    const planned = planOn(batch, logState(15, { versions: new Map([["products/2", 2]]) }))

    expect(planned.result.outcomes.map((o) => written(o).event.seq)).toEqual([16, 17])
    expect(planned.result.outcomes.map((o) => written(o).event.version)).toEqual([3, 4])
    expect(planned.result.lastSeq).toBe(17)
    // The batch's own entries are never changed in place.
    expect(batch.entries[0].event.seq).toBe(11)
  })

  it("gives a create the type's next id in the log, rewrites its row, and leaves out what was decided on the old id", () => {
    const batch = batchOf([
      entry(11, "products", "6", "created", 1),
      entry(12, "products", "6", "updated", 2),
      entry(13, "orders", "1", "created", 1)
    ])
    // Another node created products 6 and 7 meanwhile (the store answers that a row has id 6).
    const planned = planOn(batch, logState(12, { counts: new Map([["products", { lastId: 7, rowCount: 7 }]]), taken: new Set(["products/6"]) }))

    const create = written(planned.result.outcomes[0])
    expect(create.event).toMatchObject({ seq: 13, type: "products", id: "8", version: 1 })
    expect(create.row).toMatchObject({ id: "8" })
    expect(JSON.parse(create.rowJson!)).toMatchObject({ id: "8" })
    expect(planned.result.outcomes[1]).toBe(Stale)
    expect(written(planned.result.outcomes[2]).event).toMatchObject({ seq: 14, type: "orders", id: "1" })
    expect(planned.counts.get("products")).toEqual({ lastId: 8, rowCount: 8 })
    expect(planned.counts.get("orders")).toEqual({ lastId: 1, rowCount: 1 })
    expect(planned.result.lastSeq).toBe(14)
  })

  it("keeps a create's id the store handed out (a node's block) that no row has, and checks no counter: other nodes' creates do not move it", () => {
    const command = { command: "lend", correlation: "c9" }
    // Blocks up to 120 are handed out; this node's block holds 57.
    const batch = batchOf([entry(31, "loans", "57", "created", 1, command), entry(32, "books", "2", "updated", 2, command), entry(33, "loans", "58", "created", 1)])
    const planned = planOn(batch, logState(30, { versions: new Map([["books/2", 1]]), counts: new Map([["loans", { lastId: 120, rowCount: 40 }]]) }))

    expect(planned.result.outcomes.map((o) => (isWritten(o) ? o.event.id : o))).toEqual(["57", "2", "58"])
    expect(planned.counts.get("loans")).toEqual({ lastId: 120, rowCount: 42 })
    // The arguments: no expected last id (the store checks the ids are handed out and free), the row count moved by 2.
    const typesAt = planned.args.findIndex((a) => Array.isArray(a) && a.length === 1 && a[0] === "loans")
    expect(planned.args[typesAt + 1]).toEqual([null])
    const writtenAt = planned.args.length - 1 - [...planned.args].reverse().findIndex((a) => Array.isArray(a) && a.length === 1 && a[0] === "loans")
    expect([planned.args[writtenAt + 1], planned.args[writtenAt + 2]]).toEqual([[120], [2]])
  })

  it("leaves out as Stale an entry decided on a row that moved on, and every later entry of that row", () => {
    const batch = batchOf([
      entry(21, "products", "2", "updated", 3),
      entry(22, "products", "3", "updated", 2),
      entry(23, "products", "2", "deleted", 4)
    ])
    const planned = planOn(batch, logState(20, { versions: new Map([["products/2", 3], ["products/3", 1]]), counts: new Map([["products", { lastId: 3, rowCount: 3 }]]) }))

    expect(planned.result.outcomes[0]).toBe(Stale)
    expect(written(planned.result.outcomes[1]).event.seq).toBe(21)
    expect(planned.result.outcomes[2]).toBe(Stale)
    // The delete was left out: the row count stays.
    expect(planned.counts.get("products")).toEqual({ lastId: 3, rowCount: 3 })
    expect(planned.result.lastSeq).toBe(21)
  })

  it("writes an app command's entries all or none: one stale entry leaves the group out and undoes what it counted", () => {
    const command = { command: "place_order", correlation: "c1" }
    const batch = batchOf([
      entry(31, "orders", "3", "created", 1, command),
      entry(32, "products", "2", "updated", 5, command),
      entry(33, "orders", "4", "created", 1)
    ])
    const planned = planOn(batch, logState(30, {
      versions: new Map([["products/2", 5]]), // another node moved products/2 past the version the command read
      counts: new Map([["orders", { lastId: 2, rowCount: 2 }]])
    }))

    expect(planned.result.outcomes.slice(0, 2)).toEqual([Stale, Stale])
    // The group's create is undone, so the single create after it gets the id the group would have taken.
    expect(written(planned.result.outcomes[2]).event).toMatchObject({ seq: 31, id: "3" })
    expect(planned.counts.get("orders")).toEqual({ lastId: 3, rowCount: 3 })
    expect(planned.result.lastSeq).toBe(31)
  })

  it("leaves an app command out when one of its creates would get another id than it was decided with", () => {
    const command = { command: "place_order", correlation: "c2" }
    const batch = batchOf([entry(41, "orders", "3", "created", 1, command), entry(42, "products", "2", "updated", 2, command)])
    const planned = planOn(batch, logState(40, {
      versions: new Map([["products/2", 1]]),
      counts: new Map([["orders", { lastId: 3, rowCount: 3 }]]), // another node took order 3
      taken: new Set(["orders/3"])
    }))

    expect(planned.result.outcomes).toEqual([Stale, Stale])
    expect(planned.writes).toBe(false)
    expect(planned.counts.get("orders")).toEqual({ lastId: 3, rowCount: 3 })
  })

  it("answers a submission whose key is stored with the stored answer, and writes nothing when nothing else is left", () => {
    const stored: StoredKey = { key: "k1", fingerprint: "f", at: 900, entries: [] }
    const batch = batchOf([entry(51, "products", "2", "updated", 3), entry(52, "products", "2", "updated", 4)], {
      keys: [{ key: "k1", fingerprint: "f", at: 1_000, first: 0, count: 1 }]
    })
    const planned = planOn(batch, logState(50, { keys: new Map([["k1", stored]]), versions: new Map([["products/2", 2]]) }))

    expect(planned.result.outcomes).toEqual([Duplicate, Stale])
    expect(planned.result.replays?.get("k1")).toBe(stored)
    expect(planned.writes).toBe(false)
    expect(planned.result.lastSeq).toBe(50)
    expect(planned.last).toBeUndefined()
  })

  it("a result written behind other nodes' commits moves every written seq by the shift, and nothing else", () => {
    const batch = batchOf([entry(61, "products", "2", "updated", 3), entry(62, "products", "9", "updated", 2)])
    const planned = planOn(batch, logState(60, { versions: new Map([["products/2", 2], ["products/9", 5]]) }))
    expect(planned.result.outcomes[1]).toBe(Stale)

    const moved = shifted(planned, 4)
    expect(written(moved.result.outcomes[0]).event).toMatchObject({ seq: 65, id: "2", version: 3 })
    expect(moved.result.outcomes[1]).toBe(Stale)
    expect(moved.result.lastSeq).toBe(65)
    expect(moved.last).toEqual({ seq: 65, checksum: planned.last!.checksum })
    expect(shifted(planned, 0)).toBe(planned)
  })
})
