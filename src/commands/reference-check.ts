/**
 * References, checked in the writer against live rows (this batch's earlier decisions first, then the rows):
 * an event that sets a `ref("books")` field to an id of no live `books` row is refused (`missing_reference`),
 * and so is the delete of a row that live rows still reference (`still_referenced`, naming the first few).
 * The referencing rows are found through the equality index of the referencing field, so a delete reads only
 * the rows that hold its id. An app command's `ref` params are references too: each must name a live row.
 *
 * On a shared log another node may delete a referenced row, or reference a deleted one, after this node decided:
 * the batch then carries what it references (`batchReferences`), which the log checks again at commit, under the
 * lock that serialises writers (log/postgres/append-plan.ts); an entry that fails it is decided again here.
 */
import type { Row } from "../domain/catalog.ts"
import type { CompiledType } from "../domain/compile.ts"
import type { EventDraft } from "../domain/decide/decider.ts"
import type { CompiledCommand } from "../domain/compile-commands.ts"
import { MAX_ISSUE_TEXT, Rejected } from "../domain/errors.ts"
import { isCanonicalId } from "../domain/ids.ts"
import { streamKey } from "../domain/events.ts"
import type { RowsShape } from "../projections/rows/rows.ts"
import type { BatchReferences } from "../log/event-log.ts"
import type { Decided, Queued } from "./submission.ts"

export const MISSING_REFERENCE = "missing_reference"
export const STILL_REFERENCED = "still_referenced"

/** How many referencing rows a `still_referenced` refusal names. */
const NAMED = 3

/** The rows decided earlier in the batch, by streamKey: the row after them, null when deleted. */
export type Overlay = ReadonlyMap<string, Row | null>

const live = (rows: RowsShape, overlay: Overlay, type: string, id: string): Row | undefined => {
  const key = streamKey(type, id)
  return overlay.has(key) ? overlay.get(key) ?? undefined : rows.get(type, id)
}

/** The refusal of an event that breaks a reference, or undefined. Cheap when the type has no references. */
export const referenceRefusal = (
  type: CompiledType,
  id: string,
  operation: string,
  draft: EventDraft,
  rows: RowsShape,
  overlay: Overlay
): Rejected | undefined => {
  const { refs, referencedBy } = type.rules
  if (draft.kind === "deleted") {
    return referencedBy.length === 0 ? undefined : stillReferenced(type, id, operation, rows, overlay)
  }
  if (refs.size === 0) return undefined
  for (const [field, target] of refs) {
    const value = draft.data[field]
    if (value === undefined || value === null) continue
    // A row may reference itself; the event being decided is what creates or keeps it.
    if (target === type.name && value === id) continue
    // Another spelling of an id ("01" for 1) is no row: never looked up, so that it cannot reach row 1's key.
    if (!isCanonicalId(value) || live(rows, overlay, target, value as string) === undefined) return missingReference(type.name, id, operation, target, value)
  }
  return undefined
}

const missingReference = (type: string, id: string, operation: string, target: string, value: unknown) =>
  new Rejected({ type, id, operation, code: MISSING_REFERENCE, reason: `${target} ${clipped(String(value))} does not exist`, target })

/** An id quoted in a refusal, cut as error texts are (a client may send megabytes). */
const clipped = (id: string) => (id.length > MAX_ISSUE_TEXT ? `${id.slice(0, MAX_ISSUE_TEXT)}…` : id)

/**
 * The refusal of an app command whose `ref` params spell an id other than canonically (`"01"`, `"+1"`):
 * `missing_reference`, as a ref field holding it would be, decided before the writer reads a row. Whether a
 * canonical id names a live row is the command's own business (`ctx.get`) and its changes' reference checks.
 */
export const paramsReferenceRefusal = (command: CompiledCommand, params: Readonly<Record<string, unknown>>): Rejected | undefined => {
  for (const [param, target] of command.refs) {
    const value = params[param]
    if (value === undefined || value === null || isCanonicalId(value)) continue
    return missingReference(command.name, "", command.name, target, value)
  }
  return undefined
}

/**
 * The refusal of an app command whose `ref` param names no live row (as the batch left it so far): the same
 * `missing_reference` a ref field would get, rather than whatever the command's code does with a missing row.
 */
