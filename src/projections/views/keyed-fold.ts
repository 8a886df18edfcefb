/**
 * Keyed views folded: a batch's changes into the entries they touch (`foldKeyedChanges`, the writer's and the
 * background fold's one step), and keyed views folded from the log alone (`makeKeyedFolder`: every event from
 * seq 1, with the rows before and after it rebuilt alongside, as view-fold.ts does for whole views), a chunk at a
 * time into a sink: the store (a view folded again in the background) or memory (`wo replay`/`wo verify`).
 */
import { Chunk, Effect, Either, Stream } from "effect"
import type { EventLogShape, ViewEntryWrite } from "../../log/event-log.ts"
import type { ViewChange } from "../../domain/catalog.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import { viewChangeCopy, type CompiledView } from "../../domain/compile-views.ts"
import { copyData } from "../../domain/codecs.ts"
import type { StoreError } from "../../domain/errors.ts"
import type { StoredEvent } from "../../domain/events.ts"
import { runUserCode } from "../../domain/decide/user-code.ts"
import { makePacer } from "../../log/paced-read.ts"
import { parseViewEntry, viewEntryJson, type StoredEntry } from "../../log/view-entry-record.ts"
import { makeFoldRows } from "./fold-rows.ts"
import { misfitFailure, viewFailure } from "./view-fold.ts"

/** A paced fold puts its changed entries once it holds this many. */
export const HELD_ENTRIES = 1000

/** An entry a fold changed: its key, its stored text (undefined: removed), the seq of its last change. */
export interface ChangedEntry {
  readonly key: string
  /** The stored text (`viewEntryJson`), or undefined when the entry is removed. */
  readonly text: string | undefined
  readonly seq: number
}

/** One keyed view's outcome over some changes: the entries they changed, or why the view failed. */
export type KeyedOutcome =
  | { readonly _tag: "Changed"; readonly entries: ReadonlyArray<ChangedEntry> }
  | { readonly _tag: "Failed"; readonly reason: string; readonly stack: string; readonly seq: number }

interface Touched {
  /** The entry as it stood before these changes (undefined: none). */
  readonly stored: StoredEntry | undefined
  /** The typed entry after the changes so far (undefined: removed). */
  value: unknown
  seq: number
}

/**
 * Folds `changes` into `view`'s entries: per change it folds, its key, the entry as it stands (`read`: the stored
 * one the first time the changes touch the key), then evolve; at the end each touched entry is encoded and compared
 * with the stored one. Answers only the entries whose text changed. User code failing fails the view: never throws
 * for it (a store that cannot be read throws, as `read` does).
 */
export const foldKeyedChanges = (
  view: CompiledView,
  changes: Iterable<ViewChange>,
  read: (key: string) => StoredEntry | undefined
): KeyedOutcome => {
  const touched = new Map<string, Touched>()
  let last: StoredEvent | undefined
  for (const served of changes) {
    if (!view.folds(served.event)) continue
    // One copy per change, for key and evolve: neither may change the event or rows others see.
    const change = viewChangeCopy(served)
    const keyed = runUserCode(() => view.key!(change))
    if (Either.isLeft(keyed)) return failed(view, change.event, keyed.left.reason, keyed.left.trace)
    const key = keyed.right
    if (key === undefined) continue
    let t = touched.get(key)
    if (t === undefined) {
      const stored = read(key)
      let value: unknown = undefined
      if (stored !== undefined) {
        const decoded = view.decode(JSON.parse(stored.json))
        if (Either.isLeft(decoded)) return failed(view, change.event, `its stored entry ${JSON.stringify(key)} does not fit its schema: ${decoded.left}`, "")
        value = decoded.right
      }
      touched.set(key, (t = { stored, value, seq: stored?.seq ?? 0 }))
    }
    // An entry of its own: decoded from the stored text, or evolve's own last answer, or a copy of `initial`
    // (which must stay as declared).
    const entry = t.value === undefined ? copyData(view.initial) : t.value
    const evolved = runUserCode(() => view.evolve(entry, change))
    if (Either.isLeft(evolved)) return failed(view, change.event, evolved.left.reason, evolved.left.trace)
    t.value = evolved.right
    t.seq = change.event.seq
    last = change.event
  }
  const entries: Array<ChangedEntry> = []
  for (const [key, t] of touched) {
    if (t.value === undefined) {
      if (t.stored !== undefined) entries.push({ key, text: undefined, seq: t.seq })
      continue
    }
    const encoded = view.encode(t.value)
    if (Either.isLeft(encoded)) {
      const reason = misfitFailure(view, last, `entry ${JSON.stringify(key)}: ${encoded.left}`)
      return { _tag: "Failed", reason, stack: reason, seq: last?.seq ?? 0 }
    }
    if (t.stored !== undefined && encoded.right === t.stored.json) continue
    entries.push({ key, text: viewEntryJson(t.seq, encoded.right), seq: t.seq })
  }
  return { _tag: "Changed", entries }
}

const failed = (view: CompiledView, event: StoredEvent, reason: string, stack: string): KeyedOutcome => {
  const message = viewFailure(view, event, reason)
  return { _tag: "Failed", reason: message, stack: stack === "" ? message : stack, seq: event.seq }
}

/** The writes of a view's changed entries, under its definition. */
export const entryWrites = (name: string, definition: string, entries: ReadonlyArray<ChangedEntry>): Array<ViewEntryWrite> =>
  entries.map((e) => ({ name, definition, key: e.key, json: e.text }))

