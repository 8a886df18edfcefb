/**
 * A keyed view folded from the log while requests are served (keyed-fold.ts, `paced`): over a real classic-level log
 * of 3,000 events on 1,200 keys, the paced fold reads in small slices, holds its changed entries (reading them back
 * while held) and puts them a thousand or so at a time, and ends with the same entries as a fold that puts each
 * chunk's at once. A write the sink refuses keeps its entries held: the next read puts them, none lost.
 */
import { Effect, Either, Layer, ManagedRuntime, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { defineApp, entity, view } from "../../src/domain/catalog.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { StoreFailed } from "../../src/domain/errors.ts"
import type { Change } from "../../src/domain/events.ts"
import { makeClassicLevelLog } from "../../src/log/classic-level/classic-level-log.ts"
import { LevelDb, levelDbLayer } from "../../src/log/classic-level/level-db.ts"
import { EventLog, type EventLogShape } from "../../src/log/event-log.ts"
import { parseViewEntry, type StoredEntry } from "../../src/log/view-entry-record.ts"
import { HELD_ENTRIES, makeKeyedFolder, type ChangedEntry, type KeyedSink } from "../../src/projections/views/keyed-fold.ts"
import { tempDir } from "../../testkit/server.ts"

const KEYS = 1200
const EVENTS = 3000

const catalog = Either.getOrThrow(compileApp(defineApp({
  name: "tally",
  entities: { marks: entity({ fields: { key: Schema.String, n: Schema.Int } }) },
  views: {
    by_key: view({
      schema: Schema.Struct({ count: Schema.Int, sum: Schema.Int }),
      initial: { count: 0, sum: 0 },
      on: { marks: ["created"] },
      key: ({ after }) => String(after!.key),
      evolve: (entry, { after }) => ({ count: entry.count + 1, sum: entry.sum + Number(after!.n) })
    })
  }
})))
const byKey = catalog.views.get("by_key")!

/** A sink over a map, as the store would hold the entries; the puts numbered in `refused` (from 1) fail. */
const memorySink = (refused: ReadonlyArray<number> = []) => {
  const entries = new Map<string, StoredEntry>()
  const puts: Array<number> = []
  let attempts = 0
  const sink: KeyedSink = {
    read: (_view, key) => entries.get(key),
    put: (_view, changed: ReadonlyArray<ChangedEntry>) => Effect.suspend(() => {
      if (refused.includes(++attempts)) return Effect.fail(new StoreFailed({ reason: "refused by the test" }))
      puts.push(changed.length)
      for (const e of changed) {
        if (e.text === undefined) entries.delete(e.key)
        else entries.set(e.key, parseViewEntry(e.text)!)
      }
      return Effect.void
    })
  }
  return { sink, entries, puts }
}

describe("a keyed view folded paced", () => {
  let runtime: ManagedRuntime.ManagedRuntime<LevelDb | EventLog, unknown>
  let log: EventLogShape
  beforeAll(async () => {
    const logLayer = Layer.scoped(EventLog, Effect.flatMap(LevelDb, (db) => makeClassicLevelLog(db, { writer: { acceptDataLoss: false, ackedRecord: false } })))
    runtime = ManagedRuntime.make(logLayer.pipe(Layer.provideMerge(levelDbLayer(tempDir("wo-keyed-paced-")))))
    log = await runtime.runPromise(EventLog)
    for (let seq = 1; seq <= EVENTS;) {
      const entries: Array<Change> = []
      for (; entries.length < 500 && seq <= EVENTS; seq++) {
        const row = { id: String(seq), version: 1, key: `k${(seq * 7) % KEYS}`, n: seq }
        const event = { seq, at: 0, type: "marks", id: row.id, version: 1, kind: "created", data: { key: row.key, n: row.n } }
        entries.push({ event, uri: "", row, before: null } as unknown as Change)
      }
      await runtime.runPromise(log.append({ entries, counters: new Map([["marks", seq - 1]]) }))
    }
  })
  afterAll(() => runtime.dispose())

  it("puts the entries a thousand or so at a time, and ends with those of a fold that puts each chunk's", async () => {
    const whole = memorySink()
    const wholeFolder = makeKeyedFolder(log, catalog, [byKey], whole.sink)
    expect(await runtime.runPromise(wholeFolder.readTo())).toBe(EVENTS)

    const paced = memorySink()
    const pacedFolder = makeKeyedFolder(log, catalog, [byKey], paced.sink, 0, true)
    expect(await runtime.runPromise(pacedFolder.readTo())).toBe(EVENTS)

    expect(whole.entries.size).toBe(KEYS)
    expect(paced.entries).toEqual(whole.entries)
    // Each key's count and sum, from the log's own arithmetic.
    const expected = new Map<string, { count: number; sum: number }>()
    for (let seq = 1; seq <= EVENTS; seq++) {
      const e = expected.get(`k${(seq * 7) % KEYS}`) ?? { count: 0, sum: 0 }
      expected.set(`k${(seq * 7) % KEYS}`, { count: e.count + 1, sum: e.sum + seq })
    }
    for (const [key, value] of expected) expect(JSON.parse(paced.entries.get(key)!.json)).toEqual(value)
    // Held, then put in a few writes of at least HELD_ENTRIES (but the last), never one per slice.
    expect(paced.puts.length).toBeLessThanOrEqual(Math.ceil(KEYS / HELD_ENTRIES) + 1)
    for (const n of paced.puts.slice(0, -1)) expect(n).toBeGreaterThanOrEqual(HELD_ENTRIES)
  })

  // Which writes the store refuses, numbered from 1, given how many a fold makes when none is refused (a refused
  // write is tried again, one more).
  it.each([
    ["the first write, mid-read", (_n: number) => [1]],
    ["the last write, at the read's end", (n: number) => [n]],
    ["the first and the last", (n: number) => [1, n + 1]]
  ])("keeps the entries of a refused write held, and puts them with the next read: none lost (%s)", async (_what, refusedOf) => {
    const clean = memorySink()
    await runtime.runPromise(makeKeyedFolder(log, catalog, [byKey], clean.sink, 0, true).readTo(EVENTS))
    const refused = refusedOf(clean.puts.length)
    const whole = memorySink()
    await runtime.runPromise(makeKeyedFolder(log, catalog, [byKey], whole.sink).readTo())

    const paced = memorySink(refused)
    const folder = makeKeyedFolder(log, catalog, [byKey], paced.sink, 0, true)
    // Read again after each failure, as the background fold does: from where the read stopped, up to the same bound.
    let failures = 0
    for (;;) {
      const read = await runtime.runPromise(Effect.either(folder.readTo(EVENTS)))
      if (Either.isRight(read)) break
      failures++
      expect(failures).toBeLessThanOrEqual(refused.length)
    }
    expect(failures).toBe(refused.length)
    expect(paced.entries).toEqual(whole.entries)
  })
})