export const paramsMissingRefusal = (
  command: CompiledCommand,
  params: Readonly<Record<string, unknown>>,
  lookup: (type: string, id: string) => Row | undefined
): Rejected | undefined => {
  for (const [param, target] of command.refs) {
    const value = params[param]
    if (value === undefined || value === null) continue
    if (!isCanonicalId(value) || lookup(target, value as string) === undefined) return missingReference(command.name, "", command.name, target, value)
  }
  return undefined
}

/**
 * What a decided batch references, for a shared log to check again at commit: per entry, the rows its ref fields
 * are set to (and, on an app command's first entry, the rows its ref params name); per delete, the fields that may
 * reference the deleted row. `decidedAt`: the seq the rows stood at when the batch was decided. Undefined when the
 * batch references nothing.
 */
export const batchReferences = (
  waiters: ReadonlyArray<Queued>,
  spans: ReadonlyArray<number>,
  changes: ReadonlyArray<Decided>,
  decidedAt: number
): BatchReferences | undefined => {
  let targets: Map<number, Array<{ readonly type: string; readonly id: string }>> | undefined
  let incoming: Map<number, ReadonlyArray<{ readonly type: string; readonly field: string }>> | undefined
  const target = (entry: number, type: string, id: string) => {
    targets ??= new Map()
    const list = targets.get(entry)
    if (list === undefined) targets.set(entry, [{ type, id }])
    else list.push({ type, id })
  }
  for (let w = 0, i = 0; w < waiters.length; i += spans[w], w++) {
    const p = waiters[w]
    if (p.kind === "command") {
      for (const [param, type] of p.command.refs) {
        const value = p.params[param]
        if (typeof value === "string" && isCanonicalId(value)) target(i, type, value)
      }
    }
    for (let k = i; k < i + spans[w]; k++) {
      const { event } = changes[k]
      const type = p.kind === "command" ? p.app.types.get(event.type) : p.type
      if (type === undefined) continue
      const { refs, referencedBy } = type.rules
      if (event.kind === "deleted") {
        if (referencedBy.length > 0) (incoming ??= new Map()).set(k, referencedBy)
        continue
      }
      if (refs.size === 0) continue
      for (const [field, to] of refs) {
        const value = event.data[field]
        if (typeof value !== "string" || (to === event.type && value === event.id)) continue
        target(k, to, value)
      }
    }
  }
  if (targets === undefined && incoming === undefined) return undefined
  return { decidedAt, targets: targets ?? new Map(), incoming: incoming ?? new Map() }
}

/** Live rows that reference `type` `id`: the indexed rows as the overlay has them now, plus rows set in this batch. */
const stillReferenced = (type: CompiledType, id: string, operation: string, rows: RowsShape, overlay: Overlay): Rejected | undefined => {
  const found: Array<string> = []
  let count = 0
  const note = (referencing: string, referencingId: string) => {
    count++
    if (found.length < NAMED) found.push(`${referencing} ${referencingId}`)
  }
  for (const { type: referencing, field } of type.rules.referencedBy) {
    const seen = new Set<string>()
    for (const n of rows.table(referencing).idsWhere(field, id)) {
      const rid = String(n)
      seen.add(rid)
      if (referencing === type.name && rid === id) continue
      const row = live(rows, overlay, referencing, rid)
      if (row !== undefined && row[field] === id) note(referencing, rid)
    }
    // Rows this batch created or moved onto `id` are not in the index yet.
    if (overlay.size === 0) continue
    const prefix = `${referencing}/`
    for (const [key, row] of overlay) {
      if (row === null || !key.startsWith(prefix) || row[field] !== id || seen.has(row.id)) continue
      if (referencing === type.name && row.id === id) continue
      note(referencing, row.id)
    }
  }
  if (count === 0) return undefined
  const named = count > found.length ? `${found.join(", ")} and ${count - found.length} more` : found.join(", ")
  return new Rejected({ type: type.name, id, operation, code: STILL_REFERENCED, reason: `${named} ${count === 1 ? "still references" : "still reference"} ${type.name} ${id}` })
}
