/**
 * The writer's decision of one batch (commands/decide-batch.ts), without a log, a writer or any timing: a batch of
 * pricing commands in, changes, refusals and commands to decide again out. The rows are the real in-memory
 * projection; the decision must read them and never change them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import pricing from "../../examples/pricing/app.ts"
import { decideBatch, type BatchStart } from "../../src/commands/decide-batch.ts"
import type { Pending, Queued } from "../../src/commands/submission.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { toIntent, type Command } from "../../src/domain/decide/intent.ts"
import { makeRows } from "../../src/projections/rows/rows.ts"
import { RowTable } from "../../src/projections/rows/row-table.ts"
import { create, setPrice } from "./pricing-commands.ts"
import { IN_PROCESS } from "../../src/domain/actor.ts"

const app = Either.getOrThrow(compileApp(pricing))
const products = app.types.get("products")!

/** A queued single-row write, as the queue holds it (nobody to answer: the decision answers nobody). */
const queued = (command: Command, recheck = false): Pending => ({
  type: products,
  ...(command._tag === "Create" ? {} : { id: command.id }),
  intent: Either.getOrThrow(toIntent(products, command)),
  actor: IN_PROCESS,
  ...(command._tag !== "Create" && command.expectedVersion !== undefined ? { expectedVersion: command.expectedVersion } : {}),
  resume: () => {
    throw new Error("decideBatch must not answer anyone")
  },
  cancelled: false,
  attempts: 0,
  recheck,
  arrivedAt: 0,
  answered: false
})

/** Rows holding product 1 at version 1 (price 10); the log's head at seq 1. */
const oneProduct = () => {
  const table = new RowTable()
  table.set({ id: "1", version: 1, name: "lamp", price: 10, currency: "USD" })
  return makeRows(new Map([["products", table]]), 1, { rows: 1, events: 1, tailEvents: 0, millis: 0 })
}

const local: BatchStart = { lastSeq: 1, counters: new Map([["products", 1]]), at: 1000, shared: false }
const shared: BatchStart = { ...local, shared: true }

describe("decideBatch", () => {
  it("decides each command against the rows plus the batch so far, with consecutive seqs and the next ids", () => {
    const rows = oneProduct()
    const batch: Array<Queued> = [queued(create("desk", 5)), queued(setPrice("1", 11)), queued(setPrice("2", 6)), queued(setPrice("1", 12))]
    const decided = decideBatch(batch, rows, local)

    expect(decided.changes.map((c) => [c.event.seq, c.event.id, c.event.version, c.event.kind])).toEqual([
      [2, "2", 1, "created"],
      [3, "1", 2, "invoked"],
      [4, "2", 2, "invoked"],
      [5, "1", 3, "invoked"]
    ])
    // The second set_price on product 1 was decided against the first one's row, not the stored one.
    expect(decided.changes[3].before).toMatchObject({ version: 2, price: 11 })
    expect(decided.changes[3].row).toMatchObject({ version: 3, price: 12 })
    expect(decided.changes.map((c) => c.rowJson === null ? null : JSON.parse(c.rowJson))).toEqual(decided.changes.map((c) => c.row))
    expect(decided.waiters).toEqual(batch)
    expect(decided.spans).toEqual([1, 1, 1, 1])
    expect([...decided.moved]).toEqual([["products", 2]])
    expect(decided.refused).toEqual([])
    expect(decided.again).toEqual([])
    // Pure: the rows are as they were.
    expect(rows.get("products", "1")).toMatchObject({ version: 1, price: 10 })
    expect(rows.get("products", "2")).toBeUndefined()
  })

  it("refuses a command alone, and the batch after it takes the seq it did not use", () => {
    const stale = queued(setPrice("1", 11, 7))
    const rejected = queued(setPrice("1", -1))
    const fine = queued(setPrice("1", 12))
    const decided = decideBatch([stale, rejected, fine], oneProduct(), local)

    expect(decided.refused.map(([p, e]) => [p, e._tag])).toEqual([[stale, "VersionConflict"], [rejected, "Rejected"]])
    expect(decided.changes.map((c) => [c.event.seq, c.event.version])).toEqual([[2, 2]])
    expect(decided.waiters).toEqual([fine])
    // A single-writer log's rows are the truth: nothing is decided again.
    expect(decided.again).toEqual([])
    expect(decided.rechecks).toEqual([])
  })

  it("skips cancelled submissions and those already answered", () => {
    const cancelled = { ...queued(setPrice("1", 11)), cancelled: true }
    const answered = queued(setPrice("1", 12))
    const decided = decideBatch([cancelled, answered, queued(setPrice("1", 13))], oneProduct(), local, new Set([answered]))
    expect(decided.changes.map((c) => c.row)).toEqual([expect.objectContaining({ price: 13, version: 2 })])
  })

  it("on a shared log, decides again once caught up a command refused against rows that may lag, but only once", () => {
    const unknown = queued(setPrice("9", 11))
    const conflicting = queued(setPrice("1", 11, 5))
    const first = decideBatch([unknown, conflicting], oneProduct(), shared)
    expect(first.refused).toEqual([])
    expect(first.again).toEqual([unknown, conflicting])
    expect(first.rechecks).toEqual([unknown, conflicting])

    const second = decideBatch([queued(setPrice("9", 11), true), queued(setPrice("1", 11, 5), true)], oneProduct(), shared)
    expect(second.refused.map(([, e]) => e._tag)).toEqual(["NotFound", "VersionConflict"])
    expect(second.again).toEqual([])
  })

  it("on a shared log, a command on an entity this batch creates waits for the next batch (the log may give it another id)", () => {
    const onNew = queued(setPrice("2", 6))
    const decided = decideBatch([queued(create("desk", 5)), onNew], oneProduct(), shared)
    expect(decided.changes.map((c) => [c.event.kind, c.event.id])).toEqual([["created", "2"]])
    expect(decided.again).toEqual([onNew])
    // Not a refusal that needs the rows to catch up: it is simply decided in the next batch.
    expect(decided.rechecks).toEqual([])
  })
})
