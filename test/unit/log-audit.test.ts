/**
 * The startup log audit (log-audit.ts) over a real classic-level log of several read batches: it counts every
 * event, and between two batches the event loop takes a turn (a request arriving meanwhile waits behind at most
 * one batch), which a turn counter (testkit/turn-counter.ts) shows by order, not time.
 */
import { Effect, Layer, ManagedRuntime, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Change } from "../../src/domain/events.ts"
import { makeClassicLevelLog } from "../../src/log/classic-level/classic-level-log.ts"
import { EventLog, type EventLogShape } from "../../src/log/event-log.ts"
import { auditEvents } from "../../src/log/log-audit.ts"
import { LevelDb, levelDbLayer } from "../../src/log/classic-level/level-db.ts"
import { READ_BATCH } from "../../src/log/classic-level/level-records.ts"
import { tempDir } from "../../testkit/server.ts"
import { countTurns } from "../../testkit/turn-counter.ts"

const BATCHES = 6
const EVENTS = BATCHES * READ_BATCH

describe("log audit", () => {
  let runtime: ManagedRuntime.ManagedRuntime<LevelDb | EventLog, unknown>
  let log: EventLogShape
  beforeAll(async () => {
    const logLayer = Layer.scoped(EventLog, Effect.flatMap(LevelDb, (db) => makeClassicLevelLog(db, { writer: { acceptDataLoss: false, ackedRecord: false } })))
    runtime = ManagedRuntime.make(logLayer.pipe(Layer.provideMerge(levelDbLayer(tempDir("wo-log-audit-")))))
    log = await runtime.runPromise(EventLog)
    for (let seq = 1; seq <= EVENTS; ) {
      const entries: Array<Change> = []
      for (; entries.length < 500 && seq <= EVENTS; seq++) {
        const row = { id: String(seq), version: 1, name: `p${seq}` }
        const event = { seq, at: 0, type: "products", id: row.id, version: 1, kind: "created", data: { name: row.name } }
        entries.push({ event, uri: "", row, before: null } as unknown as Change)
      }
      await runtime.runPromise(log.append({ entries, counters: new Map([["products", seq - 1]]) }))
    }
  })
  afterAll(() => runtime.dispose())

  it("counts every event of the log, verified", async () => {
    expect(await runtime.runPromise(auditEvents(log.readFrom(1)))).toBe(EVENTS)
  })

  it("gives the event loop a turn between two batches, even when the next one is already read", async () => {
    // The log's batches, read beforehand: each is there as soon as it is asked for (as when the log's read-ahead
    // is quicker than the decoding), so only the audit itself can let the event loop turn between them.
    const batches = [...(await runtime.runPromise(Stream.runCollect(Stream.chunks(log.readFrom(1)))))]
    expect(batches.length).toBe(BATCHES)
    const counter = countTurns()
    const ticksAtBatch: Array<number> = []
    const observed = Stream.fromChunks(...batches).pipe(Stream.mapChunks((batch) => (ticksAtBatch.push(counter.turns()), batch)))
    try {
      expect(await runtime.runPromise(auditEvents(observed))).toBe(EVENTS)
    } finally {
      counter.stop()
    }
    expect(ticksAtBatch.length).toBe(BATCHES)
    // Each batch was taken in a later turn of the event loop than the one before.
    for (let i = 1; i < BATCHES; i++) expect(ticksAtBatch[i], `ticks at each batch: ${ticksAtBatch.join(",")}`).toBeGreaterThan(ticksAtBatch[i - 1])
  })
})
