/**
 * `GET /api/_events` (event-tail.ts), over a log in memory and a fake socket, with no timing: where a reader
 * starts, the replay from the log handed over to live commits with no gap and no duplicate, a reader that falls
 * too far behind closed with a comment saying why, and the caps and shutdown through the open-stream record.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Exit, Scope, Stream } from "effect"
import type { StoredEvent } from "../../src/domain/events.ts"
import type { EdgeRequest, EdgeResponse } from "../../src/http/edge/edge-types.ts"
import { PAGE, pageStart, SHARED_PAGES } from "../../src/http/streams/catch-up.ts"
import { makeEventTail, startOf } from "../../src/http/routes/event-tail.ts"
import { makeOpenStreams } from "../../src/http/streams/open-streams.ts"
import { makeStreamHub } from "../../src/http/streams/stream-hub.ts"
import { EventLog } from "../../src/log/event-log.ts"
import { makeChangeFeed } from "../../src/subscriptions/change-feed.ts"
import { makeRows } from "../../src/projections/rows/rows.ts"
import { FakeSocket } from "../../testkit/fake-socket.ts"
import { MemoryLogLive } from "./memory-log.ts"

const request = (query: string, headers: Record<string, string> = {}, remoteAddress = "127.0.0.1"): EdgeRequest => ({
  method: "GET",
  path: "/api/_events",
  query: new URLSearchParams(query),
  search: query === "" ? "" : `?${query}`,
  headers,
  body: Buffer.alloc(0),
  remoteAddress
})

const event = (seq: number): StoredEvent => ({ seq, at: 0, type: "products", id: String(seq), version: 1, kind: "created", data: { name: `p${seq}` } })
const change = (seq: number) => ({ event: event(seq), uri: `wo://products/${seq}`, row: null })
const flushed = Effect.promise(() => new Promise<void>((r) => queueMicrotask(r)))
const ids = (socket: FakeSocket) => [...socket.text().matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))

interface Options {
  readonly capacity?: number
  readonly maxPerClient?: number
  /** Commits published when the replay first reads the log (as if made while it runs). */
  readonly duringReplay?: ReadonlyArray<number>
  /** Events in the log (1..events), the rows' checkpoint. */
  readonly events?: number
}

/** A tail over a log holding events 1..3 (the rows' checkpoint), with the feed and the open-stream record it uses. */
const setup = ({ capacity = 16, maxPerClient = 4, duringReplay = [], events = 3 }: Options = {}) =>
  Effect.gen(function* () {
    const stored = yield* EventLog
    const seqs = Array.from({ length: events }, (_, i) => i + 1)
    yield* stored.append({ entries: seqs.map((seq) => ({ event: event(seq), row: null })), counters: new Map() })
    const feed = makeChangeFeed()
    let pending = duringReplay
    /** The log reads started, by their first seq. */
    const reads: Array<number> = []
    const log = {
      ...stored,
      readFrom: (from: number) =>
        stored.readFrom(from).pipe(Stream.onStart(Effect.sync(() => {
          reads.push(from)
          const now = pending
          pending = []
          if (now.length > 0) feed.publish(now.map(change))
        })))
    }
    const streams = makeOpenStreams({ maxListensPerClient: 1, maxListenStreams: 1, maxEventTailsPerClient: maxPerClient, maxEventTails: 10 })
    const rows = makeRows(new Map(), events, { rows: 0, events: 0, tailEvents: 0, millis: 0 })
    const tail = makeEventTail({ log, feed, rows, capacity, heartbeatMs: 60_000, streams, maxPerClient, maxTotal: 10 })
    const hub = makeStreamHub()
    /** Starts the response as the edge does, in `scope`; the socket it writes to. */
    const run = (response: EdgeResponse, scope: Scope.Scope) =>
      Effect.gen(function* () {
        if (response._tag !== "Push") return yield* Effect.die(`expected a push stream, got ${response.status}`)
        const socket = new FakeSocket()
        yield* Scope.extend(response.start(hub.open(socket, capacity + 1)), scope)
        yield* flushed
        return socket
      })
    /** Starts the response in a fiber of `scope`, as the edge does for many at once; the socket it writes to. */
    const fork = (response: EdgeResponse, scope: Scope.Scope) =>
      Effect.gen(function* () {
        if (response._tag !== "Push") return yield* Effect.die(`expected a push stream, got ${response.status}`)
        const socket = new FakeSocket()
        yield* Effect.forkIn(Scope.extend(response.start(hub.open(socket, capacity + 1)), scope), scope)
        return socket
      })
    return { tail, feed, streams, run, fork, reads }
  }).pipe(Effect.provide(MemoryLogLive))

