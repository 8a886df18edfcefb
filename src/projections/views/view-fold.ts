/**
 * Views folded from the log alone: every event from seq 1, with the rows before and after it rebuilt alongside
 * (in their served form: normalised to the app's schema, as the live rows are), through each view's `evolve`.
 * Startup uses it for a view with no usable stored state; `wo replay --app` uses it to check the stored ones.
 */
import { Chunk, Effect, Either, Stream } from "effect"
import type { EventLogShape } from "../../log/event-log.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import type { CompiledView } from "../../domain/compile-views.ts"
import type { StoreError } from "../../domain/errors.ts"
import type { StoredEvent } from "../../domain/events.ts"
import { runUserCode } from "../../domain/decide/user-code.ts"
import { makePacer } from "../../log/paced-read.ts"
import { makeFoldRows } from "./fold-rows.ts"

export interface FoldedView {
  /** The typed value (absent once failed). */
  readonly value?: unknown
  /** The value's JSON text, encoded through the view's schema (absent once failed). */
  readonly valueJson?: string
  /** The sequence of the value's last change (0: never changed), when changes were tracked. */
  readonly seq: number
  /** Why the view failed: its evolve threw, or returned a value its schema refuses. */
  readonly failed?: string
}

/** How a failed view explains itself everywhere (log, REST, MCP, stored record); `reason` is what evolve threw, described. */
export const viewFailure = (view: CompiledView, event: StoredEvent, reason: string) =>
  `view ${view.name} failed at event ${event.seq} (${event.type}/${event.id} ${event.method ?? event.kind}): ${reason}`

export const misfitFailure = (view: CompiledView, event: StoredEvent | undefined, why: string) =>
  `view ${view.name}${event === undefined ? "" : ` failed at event ${event.seq} (${event.type}/${event.id} ${event.method ?? event.kind})`}: ` +
  `evolve returned a value that does not fit its schema: ${why}`

/**
 * A fresh copy of the view's initial value, for one fold: an evolve that changes its state in place must not change
 * the declaration's `initial` (another fold, another runtime in the process, starts from it). Copied once per fold,
 * through the view's own codec (its values are plain JSON data in the encoded form); never per event.
 */
export const initialCopy = (view: CompiledView): unknown => {
  const copied = Either.flatMap(view.encode(view.initial), (json) => view.decode(JSON.parse(json)))
  return Either.isRight(copied) ? copied.right : structuredClone(view.initial)
}

/** Where one view's fold starts: a stored value exact at seq `after` (else its initial value, before seq 1). */
export interface FoldStart {
  readonly view: CompiledView
  readonly after: number
  readonly value?: unknown
  readonly json?: string
  readonly seq?: number
}

interface Folding {
  readonly view: CompiledView
  readonly after: number
  value: unknown
  json: string | undefined
  seq: number
  failed: string | undefined
  last: StoredEvent | undefined
}

/**
 * The fold of views over events handed to it in order, from where each `FoldStart` says: `fold` takes the next
 * events (a view before its start skips them), with the rows before and after each rebuilt by `rows`; `result` is
 * each view's value as folded so far. With `trackChanges`, each folded event's value is encoded and compared, so
 * `seq` is the exact sequence of the last change. It reads nothing: the log is read by its caller (`makeViewFolder`
 * here, or another thread's reader: fold-thread.ts).
 */
export const makeFold = (
  catalog: CompiledApp,
  starts: ReadonlyArray<FoldStart>,
  trackChanges: boolean,
  rows: ReturnType<typeof makeFoldRows> = makeFoldRows(catalog)
) => {
  const types = new Set(starts.flatMap((s) => [...s.view.types]))
  const folding: Array<Folding> = starts.map((s) => {
    const value = s.value === undefined ? initialCopy(s.view) : s.value
    return {
      view: s.view,
      after: s.after,
      value,
      json: s.json ?? (trackChanges ? Either.getOrUndefined(s.view.encode(value)) : undefined),
      seq: s.seq ?? 0,
      failed: undefined,
      last: undefined
    }
  })
  let read = 0
  let position = starts.length === 0 ? 0 : starts.reduce((min, s) => Math.min(min, s.after), Number.POSITIVE_INFINITY)

  const fold = (events: ReadonlyArray<StoredEvent>) => {
    for (const event of events) {
      read++
      position = event.seq
      if (!types.has(event.type)) continue
      const { before, after } = rows.apply(event)
      for (const f of folding) {
        if (f.failed !== undefined || event.seq <= f.after || !f.view.folds(event)) continue
        // User code: whatever it throws or returns fails this view alone (encode checks the value).
        const evolved = runUserCode(() => f.view.evolve(f.value, { event, before, after }))
        if (Either.isLeft(evolved)) {
          f.failed = viewFailure(f.view, event, evolved.left.reason)
          f.seq = event.seq
          continue
        }
        f.value = evolved.right
        f.last = event
        if (!trackChanges) continue
        const encoded = f.view.encode(f.value)
        if (Either.isLeft(encoded)) {
          f.failed = misfitFailure(f.view, event, encoded.left)
          f.seq = event.seq
        } else if (encoded.right !== f.json) {
          f.json = encoded.right
          f.seq = event.seq
        }
      }
    }
  }

  /** Each view's value as folded so far. */
  const result = () => {
    const folded = new Map<string, FoldedView>()
    for (const f of folding) {
      if (f.failed !== undefined) {
        folded.set(f.view.name, { seq: f.seq, failed: f.failed })
        continue
      }
      const encoded = f.view.encode(f.value)
      folded.set(f.view.name, Either.isLeft(encoded)
        ? { seq: f.last?.seq ?? f.seq, failed: misfitFailure(f.view, f.last, encoded.left) }
        : { value: f.value, valueJson: encoded.right, seq: trackChanges ? f.seq : (f.last?.seq ?? f.seq) })
    }
    return folded
  }

  return {
    fold,
    result,
    /** Events folded (or skipped) so far. */
    read: () => read,
    /** The seq of the last event handed over (where the starts begin, before any). */
    position: () => position,
    /** Moves the position past events that were not handed over (none of them is of a type folded here). */
    skipTo: (seq: number) => void (position = Math.max(position, seq))
  }
}

