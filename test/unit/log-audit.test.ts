/**
 * The startup log audit (log-audit.ts) over a real classic-level log of several read batches: it counts every
 * event, and read paced (paced-read.ts) it gives the event loop a turn whenever it has worked for PACED_MS,
 * which a turn counter (testkit/turn-counter.ts) shows by order, against a clock that the test moves.
 */
import { Chunk, Effect, Layer, ManagedRuntime, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Change } from "../../src/domain/events.ts"
import { makeClassicLevelLog } from "../../src/log/classic-level/classic-level-log.ts"
import { EventLog, type EventLogShape } from "../../src/log/event-log.ts"
import { auditPaced } from "../../src/log/log-audit.ts"
import { makePacer, PACED_FETCH, PACED_MS, PACED_SLICE } from "../../src/log/paced-read.ts"
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
    expect(await runtime.runPromise(Stream.runCount(log.readFrom(1)))).toBe(EVENTS)
  })

  it("read paced, counts every event of the log", async () => {
    expect(await runtime.runPromise(auditPaced(log))).toBe(EVENTS)
    // Decoded, as a log that keeps no sealed records (PostgreSQL) is read.
    expect(await runtime.runPromise(auditPaced({ ...log, readSealedFrom: undefined }))).toBe(EVENTS)
  })

  it("from a seq, counts the events from there on (those before were checked by another reader)", async () => {
    expect(await runtime.runPromise(auditPaced(log, makePacer(), 1001))).toBe(EVENTS - 1000)
    expect(await runtime.runPromise(auditPaced({ ...log, readSealedFrom: undefined }, makePacer(), EVENTS))).toBe(1)
  })

  it("read paced, gives the event loop a turn once it has worked for PACED_MS, in slices", async () => {
    // Each look at the clock finds 0.4 PACED_MS more of work done: the pacer lets the loop turn at every third slice.
    let clock = 0
    const pacer = makePacer(() => (clock += 0.4 * PACED_MS))
    const counter = countTurns()
    const turnAtSlice: Array<number> = []
    const sliceSizes = new Set<number>()
    const fetchSizes = new Set<number>()
    let worked = 0
    const read = Stream.runForEachChunk(pacer.read(log, 1), (chunk) => {
      fetchSizes.add(chunk.length)
      return pacer.slices(Chunk.toReadonlyArray(chunk), (slice) => Effect.sync(() => {
        turnAtSlice.push(counter.turns())
        sliceSizes.add(slice.length)
        worked += slice.length
      }))
    })
    try {
      await runtime.runPromise(read)
    } finally {
      counter.stop()
    }
    expect(worked).toBe(EVENTS)
    // Fetched PACED_FETCH events at a time, worked in slices of at most PACED_SLICE (a fetch's last may be shorter).
    expect(Math.max(...fetchSizes)).toBe(PACED_FETCH)
    expect(Math.max(...sliceSizes)).toBe(PACED_SLICE)
    expect(turnAtSlice.length).toBeGreaterThanOrEqual(EVENTS / PACED_SLICE)
    // Slices read within one turn of the loop: never more than the three that PACED_MS holds.
    const perTurn = new Map<number, number>()
    for (const turn of turnAtSlice) perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1)
    expect(Math.max(...perTurn.values()), `slices per turn: ${[...perTurn.values()].join(",")}`).toBeLessThanOrEqual(3)
    expect(perTurn.size).toBeGreaterThanOrEqual(turnAtSlice.length / 3)
  })
})