describe("where a reader starts", () => {
  it("after Last-Event-ID, else at `from`, else at 1; anything else is refused, naming it", () => {
    expect(startOf(request(""))).toEqual(Either.right(1))
    expect(startOf(request("from=0"))).toEqual(Either.right(1))
    expect(startOf(request("from=7"))).toEqual(Either.right(7))
    expect(startOf(request("from=7", { "last-event-id": " 9 " }))).toEqual(Either.right(10))
    expect(startOf(request("from=x"))).toEqual(Either.left("from must be a log sequence (an integer >= 1), got x"))
    expect(Either.isLeft(startOf(request("", { "last-event-id": "get-9" })))).toBe(true)
  })

  it.effect("a bad start is a 400 ValidationFailed", () =>
    Effect.gen(function* () {
      const { tail } = yield* setup()
      const response = tail(request("from=-1"))
      expect(response).toMatchObject({ _tag: "Buffered", status: 400 })
      expect(JSON.parse(String((response as { body: unknown }).body)).error).toBe("ValidationFailed")
    }))
})

describe("replay, then live", () => {
  it.scoped("a commit made during the replay follows it once, then commits go out live", () =>
    Effect.gen(function* () {
      // 3 is in the log the replay reads (published again, it must not be sent twice); 4 is after its head.
      const { tail, feed, run } = yield* setup({ duringReplay: [3, 4] })
      const socket = yield* run(tail(request("from=2")), yield* Effect.scope)
      expect(ids(socket)).toEqual([2, 3, 4])
      feed.publish([change(5)])
      yield* flushed
      expect(ids(socket)).toEqual([2, 3, 4, 5])
    }))

  it.scoped("a reader that starts past the head gets nothing before its start, live or not", () =>
    Effect.gen(function* () {
      // The log's head is 3: 4 and 5 commit after the hand-over, and are still before the reader's start.
      const { tail, feed, run } = yield* setup()
      const socket = yield* run(tail(request("from=6")), yield* Effect.scope)
      feed.publish([change(4), change(5)])
      feed.publish([change(6), change(7)])
      yield* flushed
      expect(ids(socket)).toEqual([6, 7])
    }))

  it.scoped("a reader with more than its buffer waiting during the replay is closed, saying why", () =>
    Effect.gen(function* () {
      const { tail, run } = yield* setup({ capacity: 1, duringReplay: [4, 5, 6] })
      const socket = yield* run(tail(request("from=3")), yield* Effect.scope)
      expect(ids(socket)).toEqual([])
      expect(socket.text()).toBe(": closed (overflow); reconnect with Last-Event-ID to resume from the log\n\n")
      expect(socket.ended).toBe(true)
    }))
})

/** Turns of the event loop until every socket holds `count` events (at most 10,000 turns); how many it took. */
const turnsUntil = (sockets: ReadonlyArray<FakeSocket>, counts: ReadonlyArray<number>) =>
  Effect.promise(async () => {
    let turns = 0
    while (sockets.some((s, i) => ids(s).length < counts[i]) && turns < 10_000) {
      await new Promise((r) => setImmediate(r))
      turns++
    }
    return turns
  })

