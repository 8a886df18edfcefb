/**
 * Legacy resumption (resumption.ts), over a log in memory: the notices a GET stream missed are recomputed in
 * the order the registry sends them live (by sequence, the row's own first, then the others by URI), each
 * only after the position and after the sequence its subscription began at; a live query's notices need the
 * row's fields from before the window, read backwards from the log; positions round-trip through their SSE
 * ids; and a long resumption gives the event loop a turn between two slices it reads (shown by order, with a
 * turn counter, not by time).
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Either, Stream } from "effect"
import pricing from "../../examples/pricing/app.ts"
import { compileApp } from "../../src/domain/compile.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { EventLog, type EventLogShape } from "../../src/log/event-log.ts"
import { READ_BATCH } from "../../src/log/classic-level/level-records.ts"
import { storedTopic, type HeldTopic } from "../../src/subscriptions/live-queries.ts"
import { parsePosition, positionId, resumeNotices, SLICE, type ResumePosition } from "../../src/subscriptions/resumption.ts"
import { countTurns } from "../../testkit/turn-counter.ts"
import { MemoryLogLive } from "./memory-log.ts"

const catalog = Either.getOrThrow(compileApp(pricing))

const P1 = "wo://products/1"
const EUR = "wo://products?currency=EUR"
const USD = "wo://products?currency=USD"
const VIEW = "wo://views/products_by_currency"

const event = (seq: number, id: string, version: number, kind: StoredEvent["kind"], data: Record<string, unknown>): StoredEvent =>
  ({ seq, at: 0, type: "products", id, version, kind, data, ...(kind === "invoked" ? { method: "set_price", params: data } : {}) })

/** p1 is made in EUR, repriced, moved to USD; p2 is made in USD and deleted; p3 is made in EUR. */
const HISTORY: ReadonlyArray<StoredEvent> = [
  event(1, "1", 1, "created", { name: "a", price: 1, currency: "EUR" }),
  event(2, "2", 1, "created", { name: "b", price: 1, currency: "USD" }),
  event(3, "1", 2, "invoked", { price: 2 }),
  event(4, "1", 3, "updated", { currency: "USD" }),
  event(5, "2", 2, "deleted", {}),
  event(6, "3", 1, "created", { name: "c", price: 1, currency: "EUR" })
]
const HEAD = 6

/** Each URI read once, as a session holds it (uri -> the seq it began at). */
const held = (subscriptions: Record<string, number>): ReadonlyMap<string, HeldTopic> =>
  new Map(Object.entries(subscriptions).map(([uri, since]) => [uri, { topic: storedTopic(catalog, uri), since }]))

/** The notices resumed after `from`, for `subscriptions` (as sessions hold them), over HISTORY. */
const resumedHeld = (subscriptions: ReadonlyMap<string, HeldTopic>, from: ResumePosition, viewSeqs: Record<string, number> = {}) =>
  Effect.gen(function* () {
    const log = yield* EventLog
    yield* log.append({ entries: HISTORY.map((e) => ({ event: e, row: null })), counters: new Map() })
    const notices = resumeNotices(log, catalog, subscriptions, from, HEAD, new Map(Object.entries(viewSeqs)))
    return Chunk.toReadonlyArray(yield* Stream.runCollect(notices)).map(({ uri, seq }) => `${seq} ${uri}`)
  }).pipe(Effect.provide(MemoryLogLive))

/** The notices resumed after `from`, for `subscriptions` (uri -> the seq it began at), over HISTORY. */
const resumed = (subscriptions: Record<string, number>, from: ResumePosition, viewSeqs: Record<string, number> = {}) =>
  resumedHeld(held(subscriptions), from, viewSeqs)

