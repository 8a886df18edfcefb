/**
 * Views folded from the log alone: every event from seq 1, with the rows before and after it rebuilt alongside
 * (in their served form: normalised to the app's schema, as the live rows are), through each view's `evolve`.
 * Startup uses it for a view with no usable stored state; `wo replay --app` uses it to check the stored ones.
 */
import { Effect, Either, Stream } from "effect"
import type { EventLogShape } from "../log/event-log.ts"
import type { Row } from "../domain/catalog.ts"
import type { CompiledApp } from "../domain/compile.ts"
import type { CompiledView } from "../domain/compile-views.ts"
import { evolve as evolveRow } from "../domain/decider.ts"
import type { StoreError } from "../domain/errors.ts"
import type { StoredEvent } from "../domain/events.ts"
import { runUserCode } from "../domain/user-code.ts"
import { normaliseRow } from "./schema-check.ts"

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

/** The row after `event`, in the current schema's form (defaults applied), as the live rows hold it. */
export const rowAfter = (catalog: CompiledApp, before: Row | null, event: StoredEvent): Row | null => {
  const next = evolveRow(before ?? undefined, event)
  if (next === undefined) return null
  const type = catalog.types.get(event.type)
  if (type === undefined) return next
  const normalised = normaliseRow(type.normalise, next)
  return Either.isRight(normalised) ? normalised.right : next
}

interface Folding {
  readonly view: CompiledView
  value: unknown
  json: string | undefined
  seq: number
  failed: string | undefined
  last: StoredEvent | undefined
}

/**
 * Folds `views` over the whole log. With `trackChanges`, each folded event's value is encoded and compared, so
 * `seq` is the exact sequence of the last change (what a live view reports); without, only the end is encoded.
 */
export const foldViews = (
  log: EventLogShape,
  catalog: CompiledApp,
  views: ReadonlyArray<CompiledView>,
  trackChanges: boolean
): Effect.Effect<Map<string, FoldedView>, StoreError> =>
  Effect.gen(function* () {
    const types = new Set(views.flatMap((v) => [...v.types]))
    const rows = new Map<string, Map<string, Row>>()
    const folding: Array<Folding> = views.map((view) => ({
      view,
      value: view.initial,
      json: trackChanges ? Either.getOrUndefined(view.encode(view.initial)) : undefined,
      seq: 0,
      failed: undefined,
      last: undefined
    }))
    if (types.size > 0) {
      yield* log.readFrom(1).pipe(
        Stream.runForEachChunk((chunk) =>
          Effect.sync(() => {
            for (const event of chunk) {
              if (!types.has(event.type)) continue
              let table = rows.get(event.type)
              if (table === undefined) rows.set(event.type, (table = new Map()))
              const before = table.get(event.id) ?? null
              const after = rowAfter(catalog, before, event)
              if (after === null) table.delete(event.id)
              else table.set(event.id, after)
              for (const f of folding) {
                if (f.failed !== undefined || !f.view.folds(event)) continue
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
          }))
      )
    }
    const folded = new Map<string, FoldedView>()
    for (const f of folding) {
      if (f.failed !== undefined) {
        folded.set(f.view.name, { seq: f.seq, failed: f.failed })
        continue
      }
      const encoded = f.view.encode(f.value)
      folded.set(f.view.name, Either.isLeft(encoded)
        ? { seq: f.last?.seq ?? 0, failed: misfitFailure(f.view, f.last, encoded.left) }
        : { value: f.value, valueJson: encoded.right, seq: f.seq })
    }
    return folded
  })
