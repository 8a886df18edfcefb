/**
 * An in-memory EventLog, for unit tests of the writer only (integration tests keep the real store). It keeps
 * what a durable log keeps (events, inline rows, counters), records every append, and lets a test hold an
 * append open (`hold`) or make the next ones fail (`failNext`) without any timing.
 */
import { Chunk, Context, Deferred, Effect, Layer, Option, Stream } from "effect"
import type { Row } from "../../src/domain/catalog.ts"
import { StoreFailed } from "../../src/domain/errors.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { EventLog, Stale, type AppendBatch, type AppendEntry, type AppendResult } from "../../src/log/event-log.ts"

export interface HeldAppend {
  /** Completes once an append has reached the hold (the writer has taken its batch). */
  readonly entered: Effect.Effect<void>
  /** Lets the held append go on. */
  readonly release: Effect.Effect<void>
}

export interface MemoryLogControl {
  /** Every batch the writer handed to append, in order, whether it was stored or failed. */
  readonly appends: ReadonlyArray<AppendBatch>
  /** The events stored (a failed append stores nothing). */
  readonly events: ReadonlyArray<StoredEvent>
  /** The next append waits until released. */
  readonly hold: Effect.Effect<HeldAppend>
  /** The next `n` appends to start fail with StoreFailed, storing nothing. */
  readonly failNext: (n: number) => void
}

export class MemoryLog extends Context.Tag("writeonce/test/MemoryLog")<MemoryLog, MemoryLogControl>() {}

/** A fresh, empty log per build: provides both the EventLog and its control. */
export const MemoryLogLive: Layer.Layer<EventLog | MemoryLog> = Layer.effectContext(
  Effect.sync(() => {
    const appends: Array<AppendBatch> = []
    const events: Array<StoredEvent> = []
    const rows = new Map<string, Map<string, Row>>()
    const counters = new Map<string, number>()
    const holds: Array<{ readonly entered: Deferred.Deferred<void>; readonly gate: Deferred.Deferred<void> }> = []
    let failures = 0
    let written = 0

    const store = (batch: AppendBatch) => {
      for (const { event, row } of batch.entries) {
        events.push(event)
        let table = rows.get(event.type)
        if (table === undefined) rows.set(event.type, (table = new Map()))
        if (row === null) table.delete(event.id)
        else table.set(event.id, row)
      }
      for (const [type, n] of batch.counters) counters.set(type, n)
    }

    const log = EventLog.of({
      append: (batch) =>
        Effect.gen(function* () {
          appends.push(batch)
          // Whether this append fails is settled as it starts, so arming a failure while one is held targets the next.
          const fails = failures > 0
          if (fails) failures--
          const held = holds.shift()
          if (held !== undefined) {
            yield* Deferred.succeed(held.entered, undefined)
            yield* Deferred.await(held.gate)
          }
          if (fails) return yield* Effect.fail(new StoreFailed({ reason: "injected write failure" }))
          store(batch)
          written++
        }),
      head: Effect.sync(() => {
        const lastSeq = events.length === 0 ? 0 : events[events.length - 1].seq
        return { lastSeq, checkpoint: lastSeq, counters: new Map(counters) }
      }),
      readFrom: (fromSeq) => Stream.suspend(() => Stream.fromIterable(events.filter((e) => e.seq >= fromSeq))),
      storedRows: Stream.suspend(() =>
        Stream.fromIterable([...rows].flatMap(([type, table]) => [...table.values()].map((row) => ({ type, row }))))),
      stats: Effect.sync(() => ({ syncWrites: written, eventsWritten: events.length }))
    })

    const control: MemoryLogControl = {
      appends,
      events,
      hold: Effect.gen(function* () {
        const entered = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        holds.push({ entered, gate })
        return { entered: Deferred.await(entered), release: Deferred.succeed(gate, undefined).pipe(Effect.asVoid) }
      }),
      failNext: (n) => {
        failures = n
      }
    }
    return Context.make(EventLog, log).pipe(Context.add(MemoryLog, control))
  })
)

export interface SharedMemoryLogControl {
  /** Every batch this node handed to append, and what the log answered for each entry (`Stale` or the seq). */
  readonly appends: ReadonlyArray<{ readonly batch: AppendBatch; readonly outcomes: ReadonlyArray<number | Stale> }>
  readonly events: ReadonlyArray<StoredEvent>
  /** The seqs `follow` delivered, in order: what this node read from the log. */
  readonly delivered: ReadonlyArray<number>
  /** The first seq of an own batch the follower holds (its `readBefore`): `follow` reads up to it. */
  readonly heldFrom: () => number | undefined
  /** A commit made by another node: the next version of the entity (a create when it has none). */
  readonly foreign: (type: string, id: string | undefined, data: Record<string, unknown>) => StoredEvent
  /** While paused, `follow` delivers nothing: this node's rows lag the log. */
  readonly pauseFollow: () => void
  /** How many times the head was read (the writer reads it to catch up before deciding a command again). */
  readonly headReads: () => number
  readonly resumeFollow: () => void
  /** The next append waits until released (before the log looks at it). */
  readonly hold: Effect.Effect<HeldAppend>
}

