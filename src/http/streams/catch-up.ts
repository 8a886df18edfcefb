/**
 * The catch-up of `/api/_events` readers (event-tail.ts): the log from a reader's start up to a head, written to
 * its stream a page at a time, one write per step of the long-work turnstile (turnstile.ts), and no next write
 * before the socket has room for it.
 *
 *  - Pages are aligned on the log: page k holds the events k*PAGE+1 .. (k+1)*PAGE, framed once into one buffer and
 *    shared by every reader that passes that stretch, whatever seq it started from (a reader starting inside a
 *    page writes a slice of it). At most SHARED_PAGES are kept while readers catch up, none once they are done.
 *    A page holds no decoded events: its bytes live outside the JS heap, so the young-generation collector has
 *    nothing of it to copy while readers pass it (with 4,096 decoded events kept for the readers behind, a
 *    catch-up of 6,050 events by 50 readers took 7-8 scavenges of 10-25 ms each, each one a pause for every
 *    request; with pages and the stepping below, 2).
 *  - A page is read by the first reader that needs it, with a log cursor of its own that reads on in order; a
 *    reader that needs a page being read waits for that read (once: then it reads for itself). A page read
 *    stays its reader's own until written, so readers far apart cannot evict each other's pages into a loop.
 *  - Only events up to the projections' checkpoint go into a page: on a shared log an event past it may not be
 *    acknowledged yet (a failover can drop it), and a page is served to other readers later.
 *  - Hand-tuned: a reader steps in plain callbacks (turnstile `enter`, `sendThen`), not a fiber step per write,
 *    which cost more server CPU than the writes themselves (bench/readers-alternated.ts). Only a page read runs as
 *    an Effect, and the whole replay is one Effect for its caller (interruptible, failing with the log's error).
 */
import { Chunk, Effect, Either, Exit, Fiber, Option, Runtime, Scope, Stream } from "effect"
import type { StoreError } from "../../domain/errors.ts"
import type { StoredEvent } from "../../domain/events.ts"
import type { EventLogShape } from "../../log/event-log.ts"
import { sseFrame } from "../../support/sse.ts"
import { longWork } from "../../support/turnstile.ts"
import type { PushSink } from "./push-sink.ts"

/** Events per page: per write, and per log read (a log batch is 1,000: no step decodes more than a write sends). */
export const PAGE = 128
/** Pages kept for the readers behind the one that read them (about 25 kB each with the pricing example's events). */
export const SHARED_PAGES = 32

/** The SSE frame of an event: `id: <seq>` and `data: <StoredEvent JSON>`. */
export const eventText = (event: StoredEvent) => sseFrame({ id: String(event.seq), data: JSON.stringify(event) })

/** The first seq of the page holding `seq`. */
export const pageStart = (seq: number) => seq - ((seq - 1) % PAGE)

/** A stretch of the log, framed. */
interface Page {
  readonly start: number
  /** Every event of the log from `start` up to this seq is in the page (its end, or less when read near the head). */
  readonly upTo: number
  /** The events' seqs, ascending (a log may skip seqs an operator accepted as lost). */
  readonly seqs: ReadonlyArray<number>
  /** The events' entity types, for readers that may read only some (access/grants.ts). */
  readonly types: ReadonlyArray<string>
  /** Where each event's frame starts in `bytes`, and the length of `bytes` last. */
  readonly offsets: Uint32Array
  readonly bytes: Buffer
}

const framePage = (start: number, upTo: number, events: ReadonlyArray<StoredEvent>): Page => {
  const texts = events.map(eventText)
  const offsets = new Uint32Array(texts.length + 1)
  for (let i = 0; i < texts.length; i++) offsets[i + 1] = offsets[i] + Buffer.byteLength(texts[i])
  const bytes = Buffer.allocUnsafeSlow(offsets[texts.length])
  for (let i = 0; i < texts.length; i++) bytes.write(texts[i], offsets[i])
  return { start, upTo, seqs: events.map((e) => e.seq), types: events.map((e) => e.type), offsets, bytes }
}

/** The index of the first event of `page` at or after `seq`. */
const indexOf = (page: Page, seq: number) => {
  let i = 0
  while (i < page.seqs.length && page.seqs[i] < seq) i++
  return i
}

/** The frames of the events `from..to` of `page`: the page's own buffer when that is all of it (shared, not sliced). */
const framesOf = (page: Page, from: number, to: number): Buffer => {
  const i = indexOf(page, from)
  const j = indexOf(page, to + 1)
  return i === 0 && j === page.seqs.length ? page.bytes : page.bytes.subarray(page.offsets[i], page.offsets[j])
}

