/**
 * An in-memory EventLog, for unit tests of the writer only (integration tests keep the real store). It keeps
 * what a durable log keeps (events, inline rows, counters), records every append, and lets a test hold an
 * append open (`hold`) or make the next ones fail (`failNext`) without any timing.
 */
import { Context, Deferred, Effect, Layer, Stream } from "effect"
import type { Row } from "../../src/domain/catalog.ts"
import { StoreUnavailable } from "../../src/domain/errors.ts"
import type { StoredEvent } from "../../src/domain/events.ts"
import { EventLog, type AppendBatch } from "../../src/log/event-log.ts"

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
  /** The next `n` appends to start fail with StoreUnavailable, storing nothing. */
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
          if (fails) return yield* Effect.fail(new StoreUnavailable({ reason: "injected write failure" }))
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
