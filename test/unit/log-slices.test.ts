/**
 * Reading the classic-level log in slices (`readFrom(from, { slice })`): a serving reader gets at most `slice`
 * decoded events per chunk, each slice decoded only when pulled, while tools keep the log's big batches; and the
 * `/api/_events` catch-up reads it that way. Counts and order only, no timing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Chunk, Effect, Either, Layer, ManagedRuntime, Scope, Stream } from "effect"
import type { StoredEvent } from "../../src/domain/events.ts"
import { PAGE } from "../../src/http/streams/catch-up.ts"
import { makeEventTail } from "../../src/http/routes/event-tail.ts"
import { makeOpenStreams } from "../../src/http/streams/open-streams.ts"
import { makeStreamHub } from "../../src/http/streams/stream-hub.ts"
import { makeClassicLevelLog } from "../../src/log/classic-level/classic-level-log.ts"
import { EventLog, type EventLogShape, type ReadOptions } from "../../src/log/event-log.ts"
import { LevelDb, levelDbLayer, type LevelDbShape } from "../../src/log/classic-level/level-db.ts"
import { READ_BATCH } from "../../src/log/classic-level/level-records.ts"
import * as K from "../../src/log/classic-level/log-keys.ts"
import { makeChangeFeed } from "../../src/subscriptions/change-feed.ts"
import { makeRows } from "../../src/projections/rows/rows.ts"
import { FakeSocket } from "../../testkit/fake-socket.ts"
import { tempDir } from "../../testkit/server.ts"

const EVENTS = 3000
const event = (seq: number): StoredEvent => ({ seq, at: 0, type: "products", id: String(seq), version: 1, kind: "created", data: { name: `p${seq}` } })
const seqs = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

/** The sizes of the chunks a read of the log yields, and the seqs in them. */
const chunksOf = (stream: Stream.Stream<StoredEvent, unknown>) =>
  Effect.map(Stream.runCollect(Stream.chunks(stream)), (chunks) => ({
    sizes: Chunk.toReadonlyArray(chunks).map(Chunk.size),
    seqs: Chunk.toReadonlyArray(chunks).flatMap((c) => Chunk.toReadonlyArray(c).map((e) => e.seq))
  }))

const open = (prefix: string) => {
  const logLayer = Layer.scoped(EventLog, Effect.flatMap(LevelDb, (db) => makeClassicLevelLog(db, { writer: { acceptDataLoss: false, ackedRecord: false } })))
  return ManagedRuntime.make(logLayer.pipe(Layer.provideMerge(levelDbLayer(tempDir(prefix)))))
}