/** Which entity types' events a reader may see; undefined: all of them. */
export type ReadableTypes = ((type: string) => boolean) | undefined

/** The frames of the events `from..to` of `page` whose type `readable` lets the reader see (one copy). */
const readableFramesOf = (page: Page, from: number, to: number, readable: (type: string) => boolean): Buffer => {
  const parts: Array<Buffer> = []
  for (let i = indexOf(page, from), j = indexOf(page, to + 1); i < j; i++) {
    if (readable(page.types[i])) parts.push(page.bytes.subarray(page.offsets[i], page.offsets[i + 1]))
  }
  return parts.length === 1 ? parts[0] : Buffer.concat(parts)
}

/** A reader's own read of the log, positioned at `position` (what it pulled past that is in `carry`). */
interface Cursor {
  readonly pull: Effect.Effect<Chunk.Chunk<StoredEvent>, Option.Option<StoreError>>
  readonly scope: Scope.CloseableScope
  position: number
  carry: ReadonlyArray<StoredEvent>
  /** The log stream ended (at the head when it was opened). */
  ended: boolean
  /** The last seq it pulled. */
  lastSeen: number
}

export interface CatchUpDeps {
  readonly log: EventLogShape
  /** The projections' checkpoint: no event past it goes into a page. */
  readonly checkpoint: () => number
}