/** Where a fold from the log reads the entries as they stand, and puts those a chunk changed. */
export interface KeyedSink {
  readonly read: (view: CompiledView, key: string) => StoredEntry | undefined
  readonly put: (view: CompiledView, entries: ReadonlyArray<ChangedEntry>) => Effect.Effect<void, StoreError>
  /** Reads ahead the entries a chunk's changes will read (a store read asynchronously: keyed-pg-store.ts). */
  readonly before?: (view: CompiledView, changes: ReadonlyArray<ViewChange>) => Effect.Effect<void, StoreError>
}

/**
 * Keyed views folded from seq 1 (or from entries exact at seq `from`, a snapshot: then the row an entity had at
 * `from` is rebuilt from its own events, `log.eventsOf`, the first time the tail touches it), resumable: `readTo`
 * reads the events after the last one read, up to `upTo` (default: the head), a chunk at a time; each chunk's
 * changed entries go to the sink before the next is read. A view whose user code fails stops there (`failures`).
 * `paced`, for a fold that runs while requests are served: the log is read in small slices, a turn of the event
 * loop between them (paced-read.ts), and the changed entries are held (and read from) until HELD_ENTRIES of them
 * or the end of the read, then put in one write, not one per slice.
 */
export const makeKeyedFolder = (log: EventLogShape, catalog: CompiledApp, views: ReadonlyArray<CompiledView>, sink: KeyedSink, from = 0, paced = false) => {
  let position = from
  let read = 0
  const pacer = makePacer()
  // The entries a paced fold changed and has not put yet, per view: its reads see them first.
  const held = new Map<string, Map<string, ChangedEntry>>(views.map((v) => [v.name, new Map()]))
  const heldCount = () => {
    let count = 0
    for (const entries of held.values()) count += entries.size
    return count
  }
  const readEntry = (view: CompiledView, key: string): StoredEntry | undefined => {
    const entry = held.get(view.name)!.get(key)
    if (entry === undefined) return sink.read(view, key)
    return entry.text === undefined ? undefined : parseViewEntry(entry.text)
  }
  // Each view's entries are let go once the sink has them: a failed write keeps them for the next try.
  const putHeld: Effect.Effect<void, StoreError> = Effect.forEach(views, (view) => Effect.suspend(() => {
    const entries = held.get(view.name)!
    return entries.size === 0 ? Effect.void : Effect.tap(sink.put(view, [...entries.values()]), () => Effect.sync(() => entries.clear()))
  }), { discard: true })
  const put = (view: CompiledView, entries: ReadonlyArray<ChangedEntry>): Effect.Effect<void, StoreError> => {
    if (!paced) return sink.put(view, entries)
    const mine = held.get(view.name)!
    for (const e of entries) mine.set(e.key, e)
    return heldCount() >= HELD_ENTRIES ? putHeld : Effect.void
  }
  const types = new Set(views.flatMap((v) => [...v.types]))
  const rows = makeFoldRows(catalog, { log, from, types })
  const failures = new Map<string, { readonly reason: string; readonly stack: string; readonly seq: number }>()
  const foldChunk = (events: ReadonlyArray<StoredEvent>): Effect.Effect<void, StoreError> => Effect.zipRight(rows.seed(events), Effect.suspend(() => foldSeeded(events)))
  const foldSeeded = (events: ReadonlyArray<StoredEvent>): Effect.Effect<void, StoreError> => {
    const changes: Array<ViewChange> = []
    for (const event of events) {
      read++
      position = event.seq
      if (!types.has(event.type)) continue
      changes.push({ event, ...rows.apply(event) })
    }
    if (changes.length === 0) return Effect.void
    const foldView = (view: CompiledView) => {
      if (failures.has(view.name)) return Effect.void
      const outcome = foldKeyedChanges(view, changes, (key) => readEntry(view, key))
      if (outcome._tag === "Failed") {
        failures.set(view.name, outcome)
        return Effect.void
      }
      return outcome.entries.length === 0 ? Effect.void : put(view, outcome.entries)
    }
    const before = sink.before
    return Effect.forEach(views, (view) =>
      before === undefined || failures.has(view.name) ? foldView(view) : Effect.zipRight(before(view, changes), Effect.suspend(() => foldView(view))), { discard: true })
  }

  /** Reads and folds the events after the last one read, up to `upTo` (default: the head); answers the last seq read. */
  const readTo = (upTo?: number): Effect.Effect<number, StoreError> =>
    Effect.suspend(() => {
      // Read up to the bound already: what a refused write left held is put now.
      if (upTo !== undefined && upTo <= position) return Effect.as(putHeld, position)
      const events = paced ? pacer.read(log, position + 1) : log.readFrom(position + 1)
      return (upTo === undefined ? events : Stream.takeWhile(events, (e) => e.seq <= upTo)).pipe(
        Stream.runForEachChunk((chunk) => paced ? pacer.slices(Chunk.toReadonlyArray(chunk), foldChunk) : foldChunk(Chunk.toReadonlyArray(chunk))),
        Effect.zipRight(putHeld),
        // Events of types no view folds still move the position: read up to the bound, nothing is left before it.
        Effect.map(() => (upTo === undefined ? position : Math.max(position, upTo))),
        Effect.tap((at) => Effect.sync(() => (position = at)))
      )
    })

  return { readTo, failures: (): ReadonlyMap<string, { readonly reason: string; readonly stack: string; readonly seq: number }> => failures, read: () => read, position: () => position }
}