describe("resumeNotices", () => {
  it.effect("a row: each of its events after the position, and after its subscription began", () =>
    Effect.gen(function* () {
      expect(yield* resumed({ [P1]: 0 }, { seq: 1 })).toEqual([`3 ${P1}`, `4 ${P1}`])
      expect(yield* resumed({ [P1]: 3 }, { seq: 1 })).toEqual([`4 ${P1}`])
    }))

  it.effect("a live query: every event whose row matched it before or matches it after, its state before the window read back from the log", () =>
    Effect.gen(function* () {
      // From 2: p1's currency (EUR) is known only from its create at 1, before the window.
      expect(yield* resumed({ [EUR]: 0 }, { seq: 2 })).toEqual([`3 ${EUR}`, `4 ${EUR}`, `6 ${EUR}`])
      // A position without a URI is a row's notice, sent before the others of its seq: 2's USD notice follows it.
      expect(yield* resumed({ [USD]: 0 }, { seq: 2 })).toEqual([`2 ${USD}`, `4 ${USD}`, `5 ${USD}`])
    }))

  it.effect("a view: one notice at its last change, when that is after the position", () =>
    Effect.gen(function* () {
      expect(yield* resumed({ [VIEW]: 0 }, { seq: 2 }, { [VIEW]: 6 })).toEqual([`6 ${VIEW}`])
      expect(yield* resumed({ [VIEW]: 0 }, { seq: 2 }, { [VIEW]: 1 })).toEqual([])
      // Begun after the view's last change: nothing was missed.
      expect(yield* resumed({ [VIEW]: 6 }, { seq: 2 }, { [VIEW]: 6 })).toEqual([])
    }))

  it.effect("several notices at one seq: the row's own first, then by URI, resumed after the one last delivered", () =>
    Effect.gen(function* () {
      const all = { [P1]: 0, [EUR]: 0, [USD]: 0 }
      expect(yield* resumed(all, { seq: 3 })).toEqual([`3 ${EUR}`, `4 ${P1}`, `4 ${EUR}`, `4 ${USD}`, `5 ${USD}`, `6 ${EUR}`])
      // The last delivered was seq 4's EUR notice: the row's and EUR's are behind, USD's is not.
      expect(yield* resumed(all, { seq: 4, uri: EUR })).toEqual([`4 ${USD}`, `5 ${USD}`, `6 ${EUR}`])
    }))

  it.effect("a live query is replayed with the filters its topic carries: the URI is not read again", () =>
    Effect.gen(function* () {
      // A topic whose query says USD under the EUR URI: the notices follow the query the topic carries.
      const usd = storedTopic(catalog, USD).query!
      const topics = new Map([[EUR, { topic: { uri: EUR, query: { ...usd, uri: EUR } }, since: 0 }]])
      expect(yield* resumedHeld(topics, { seq: 2 })).toEqual([`2 ${EUR}`, `4 ${EUR}`, `5 ${EUR}`])
      // And a URI held with no query (a catalog that no longer reads it) notifies nothing, however it reads now.
      expect(yield* resumedHeld(new Map([[EUR, { topic: { uri: EUR }, since: 0 }]]), { seq: 2 })).toEqual([])
    }))

  it.effect("a row's history: each of the row's events after the position, among the others by URI", () =>
    Effect.gen(function* () {
      const H1 = "wo://products/1/history"
      // The position names the row's own notice at 1: the history's at 1 comes after it, as it does live.
      expect(yield* resumed({ [H1]: 0 }, { seq: 1 })).toEqual([`1 ${H1}`, `3 ${H1}`, `4 ${H1}`])
      expect(yield* resumed({ [H1]: 3 }, { seq: 1 })).toEqual([`4 ${H1}`])
      // After the row's own notice, in URI order with a live query's ("wo://products/" sorts before "wo://products?").
      expect(yield* resumed({ [P1]: 0, [H1]: 0, [EUR]: 0 }, { seq: 3 })).toEqual([`3 ${H1}`, `3 ${EUR}`, `4 ${P1}`, `4 ${H1}`, `4 ${EUR}`, `6 ${EUR}`])
      expect(yield* resumed({ [P1]: 0, [H1]: 0, [EUR]: 0 }, { seq: 3, uri: H1 })).toEqual([`3 ${EUR}`, `4 ${P1}`, `4 ${H1}`, `4 ${EUR}`, `6 ${EUR}`])
    }))

  it.effect("nothing when the position is the head", () =>
    Effect.gen(function* () {
      expect(yield* resumed({ [P1]: 0, [EUR]: 0 }, { seq: HEAD })).toEqual([])
    }))
})

