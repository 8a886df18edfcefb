/**
 * How the tailer of a node whose rows are a cache of the store (rows/cache-rows.ts) folds other nodes' commits into
 * changes, instead of reading every row they touch (the projector's fold does, projector.ts). Each change starts
 * from the row the cache holds when it holds the row just before the event (its `at` is earlier); from the row read
 * with the chunk (`before`) when a view folds one of its entity's events; else it is unknown: the change carries the event's fields alone
 * and no `before`, which the cache takes as "drop it" (cache-table.ts). Creates always carry the whole row.
 */
import { Effect } from "effect"
import type { Row } from "../domain/catalog.ts"
import type { CompiledApp } from "../domain/compile.ts"
import { evolve } from "../domain/decide/decider.ts"
import type { StoreError } from "../domain/errors.ts"
import { streamKey, type Change, type StoredEvent } from "../domain/events.ts"
import { rowUri } from "../domain/uri.ts"
import type { EventLogShape } from "../log/event-log.ts"
import type { CachedRows } from "./rows/rows.ts"

/** The exact row before each entity's first event of a chunk (null: it did not exist), by stream key. */
export type Known = ReadonlyMap<string, Row | null>

export const makeCachedFold = (catalog: CompiledApp, cached: CachedRows, log: EventLogShape) => {
  const views = [...catalog.views.values()]
  /** The cached row when it is the one just before an event at `seq`. */
  const heldBefore = (type: string, id: string, seq: number) => {
    const held = cached.peek(type, id)
    return held !== undefined && held.at < seq ? held.row : undefined
  }

  const fold = (events: Iterable<StoredEvent>, known?: Known): Array<Change> => {
    const changes: Array<Change> = []
    // undefined: not known here.
    const latest = new Map<string, Row | null | undefined>()
    for (const event of events) {
      if (!catalog.types.has(event.type)) continue
      const key = streamKey(event.type, event.id)
      // Ids are never given twice: a create starts from no row.
      const before = latest.has(key)
        ? latest.get(key)
        : heldBefore(event.type, event.id, event.seq) ?? (known?.has(key) ? known.get(key) : event.kind === "created" ? null : undefined)
      const uri = rowUri(event.type, event.id)
      if (before === undefined) {
        // The event's fields after its id and version, as a create's row (decider.ts `evolve`): a spread followed
        // by new keys would make a new hidden class per event on Node 20 (edge-types.ts `jsonText`).
        const row = event.kind === "created" ? evolve(undefined, event)! : event.kind === "deleted" ? null : { id: event.id, version: event.version, ...event.data }
        latest.set(key, event.kind === "created" || event.kind === "deleted" ? row : undefined)
        changes.push({ event, uri, row })
      } else {
        const row = evolve(before ?? undefined, event) ?? null
        latest.set(key, row)
        changes.push({ event, uri, row, before })
      }
    }
    return changes
  }

  /**
   * The rows before `events` that the cache does not hold: read as stored now, in one read; a row another commit
   * changed since (its last event is not before the chunk's) is folded from its own events up to the chunk instead.
   */
  const before = (events: ReadonlyArray<StoredEvent>): Effect.Effect<Known, StoreError> =>
    Effect.suspend(() => {
      // Only the rows of entities a view folds an event of (a set_price no view listens to needs no row).
      const viewed = new Set<string>()
      for (const event of events) if (views.some((v) => v.folds(event))) viewed.add(streamKey(event.type, event.id))
      const first = new Map<string, StoredEvent>()
      for (const event of events) {
        if (!catalog.types.has(event.type)) continue
        const key = streamKey(event.type, event.id)
        if (first.has(key) || !viewed.has(key)) continue
        // A create starts from no row (null, in the fold); else the cache's row when it is the one before.
        first.set(key, event)
      }
      for (const [key, event] of first) if (event.kind === "created" || heldBefore(event.type, event.id, event.seq) !== undefined) first.delete(key)
      if (first.size === 0) return Effect.succeed(new Map())
      const wanted = [...first.values()]
      return Effect.flatMap(cached.readNow(wanted.map((e) => ({ type: e.type, id: e.id }))), (stored) => {
        const known = new Map<string, Row | null>()
        const moved: Array<StoredEvent> = []
        for (const [key, event] of first) {
          const now = stored.get(key)
          if (now !== undefined && now.at < event.seq) known.set(key, now.row)
          else moved.push(event)
        }
        if (moved.length === 0 || log.eventsOf === undefined) return Effect.succeed(known)
        const upTo = Math.max(...moved.map((e) => e.seq)) - 1
        return Effect.map(log.eventsOf(moved.map((e) => ({ type: e.type, id: e.id })), upTo), (history) => {
          const rebuilt = new Map<string, Row | undefined>()
          for (const e of history) {
            const key = streamKey(e.type, e.id)
            if (e.seq < first.get(key)!.seq) rebuilt.set(key, evolve(rebuilt.get(key), e))
          }
          for (const e of moved) known.set(streamKey(e.type, e.id), rebuilt.get(streamKey(e.type, e.id)) ?? null)
          return known
        })
      })
    })

  return { fold, before }
}
