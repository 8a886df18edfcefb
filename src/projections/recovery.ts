/**
 * Restart recovery: load the stored row state (written atomically with each batch), then fold any events past
 * its checkpoint. Large stores log progress so a long start is never silent.
 */
import { Effect, Stream } from "effect"
import type { EventLogShape } from "../commands/event-log.ts"
import { evolve } from "../domain/decider.ts"
import { RowTable } from "./row-table.ts"

const PROGRESS_EVERY = 100_000

export const recoverRows = (log: EventLogShape) =>
  Effect.gen(function* () {
    const started = Date.now()
    const head = yield* log.head
    const tables = new Map<string, RowTable>()
    const table = (type: string) => {
      let t = tables.get(type)
      if (t === undefined) tables.set(type, (t = new RowTable()))
      return t
    }
    let rows = 0
    yield* log.storedRows.pipe(
      Stream.runForEach(({ type, row }) =>
        Effect.suspend(() => {
          table(type).set(row)
          return ++rows % PROGRESS_EVERY === 0 ? Effect.logInfo(`recovery: ${rows} rows loaded`) : Effect.void
        }))
    )
    let tailEvents = 0
    yield* log.readFrom(head.checkpoint + 1).pipe(
      Stream.runForEach((event) =>
        Effect.suspend(() => {
          const t = table(event.type)
          const next = evolve(t.get(event.id), event)
          if (next === undefined) t.delete(event.id)
          else t.set(next)
          return ++tailEvents % PROGRESS_EVERY === 0 ? Effect.logInfo(`recovery: ${tailEvents} tail events folded`) : Effect.void
        }))
    )
    return {
      tables,
      checkpoint: head.lastSeq,
      report: { rows, events: head.lastSeq, tailEvents, millis: Date.now() - started }
    }
  })