describe("a long resumption", () => {
  it("reads the log a slice at a time, the event loop turning between two slices, and resumes every notice in order", async () => {
    // ROWS products made in EUR, then each repriced: resumed from the first repricing, the EUR query's window is
    // ROWS events, and each row's currency is read back from its create, before the window.
    const ROWS = 3 * READ_BATCH
    const history: Array<StoredEvent> = []
    for (let i = 1; i <= ROWS; i++) history.push(event(i, String(i), 1, "created", { name: `p${i}`, price: 1, currency: "EUR" }))
    for (let i = 1; i <= ROWS; i++) history.push(event(ROWS + i, String(i), 2, "invoked", { price: 2 }))
    const head = 2 * ROWS
    const counter = countTurns()
    // Each chunk of the log is there as soon as it is asked for (as when the log's read-ahead is quicker than the
    // decoding), so only the resumption itself can let the event loop turn between two of them. Like the
    // classic-level log, it decodes `slice` events per chunk when asked to, else a read batch.
    const ticksAtChunk: Array<number> = []
    const slices: Array<number> = []
    const notices = await Effect.runPromise(Effect.gen(function* () {
      const memory = yield* EventLog
      yield* memory.append({ entries: history.map((e) => ({ event: e, row: null })), counters: new Map() })
      const log: EventLogShape = {
        ...memory,
        readFrom: (seq, options) => {
          slices.push(options?.slice ?? READ_BATCH)
          return memory.readFrom(seq).pipe(Stream.rechunk(options?.slice ?? READ_BATCH), Stream.mapChunks((chunk) => (ticksAtChunk.push(counter.turns()), chunk)))
        }
      }
      return yield* Stream.runCollect(resumeNotices(log, catalog, held({ [EUR]: 0 }), { seq: ROWS + 1 }, head, new Map()))
    }).pipe(Effect.provide(MemoryLogLive), Effect.ensuring(Effect.sync(counter.stop))))
    expect(Chunk.toReadonlyArray(notices).map(({ uri, seq }) => `${seq} ${uri}`)).toEqual(history.slice(ROWS).map((e) => `${e.seq} ${EUR}`))
    expect(slices.every((slice) => slice === SLICE), `slices asked for: ${slices.join(",")}`).toBe(true)
    // Every chunk was taken in a later turn of the event loop than the one before.
    expect(ticksAtChunk.length).toBeGreaterThan(2 * ROWS / SLICE)
    for (let i = 1; i < ticksAtChunk.length; i++) expect(ticksAtChunk[i], `ticks at each chunk: ${ticksAtChunk.join(",")}`).toBeGreaterThan(ticksAtChunk[i - 1])
  })
})

describe("positions", () => {
  it("a row's notice is get-<seq>; any other names its URI, and parses back", () => {
    expect(positionId(4, P1)).toBe("get-4")
    expect(parsePosition(positionId(4, P1))).toEqual({ seq: 4 })
    expect(positionId(4, EUR)).toBe(`get-4.${Buffer.from(EUR).toString("base64url")}`)
    expect(parsePosition(positionId(4, EUR))).toEqual({ seq: 4, uri: EUR })
  })

  it("anything else is no position", () => {
    for (const text of [undefined, "", "4", "get-", "get-x", "get-4.", "get-4.a b", "list-4"]) expect(parsePosition(text)).toBeUndefined()
  })
})