/** Reads the log for a fold: `readTo` reads the events after the last one read, up to a bound (default: the head). */
export interface ViewFolder {
  readonly readTo: (upTo?: number) => Effect.Effect<number, StoreError>
  /** Each view's value as folded so far. */
  readonly result: () => Map<string, FoldedView>
  /** Events read so far. */
  readonly read: () => number
  /** Where the fold runs, for a log line (a folder on the reader's own thread has none). */
  readonly place?: () => string
}

/**
 * A fold of views over the log that can be taken further: `readTo` reads the events after the last one it read, up
 * to `upTo` (default: the head at the time of reading), with the rows before and after each event rebuilt alongside.
 * From seq 0 the rows come from the log itself; from a stored value at `s` > 0, the row an entity had at `s` is
 * rebuilt from its own events (`log.eventsOf`) the first time the tail touches it. With `trackChanges`, `seq` is
 * the exact sequence of the last change (`makeFold`). `paced`, for a fold that runs while requests are served:
 * slices of events, a turn of the event loop between them (paced-read.ts).
 */
export const makeViewFolder = (log: EventLogShape, catalog: CompiledApp, starts: ReadonlyArray<FoldStart>, trackChanges: boolean, paced = false): ViewFolder => {
  const from = starts.reduce((min, s) => Math.min(min, s.after), Number.POSITIVE_INFINITY)
  const types = new Set(starts.flatMap((s) => [...s.view.types]))
  const rows = makeFoldRows(catalog, { log, from, types })
  const state = makeFold(catalog, starts, trackChanges, rows)
  /** The paced fold's reads and slices (paced-read.ts): one rhythm across its legs. */
  const pacer = makePacer()
  const foldChunk = state.fold

  /** Reads and folds the events after the last one read, up to `upTo` (default: the head); answers the last seq read. */
  const readTo = (upTo?: number): Effect.Effect<number, StoreError> =>
    Effect.suspend(() => {
      const position = state.position()
      if (types.size === 0 || (upTo !== undefined && upTo <= position)) return Effect.succeed(position)
      const events = paced ? pacer.read(log, position + 1) : log.readFrom(position + 1)
      return Effect.as(
        (upTo === undefined ? events : Stream.takeWhile(events, (e) => e.seq <= upTo)).pipe(
          Stream.runForEachChunk((chunk) => {
            const array = Chunk.toReadonlyArray(chunk)
            const fold = paced
              ? pacer.slices(array, (slice) => Effect.sync(() => foldChunk(slice)))
              : Effect.sync(() => foldChunk(array))
            return Effect.zipRight(rows.seed(array), fold)
          })
        ),
        // Events of types no view folds still move the position: read up to the bound, nothing is left before it.
        undefined
      ).pipe(Effect.map(() => (upTo === undefined ? state.position() : Math.max(state.position(), upTo))))
    }).pipe(Effect.tap((at) => Effect.sync(() => state.skipTo(at))))

  return { readTo, result: state.result, read: state.read }
}

/**
 * Folds `views` over the whole log, each from a fresh copy of its initial value. With `trackChanges`, `seq` is the
 * exact sequence of the last change (what a live view reports); without, only the end is encoded.
 */
export const foldViews = (
  log: EventLogShape,
  catalog: CompiledApp,
  views: ReadonlyArray<CompiledView>,
  trackChanges: boolean
): Effect.Effect<Map<string, FoldedView>, StoreError> =>
  Effect.suspend(() => {
    const folder = makeViewFolder(log, catalog, views.map((view) => ({ view, after: 0 })), trackChanges)
    return Effect.map(folder.readTo(), () => folder.result())
  })