export class SharedMemoryLog extends Context.Tag("writeonce/test/SharedMemoryLog")<SharedMemoryLog, SharedMemoryLogControl>() {}

/**
 * A shared log in memory that answers as the PostgreSQL one does (log/postgres/append.ts): it assigns seqs and
 * create ids, refuses an entry decided against a row that moved on as `Stale`, and offers `follow`. Another
 * node's commits are injected with `foreign`; pausing `follow` makes this node lag, without any timing.
 */
export const SharedMemoryLogLive: Layer.Layer<EventLog | SharedMemoryLog> = Layer.effectContext(
  Effect.sync(() => {
    const appends: Array<{ batch: AppendBatch; outcomes: Array<number | Stale> }> = []
    const events: Array<StoredEvent> = []
    const versions = new Map<string, number>()
    const lastIds = new Map<string, number>()
    const wakers = new Set<() => void>()
    let paused = false
    let headReads = 0
    const delivered: Array<number> = []
    let followerHolds: () => number | undefined = () => undefined
    const holds: Array<{ readonly entered: Deferred.Deferred<void>; readonly gate: Deferred.Deferred<void> }> = []
    const wake = () => {
      for (const w of [...wakers]) w()
    }
    const commit = (event: StoredEvent) => {
      events.push(event)
      versions.set(`${event.type}/${event.id}`, event.version)
      if (event.kind === "created") lastIds.set(event.type, Number(event.id))
      wake()
      return event
    }
    const log = EventLog.of({
      append: (batch) =>
        Effect.suspend(() => {
          const held = holds.shift()
          return held === undefined ? Effect.void : Effect.zipRight(Deferred.succeed(held.entered, undefined), Deferred.await(held.gate))
        }).pipe(Effect.zipRight(Effect.sync((): AppendResult => {
          const outcomes: Array<AppendEntry | Stale> = []
          const broken = new Set<string>()
          const recorded: Array<number | Stale> = []
          for (const entry of batch.entries) {
            let { event, row } = entry
            const key = `${event.type}/${event.id}`
            if (event.kind === "created") {
              const id = String((lastIds.get(event.type) ?? 0) + 1)
              if (id !== event.id) broken.add(key)
              event = { ...event, id }
              row = row === null ? null : { ...row, id }
            } else if (broken.has(key) || event.version !== (versions.get(key) ?? 0) + 1) {
              broken.add(key)
              outcomes.push(Stale)
              recorded.push(Stale)
              continue
            }
            event = commit({ ...event, seq: events.length + 1 })
            outcomes.push({ event, row, rowJson: row === null ? null : JSON.stringify(row) })
            recorded.push(event.seq)
          }
          appends.push({ batch, outcomes: recorded })
          return { outcomes, lastSeq: events.length }
        }))),
      head: Effect.sync(() => {
        headReads++
        return { lastSeq: events.length, checkpoint: events.length, counters: new Map(lastIds) }
      }),
      readFrom: (fromSeq) => Stream.suspend(() => Stream.fromIterable(events.filter((e) => e.seq >= fromSeq))),
      follow: (afterSeq, applied, readBefore) => {
        followerHolds = readBefore ?? (() => undefined)
        return Stream.paginateChunkEffect(afterSeq + 1, (from) =>
          Effect.async<readonly [Chunk.Chunk<StoredEvent>, Option.Option<number>]>((resume) => {
            const deliver = () => {
              // After what the follower applied itself, up to an own batch it holds, as the PostgreSQL log reads
              // (log/postgres/follow.ts).
              const start = Math.max(from, (applied?.() ?? 0) + 1)
              const stop = readBefore?.()
              const end = stop !== undefined && stop > start ? Math.min(events.length, stop - 1) : events.length
              if (paused || end < start) return false
              wakers.delete(deliver)
              const chunk = events.slice(start - 1, end)
              delivered.push(...chunk.map((e) => e.seq))
              resume(Effect.succeed([Chunk.unsafeFromArray(chunk), Option.some(start + chunk.length)] as const))
              return true
            }
            if (!deliver()) wakers.add(deliver)
            return Effect.sync(() => void wakers.delete(deliver))
          }))
      },
      storedRows: Stream.empty,
      stats: Effect.sync(() => ({ syncWrites: appends.length, eventsWritten: events.length }))
    })
    const control: SharedMemoryLogControl = {
      appends,
      events,
      delivered,
      heldFrom: () => followerHolds(),
      foreign: (type, id, data) => {
        const created = id === undefined
        const theId = id ?? String((lastIds.get(type) ?? 0) + 1)
        const version = (versions.get(`${type}/${theId}`) ?? 0) + 1
        return commit({ seq: events.length + 1, at: 0, type, id: theId, version, schema: 1, kind: created ? "created" : "updated", data })
      },
      pauseFollow: () => {
        paused = true
      },
      headReads: () => headReads,
      resumeFollow: () => {
        paused = false
        wake()
      },
      hold: Effect.gen(function* () {
        const entered = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        holds.push({ entered, gate })
        return { entered: Deferred.await(entered), release: Deferred.succeed(gate, undefined).pipe(Effect.asVoid) }
      })
    }
    return Context.make(EventLog, log).pipe(Context.add(SharedMemoryLog, control))
  })
)
