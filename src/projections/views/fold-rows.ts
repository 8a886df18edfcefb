/**
 * The rows a fold from the log rebuilds beside the views it folds: each event's row before and after it, in the
 * served form (normalised to the app's schema, as the live rows are).
 *
 * Hand-tuned (bench/scenarios/view-refold.ts): a refold runs while the server answers reads, and the rows it keeps
 * are every entity of the view's types (a million rows for a million-event log). Kept as objects, each row survives
 * a young-generation collection and is copied out of it; every collection then pauses the server for milliseconds,
 * several times a second. Kept as their JSON bytes in off-heap chunks, with one small index per entity, the
 * collections copy almost nothing. `before` is decoded again when an event touches a row already seen (its
 * update or delete), which is also why an evolve that changes its `before` or `after` changes nothing kept here.
 */
import { Effect, Either } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { CompiledApp } from "../../domain/compile.ts"
import { evolve as evolveRow } from "../../domain/decide/decider.ts"
import type { StoreError } from "../../domain/errors.ts"
import type { StoredEvent } from "../../domain/events.ts"
import type { EventLogShape } from "../../log/event-log.ts"
import { normaliseRow } from "../rows/schema-check.ts"

/** The row after `event`, in the current schema's form (defaults applied), as the live rows hold it. */
export const rowAfter = (catalog: CompiledApp, before: Row | null, event: StoredEvent): Row | null => {
  const next = evolveRow(before ?? undefined, event)
  if (next === undefined) return null
  const type = catalog.types.get(event.type)
  if (type === undefined) return next
  const normalised = normaliseRow(type.normalise, next)
  return Either.isRight(normalised) ? normalised.right : next
}

/** Off-heap chunks a row's JSON is appended to (a larger row gets a chunk of its own). */
export const CHUNK_BYTES = 1 << 20
/** Chunks are compacted once the bytes of replaced rows pass this, and the live rows' bytes. */
const COMPACT_AFTER_BYTES = 64 * CHUNK_BYTES

/**
 * Rows kept as JSON bytes in off-heap chunks. A row lives in a slot (a small integer); where its bytes are is kept
 * in typed arrays (off-heap as well), so the index from entity to row holds small integers only.
 */
export const makeRowArena = (compactAfterBytes = COMPACT_AFTER_BYTES) => {
  let chunks: Array<Buffer> = []
  let used = CHUNK_BYTES // the current chunk's bytes in use (full: none yet)
  let chunkOf = new Int32Array(1024)
  let offsetOf = new Int32Array(1024)
  let lengthOf = new Int32Array(1024)
  let slots = 0
  const free: Array<number> = []
  let liveBytes = 0
  let deadBytes = 0

  /** Room for `length` bytes at the end of the current chunk (a new chunk when they do not fit): the slot's place. */
  const reserve = (slot: number, length: number) => {
    if (length > CHUNK_BYTES - used) {
      chunks.push(Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, length)))
      used = 0
    }
    chunkOf[slot] = chunks.length - 1
    offsetOf[slot] = used
    lengthOf[slot] = length
    used += length
    liveBytes += length
    return chunks[chunks.length - 1]!
  }

  const put = (slot: number, row: Row) => {
    const json = JSON.stringify(row)
    const length = Buffer.byteLength(json)
    reserve(slot, length).write(json, offsetOf[slot]!, length, "utf8")
  }

  const bytesIn = (from: ReadonlyArray<Buffer>, slot: number) =>
    from[chunkOf[slot]!]!.subarray(offsetOf[slot]!, offsetOf[slot]! + lengthOf[slot]!)

  const grow = () => {
    const wider = (a: Int32Array) => {
      const next = new Int32Array(a.length * 2)
      next.set(a)
      return next
    }
    chunkOf = wider(chunkOf)
    offsetOf = wider(offsetOf)
    lengthOf = wider(lengthOf)
  }

  /** Copies the live rows into fresh chunks: replaced rows' bytes are given back. */
  const compact = () => {
    const former = chunks
    chunks = []
    used = CHUNK_BYTES
    liveBytes = 0
    deadBytes = 0
    for (let slot = 0; slot < slots; slot++) {
      if (lengthOf[slot] === 0) continue
      const bytes = bytesIn(former, slot)
      bytes.copy(reserve(slot, bytes.length), offsetOf[slot]!)
    }
  }

  const release = (slot: number) => {
    deadBytes += lengthOf[slot]!
    liveBytes -= lengthOf[slot]!
    lengthOf[slot] = 0
  }

  return {
    /** A new slot holding `row`. */
    add: (row: Row): number => {
      let slot = free.pop()
      if (slot === undefined) {
        if (slots === chunkOf.length) grow()
        slot = slots++
      }
      put(slot, row)
      return slot
    },
    /** `slot` holds `row` from now on. */
    replace: (slot: number, row: Row) => {
      release(slot)
      put(slot, row)
      if (deadBytes > compactAfterBytes && deadBytes > liveBytes) compact()
    },
    /** The row in `slot`, decoded afresh. */
    get: (slot: number): Row => JSON.parse(bytesIn(chunks, slot).toString("utf8")) as Row,
    remove: (slot: number) => {
      release(slot)
      free.push(slot)
    },
    /** Off-heap bytes in use: the live rows' and, until a compaction gives them back, the replaced ones'. */
    bytes: () => liveBytes + deadBytes
  }
}

/**
 * The rows of a fold's types as its events leave them (`rowAfter`): `apply` answers each event's row before and
 * after it. A fold from the log keeps it beside the views it folds. A fold that starts from stored values exact at
 * seq `from` > 0 (`tail`) calls `seed` with each chunk before applying it: the row at `from` of each entity of its
 * types the chunk touches for the first time is rebuilt from that entity's own events (`log.eventsOf`).
 */
export const makeFoldRows = (
  catalog: CompiledApp,
  tail?: { readonly log: EventLogShape; readonly from: number; readonly types: ReadonlySet<string> }
) => {
  const arena = makeRowArena()
  const slotsByType = new Map<string, Map<string, number>>()
  const apply = (event: StoredEvent): { readonly before: Row | null; readonly after: Row | null } => {
    let slots = slotsByType.get(event.type)
    if (slots === undefined) slotsByType.set(event.type, (slots = new Map()))
    const slot = slots.get(event.id)
    const before = slot === undefined ? null : arena.get(slot)
    const after = rowAfter(catalog, before, event)
    if (slot === undefined) {
      if (after !== null) slots.set(event.id, arena.add(after))
    } else if (after === null) {
      arena.remove(slot)
      slots.delete(event.id)
    } else arena.replace(slot, after)
    return { before, after }
  }
  // Entities whose row at `from` is rebuilt.
  const seeded = new Set<string>()
  const seed = (events: ReadonlyArray<StoredEvent>): Effect.Effect<void, StoreError> => {
    if (tail === undefined || tail.from === 0) return Effect.void
    const wanted = new Map<string, { type: string; id: string }>()
    for (const e of events) {
      const key = `${e.type}\u0000${e.id}`
      if (tail.types.has(e.type) && !seeded.has(key)) wanted.set(key, { type: e.type, id: e.id })
    }
    if (wanted.size === 0) return Effect.void
    for (const key of wanted.keys()) seeded.add(key)
    if (tail.log.eventsOf === undefined) return Effect.dieMessage("folding a view's tail needs a log that reads an entity's events")
    return Effect.map(tail.log.eventsOf([...wanted.values()], tail.from), (history) => {
      for (const event of history) apply(event)
    })
  }
  return { apply, seed }
}