export const makeCatchUp = ({ log, checkpoint }: CatchUpDeps) => {
  /** Pages by start, oldest read first. */
  const pages = new Map<number, Page>()
  /** Page reads under way, by start: who waits for each. */
  const reads = new Map<number, Array<() => void>>()
  let replaying = 0

  const keep = (page: Page) => {
    pages.delete(page.start)
    pages.set(page.start, page)
    for (const start of pages.keys()) {
      if (pages.size <= SHARED_PAGES) break
      pages.delete(start)
    }
  }

  const closeCursor = (reader: { cursor: Cursor | undefined }) =>
    Effect.suspend(() => {
      const cursor = reader.cursor
      reader.cursor = undefined
      return cursor === undefined ? Effect.void : Scope.close(cursor.scope, Exit.void)
    })

  /** The page at `start`, read with the reader's cursor (opened there unless it is there already). */
  const readPage = (reader: { cursor: Cursor | undefined }, start: number, limit: number): Effect.Effect<Page, StoreError> =>
    Effect.gen(function* () {
      let cursor = reader.cursor
      if (cursor === undefined || cursor.position !== start || (cursor.ended && cursor.carry.length === 0)) {
        yield* closeCursor(reader)
        // Not interrupted between opening the scope and handing it to the reader (who closes it).
        cursor = yield* Effect.uninterruptible(Effect.gen(function* () {
          const scope = yield* Scope.make()
          const pull = yield* Scope.extend(Stream.toPull(log.readFrom(start, { slice: PAGE })), scope)
          return (reader.cursor = { pull, scope, position: start, carry: [], ended: false, lastSeen: start - 1 })
        }))
      }
      const end = Math.min(start + PAGE - 1, limit)
      const events: Array<StoredEvent> = []
      let past = false
      while (!past) {
        let chunk = cursor.carry
        cursor.carry = []
        if (chunk.length === 0) {
          if (cursor.ended) break
          const pulled = yield* Effect.either(cursor.pull)
          if (Either.isLeft(pulled)) {
            if (Option.isSome(pulled.left)) return yield* Effect.fail(pulled.left.value)
            cursor.ended = true
            break
          }
          chunk = Chunk.toReadonlyArray(pulled.right)
          if (chunk.length > 0) cursor.lastSeen = chunk[chunk.length - 1].seq
        }
        let i = 0
        while (i < chunk.length && chunk[i].seq <= end) events.push(chunk[i++])
        if (i < chunk.length) {
          cursor.carry = chunk.slice(i)
          past = true
        }
      }
      cursor.position = end + 1
      // Past the page's end: all of it read. The log ended first: all of it up to the last event the cursor saw.
      return framePage(start, past ? end : Math.max(start - 1, Math.min(end, cursor.lastSeen)), events)
    })

  /** One reader's replay of `next..to`; `done` once, with whether the stream is still open, or the log's failure. */
  class Replay {
    cursor: Cursor | undefined = undefined
    /** The page this reader is writing from. */
    private page: Page | undefined = undefined
    /** Whether it waited for another's read of the page it needs: once, then it reads for itself. */
    private waited = false
    private reading: Fiber.RuntimeFiber<Page, StoreError> | undefined = undefined
    private stopped = false

    constructor(
      private readonly sink: PushSink,
      private next: number,
      private readonly to: number,
      private readonly runFork: <A, E>(effect: Effect.Effect<A, E>) => Fiber.RuntimeFiber<A, E>,
      private readonly done: (exit: Exit.Exit<boolean, StoreError>) => void,
      private readonly readable: ReadableTypes
    ) {}

    readonly step = (): void => {
      if (this.stopped) return
      if (this.next > this.to) return this.end(Exit.succeed(true))
      if (this.sink.isClosed()) return this.end(Exit.succeed(false))
      const start = pageStart(this.next)
      const need = Math.min(this.to, start + PAGE - 1)
      let page = this.page
      if (page === undefined || page.start !== start || page.upTo < need) {
        page = pages.get(start)
        if (page === undefined || page.upTo < need) {
          const waiting = reads.get(start)
          if (waiting !== undefined && !this.waited) {
            this.waited = true
            waiting.push(this.wake)
            return
          }
          return this.read(start, need)
        }
      }
      this.waited = false
      this.page = page
      const frames = this.readable === undefined ? framesOf(page, this.next, need) : readableFramesOf(page, this.next, need, this.readable)
      this.next = need + 1
      // A stretch the log skips (accepted as lost) has nothing to write: on to the next page, on the next turn.
      if (frames.length === 0) return this.wake()
      this.sink.sendThen(frames, this.sent)
    }

    private readonly wake = () => longWork.enter(this.step)

    private readonly sent = (open: boolean) => (open ? this.wake() : this.end(Exit.succeed(false)))

    private read(start: number, need: number) {
      const waiting: Array<() => void> = []
      reads.set(start, waiting)
      const fiber = this.runFork(readPage(this, start, Math.max(need, checkpoint())))
      // Read already (the cursor had the events at hand): written in this same step, so that this reader stays
      // ahead of the others and reads the next page too, with its cursor already there.
      const now = fiber.unsafePoll()
      if (now !== null) return this.didRead(start, need, waiting, now, this.step)
      this.reading = fiber
      fiber.addObserver((exit) => this.didRead(start, need, waiting, exit, this.wake))
    }

    private didRead(start: number, need: number, waiting: Array<() => void>, exit: Exit.Exit<Page, StoreError>, next: () => void) {
      this.reading = undefined
      if (reads.get(start) === waiting) reads.delete(start)
      if (Exit.isFailure(exit)) this.end(Exit.failCause(exit.cause))
      else if (!this.stopped) {
        keep(exit.value)
        // The log ends before `need`: so does the replay (the checkpoint said otherwise; nothing more to send).
        if (exit.value.upTo < need) this.end(Exit.succeed(true))
        else {
          this.page = exit.value
          // Ahead of those who waited: it reads the next page too, with the cursor it has open there.
          next()
        }
      }
      for (const wake of waiting) wake()
    }

    private end(exit: Exit.Exit<boolean, StoreError>) {
      if (this.stopped) return
      this.stopped = true
      this.done(exit)
    }

    /** Interrupted: no more steps, and the read under way (if any) stopped. */
    stop(): Effect.Effect<void> {
      this.stopped = true
      return this.reading === undefined ? Effect.void : Fiber.interrupt(this.reading)
    }
  }

  /** Events `from..to` to `sink` (those of the types `readable` allows); false when the stream closed meanwhile. */
  const replay = (sink: PushSink, from: number, to: number, readable?: ReadableTypes): Effect.Effect<boolean, StoreError> =>
    from > to ? Effect.succeed(true) : Effect.flatMap(Effect.runtime<never>(), (runtime) => {
      const runFork = Runtime.runFork(runtime)
      let reader: Replay | undefined
      return Effect.async<boolean, StoreError>((resume) => {
        reader = new Replay(sink, from, to, runFork, (exit) => resume(exit), readable)
        longWork.enter(reader.step)
        return Effect.suspend(() => reader!.stop())
      }).pipe(Effect.ensuring(Effect.suspend(() => (reader === undefined ? Effect.void : closeCursor(reader)))))
    }).pipe(counted)

  /** Counts `work` among the replays running, and forgets the pages when the last one ends. */
  const counted = <A, E>(work: Effect.Effect<A, E>) =>
    Effect.acquireUseRelease(Effect.sync(() => void replaying++), () => work, () => Effect.sync(() => {
      if (--replaying === 0) pages.clear()
    }))

  return { replay }
}