describe("the classic-level log read in slices", () => {
  let runtime: ManagedRuntime.ManagedRuntime<LevelDb | EventLog, unknown>
  let h: LevelDbShape
  let log: EventLogShape
  beforeAll(async () => {
    runtime = open("wo-log-slices-")
    h = await runtime.runPromise(LevelDb)
    log = await runtime.runPromise(EventLog)
    for (let from = 1; from <= EVENTS; from += 1000) {
      const batch = seqs(from, from + 999).map((seq) => ({ event: event(seq), row: { id: String(seq), version: 1, name: `p${seq}` } }))
      await runtime.runPromise(log.append({ entries: batch, counters: new Map([["products", from + 999]]) }))
    }
  })
  afterAll(() => runtime.dispose())

  it("yields every event once, in order, at most `slice` per chunk; without it, the big batches", async () => {
    const sliced = await runtime.runPromise(chunksOf(log.readFrom(1, { slice: 100 })))
    expect(sliced.seqs).toEqual(seqs(1, EVENTS))
    expect(Math.max(...sliced.sizes)).toBe(100)
    const fromMiddle = await runtime.runPromise(chunksOf(log.readFrom(1501, { slice: 128 })))
    expect(fromMiddle.seqs).toEqual(seqs(1501, EVENTS))
    expect(Math.max(...fromMiddle.sizes)).toBeLessThanOrEqual(128)
    const whole = await runtime.runPromise(chunksOf(log.readFrom(1)))
    expect(whole.seqs).toEqual(seqs(1, EVENTS))
    expect(Math.max(...whole.sizes)).toBe(READ_BATCH)
  })

  it("decodes a slice only when it is pulled: a corrupt record past the first slice fails the second pull, not the first", async () => {
    const dir = open("wo-log-slices-corrupt-")
    try {
      const corrupted = await dir.runPromise(Effect.gen(function* () {
        const db = yield* LevelDb
        const stored = yield* EventLog
        yield* stored.append({ entries: seqs(1, 300).map((seq) => ({ event: event(seq), row: null })), counters: new Map() })
        yield* db.write("corrupt one record", (d) => d.put(K.eventKey(150), "not a sealed record"))
        /** The outcome of each of the first `n` pulls of a read. */
        const pulls = (options: ReadOptions | undefined, n: number) =>
          Effect.scoped(Effect.gen(function* () {
            const pull = yield* Stream.toPull(stored.readFrom(1, options))
            const outcomes: Array<string> = []
            for (let i = 0; i < n; i++) {
              const chunk = yield* Effect.either(pull)
              outcomes.push(Either.isRight(chunk) ? `${Chunk.size(chunk.right)} events` : "failed")
              if (Either.isLeft(chunk)) break
            }
            return outcomes
          }))
        return { sliced: yield* pulls({ slice: 100 }, 3), whole: yield* pulls(undefined, 1) }
      }))
      expect(corrupted.sliced).toEqual(["100 events", "failed"])
      expect(corrupted.whole).toEqual(["failed"])
    } finally {
      await dir.dispose()
    }
  })

  it("a reader of /api/_events catching up over 3,000 events sends each once, in order, asking the log for slices of at most PAGE", async () => {
    const chunkSizes: Array<number> = []
    const asked: Array<number | undefined> = []
    const spied: EventLogShape = {
      ...log,
      readFrom: (from, options) => {
        asked.push(options?.slice)
        return log.readFrom(from, options).pipe(Stream.mapChunks((chunk) => (chunkSizes.push(Chunk.size(chunk)), chunk)))
      }
    }
    const streams = makeOpenStreams({ maxListensPerClient: 1, maxListenStreams: 1, maxEventTailsPerClient: 4, maxEventTails: 10 })
    const rows = makeRows(new Map(), EVENTS, { rows: 0, events: 0, tailEvents: 0, millis: 0 })
    const tail = makeEventTail({ log: spied, feed: makeChangeFeed(), rows, capacity: 16, heartbeatMs: 60_000, streams, maxPerClient: 4, maxTotal: 10 })
    const socket = new FakeSocket()
    const ids = () => [...socket.text().matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))
    await runtime.runPromise(Effect.scoped(Effect.gen(function* () {
      const response = tail({ method: "GET", path: "/api/_events", query: new URLSearchParams(""), search: "", headers: {}, body: Buffer.alloc(0), remoteAddress: "127.0.0.1" })
      if (response._tag !== "Push") return yield* Effect.die(`expected a push stream, got ${response.status}`)
      const scope = yield* Effect.scope
      yield* Effect.forkIn(Scope.extend(response.start(makeStreamHub().open(socket, 17)), scope), scope)
      yield* Effect.promise(async () => {
        for (let turns = 0; ids().length < EVENTS && turns < 10_000; turns++) await new Promise((r) => setImmediate(r))
      })
    })))
    expect(ids()).toEqual(seqs(1, EVENTS))
    expect(asked.length).toBeGreaterThan(0)
    expect(asked.every((slice) => slice !== undefined && slice <= PAGE)).toBe(true)
    expect(chunkSizes.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(EVENTS)
    expect(Math.max(...chunkSizes)).toBeLessThanOrEqual(PAGE)
  })
})
