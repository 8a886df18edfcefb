/**
 * References in the plan of a batch on the shared log (log/postgres/append-plan.ts), with no database: which
 * references the function is asked to check (a row the batch itself creates earlier settles it), and what the plan
 * leaves out as Stale on the log as the function answered it (a referenced row gone, a deleted row still
 * referenced), an app command whole.
 */
import { describe, expect, it } from "vitest"
import type { StoredEvent } from "../../src/domain/events.ts"
import { isWritten, type AppendBatch, type AppendEntry, type BatchReferences } from "../../src/log/event-log.ts"
import { plan, touchedBy, type LogState } from "../../src/log/postgres/append-plan.ts"

const entry = (type: string, id: string, kind: StoredEvent["kind"], version: number, data: Record<string, unknown> = {}, correlation?: string): AppendEntry => {
  const event: StoredEvent = { seq: 0, at: 1_000, type, id, version, kind, data, ...(correlation === undefined ? {} : { command: "c", correlation }) }
  return { event, row: kind === "deleted" ? null : { id, version, ...data } }
}

const state = (extra: Partial<LogState> = {}): LogState => ({
  head: 10,
  keys: new Map(),
  versions: new Map([["members/1", 1], ["loans/4", 1]]),
  counts: new Map([["members", { lastId: 3, rowCount: 3 }], ["loans", { lastId: 4, rowCount: 4 }]]),
  ...extra
})

const planOn = (entries: ReadonlyArray<AppendEntry>, references: BatchReferences, on: LogState) => {
  const batch: AppendBatch = { entries, counters: new Map(), references }
  return plan(batch, on, touchedBy(batch), "node-a")
}

/** The function's reference arguments, the plan's last nine: since, targets (type, id, checked), deletes (type, id, by type, by field, checked). */
const referenceArgs = (args: ReadonlyArray<unknown>) => args.slice(-9)

const outcomes = (p: ReturnType<typeof planOn>) => p.result.outcomes.map((o) => (isWritten(o) ? `${o.event.type}/${o.event.id}` : o._tag))

describe("references in the plan of a batch on the shared log", () => {
  it("asks the function to check a referenced row unless an earlier entry of the batch creates it, and answers on every one", () => {
    const entries = [
      entry("members", "4", "created", 1, { name: "d" }, "g"),
      entry("loans", "5", "created", 1, { member: "4" }, "g"),
      entry("loans", "6", "created", 1, { member: "1" })
    ]
    const references: BatchReferences = {
      decidedAt: 9,
      targets: new Map([[1, [{ type: "members", id: "4" }]], [2, [{ type: "members", id: "1" }]]]),
      incoming: new Map()
    }
    const planned = planOn(entries, references, state())
    expect(outcomes(planned)).toEqual(["members/4", "loans/5", "loans/6"])
    expect(referenceArgs(planned.args)).toEqual([9, ["members", "members"], ["4", "1"], [false, true], [], [], [], [], []])
  })

  it("leaves out an entry whose referenced row is gone, and a whole command when one of its entries' is", () => {
    const references: BatchReferences = {
      decidedAt: 9,
      targets: new Map([[1, [{ type: "members", id: "2" }]], [2, [{ type: "members", id: "1" }]], [3, [{ type: "members", id: "2" }]]]),
      incoming: new Map()
    }
    const entries = [
      entry("members", "4", "created", 1, { name: "d" }, "g"),
      entry("loans", "5", "created", 1, { member: "2" }, "g"),
      entry("loans", "5", "created", 1, { member: "1" }),
      entry("loans", "6", "created", 1, { member: "2" })
    ]
    const planned = planOn(entries, references, state({ missing: new Set(["members/2"]) }))
    // The command (members 4 and its loan) is left out whole; the loan to member 1 takes the next id.
    expect(outcomes(planned)).toEqual(["Stale", "Stale", "loans/5", "Stale"])
    expect(planned.counts.get("members")).toEqual({ lastId: 3, rowCount: 3 })
    // Only the written loan's reference is checked; the function answers on all of them.
    expect(referenceArgs(planned.args).slice(1, 4)).toEqual([["members", "members"], ["2", "1"], [false, true]])
  })

  it("asks the function whether a newer row references a row the batch deletes, and leaves the delete out when one does", () => {
    const references: BatchReferences = { decidedAt: 7, targets: new Map(), incoming: new Map([[0, [{ type: "loans", field: "member" }]]]) }
    const entries = [entry("members", "1", "deleted", 2)]
    const asked = planOn(entries, references, state())
    expect(outcomes(asked)).toEqual(["members/1"])
    expect(referenceArgs(asked.args)).toEqual([7, [], [], [], ["members"], ["1"], ["loans"], ["member"], [true]])
    const answered = planOn(entries, references, state({ referenced: new Set(["members/1"]) }))
    expect(outcomes(answered)).toEqual(["Stale"])
    expect(answered.writes).toBe(false)
    expect(referenceArgs(answered.args).slice(4)).toEqual([["members"], ["1"], ["loans"], ["member"], [false]])
  })

  it("a batch that references nothing asks nothing", () => {
    const batch: AppendBatch = { entries: [entry("members", "4", "created", 1, { name: "d" })], counters: new Map() }
    expect(referenceArgs(plan(batch, state(), touchedBy(batch), "node-a").args)).toEqual([0, [], [], [], [], [], [], [], []])
  })
})