describe("catch-up shared between readers, in slices", () => {
  it.scoped("readers catching up together read the log once between them; each gets every event once, in order, a batch per write (the same bytes for all), a write per turn", () =>
    Effect.gen(function* () {
      const { tail, fork, reads } = yield* setup({ events: 1000 })
      const scope = yield* Effect.scope
      const sockets = [yield* fork(tail(request("from=1")), scope), yield* fork(tail(request("from=1")), scope), yield* fork(tail(request("")), scope)]
      const turns = yield* turnsUntil(sockets, [1000, 1000, 1000])
      const all = Array.from({ length: 1000 }, (_, i) => i + 1)
      for (const socket of sockets) {
        expect(ids(socket)).toEqual(all)
        expect(Math.max(...socket.chunks.map((c) => [...c.matchAll(/^id: /gm)].length))).toBeLessThanOrEqual(PAGE)
      }
      // One reader read the log; the two behind it were served what it read, and sent the bytes it sent.
      expect(reads).toEqual([1])
      expect(new Set(sockets.flatMap((s) => s.written)).size).toBe(sockets[0].written.length)
      // Other requests are served between two slices: no turn of the event loop carried two writes.
      expect(sockets.reduce((n, s) => n + s.writes, 0)).toBeLessThanOrEqual(turns + 1)
    }))

  it.scoped("a reader whose page the others pushed out of the shared window still sends what it read, once, in order", () =>
    Effect.gen(function* () {
      // Two readers far apart read pages of their own, more than the window keeps: each page read is still
      // written by the reader that read it, and the one starting inside a page writes only its part of it.
      const events = SHARED_PAGES * PAGE + 904
      const { tail, fork, reads } = yield* setup({ events })
      const scope = yield* Effect.scope
      const sockets = [yield* fork(tail(request("from=1")), scope), yield* fork(tail(request("from=4500")), scope)]
      yield* turnsUntil(sockets, [events, events - 4499])
      expect(ids(sockets[0])).toEqual(Array.from({ length: events }, (_, i) => i + 1))
      expect(ids(sockets[1])).toEqual(Array.from({ length: events - 4499 }, (_, i) => i + 4500))
      expect(reads[0]).toBe(1)
      // Pages are aligned on the log: the second reader reads from the start of the page holding 4500.
      expect(reads[1]).toBe(pageStart(4500))
      expect(pageStart(4500)).toBe(4481)
    }))
})

describe("catch-up backpressure", () => {
  it.scoped("a reader whose socket is full writes nothing more until it drains, then goes on where it stopped", () =>
    Effect.gen(function* () {
      const events = 10 * PAGE
      const { tail, fork } = yield* setup({ events })
      const socket = yield* fork(tail(request("from=1")), yield* Effect.scope)
      yield* turnsUntil([socket], [1])
      socket.stall(true)
      const writes = socket.writes
      // The write that found the socket full is the last one until it drains, however many turns go by.
      yield* Effect.promise(async () => {
        for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r))
      })
      expect(socket.writes).toBeLessThanOrEqual(writes + 1)
      expect(ids(socket).length).toBeLessThan(events)
      socket.stall(false)
      yield* turnsUntil([socket], [events])
      expect(ids(socket)).toEqual(Array.from({ length: events }, (_, i) => i + 1))
    }))
})

describe("caps and shutdown, through the open-stream record", () => {
  it.effect("a client past its cap gets 429 until its reader ends; shutdown ends every reader", () =>
    Effect.gen(function* () {
      const { tail, streams, run } = yield* setup({ maxPerClient: 1 })
      const scope = yield* Scope.make()
      const socket = yield* run(tail(request("from=1")), scope)
      expect(streams.list().map((s) => [s.kind, s.client])).toEqual([["events", "127.0.0.1"]])
      const refused = tail(request("from=1"))
      expect(refused).toMatchObject({ _tag: "Buffered", status: 429, headers: { "retry-after": "1" } })
      expect(JSON.parse(String((refused as { body: unknown }).body)).error).toBe("TooManyReaders")
      // Another address has a cap of its own.
      expect(tail(request("from=1", {}, "127.0.0.2"))._tag).toBe("Push")

      streams.closeAll("shutdown")
      expect(socket.ended).toBe(true)
      yield* Scope.close(scope, Exit.void)
      expect(streams.list()).toEqual([])
      expect(tail(request("from=1"))._tag).toBe("Push")
    }))
})
