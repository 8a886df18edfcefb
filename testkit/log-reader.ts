/**
 * Reads a closed data dir straight from classic-level (no server; only the record codec of writeonce) and checks
 * the log's shape: keys and sequences 1..n without gaps, each row's versions 1..n, nothing after a delete, and
 * the stored rows equal to the fold of the log. Used after `kill -9` and after shutdown, before any restart.
 */
import { ClassicLevel } from "classic-level"
import * as K from "../src/log/classic-level/log-keys.ts"
import { unseal, unsealJson } from "../src/log/record.ts"
import type { StoredEvent } from "../src/domain/events.ts"

export type RowJson = { readonly id: string; readonly version: number } & Record<string, unknown>

export interface StoreSnapshot {
  readonly events: ReadonlyArray<StoredEvent>
  /** `type/id` -> the stored (inline) row state. */
  readonly storedRows: ReadonlyMap<string, RowJson>
  readonly checkpoint: number
  readonly counters: ReadonlyMap<string, number>
}

/** Opens the (closed) data dir, reads everything, and closes it again. */
export const readStore = async (dataDir: string): Promise<StoreSnapshot> => {
  const db = new ClassicLevel<string, string>(dataDir, { keyEncoding: "utf8", valueEncoding: "utf8", createIfMissing: false })
  await db.open()
  try {
    const events: Array<StoredEvent> = []
    for await (const [key, value] of db.iterator({ gte: K.EVENTS_START, lt: K.EVENTS_END })) {
      const event = unsealJson<StoredEvent>(key, value)
      if (K.seqOfEventKey(key) !== event.seq) throw new Error(`key ${key} holds seq ${event.seq}`)
      events.push(event)
    }
    const storedRows = new Map<string, RowJson>()
    for await (const [key, value] of db.iterator({ gte: K.ROWS_START, lt: K.ROWS_END })) {
      const { row } = unsealJson<{ row: RowJson }>(key, value)
      storedRows.set(`${K.typeOfRowKey(key)}/${row.id}`, row)
    }
    const cp = await db.get(K.CHECKPOINT_KEY)
    const counters = new Map<string, number>()
    for await (const [key, value] of db.iterator({ gte: K.COUNTER_PREFIX, lt: `${K.COUNTER_PREFIX}~` })) {
      counters.set(key.slice(K.COUNTER_PREFIX.length), Number(unseal(key, value)))
    }
    return { events, storedRows, checkpoint: cp === undefined ? 0 : Number(unseal(K.CHECKPOINT_KEY, cp)), counters }
  } finally {
    await db.close()
  }
}

/** Every event of each row, in log order, keyed `type/id`. */
export const eventsByRow = (events: ReadonlyArray<StoredEvent>) => {
  const out = new Map<string, Array<StoredEvent>>()
  for (const e of events) {
    const key = `${e.type}/${e.id}`
    let list = out.get(key)
    if (list === undefined) out.set(key, (list = []))
    list.push(e)
  }
  return out
}

/** The fold of a row's events, as writeonce defines it ({id, version, ...fields}); undefined once deleted. */
export const foldRow = (events: ReadonlyArray<StoredEvent>): RowJson | undefined => {
  let row: RowJson | undefined
  for (const e of events) {
    if (e.kind === "created") row = { id: e.id, version: e.version, ...e.data }
    else if (e.kind === "deleted") row = undefined
    else if (row !== undefined) row = { ...row, ...e.data, version: e.version }
  }
  return row
}

/** JSON with sorted keys, for order-insensitive comparison. */
export const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value).sort().map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(",")}}`
  }
  return JSON.stringify(value)
}

/**
 * The log's structural problems (empty when whole): global seqs 1..n, per-row versions 1..n starting with a
 * create and ending at most with a delete, a checkpoint equal to the last seq (rows and events are written in
 * one atomic batch), counters covering every id, and stored rows equal to the fold.
 */
export const checkStore = (snapshot: StoreSnapshot): Array<string> => {
  const problems: Array<string> = []
  snapshot.events.forEach((e, i) => {
    if (e.seq !== i + 1 && problems.length < 20) problems.push(`event #${i + 1} has seq ${e.seq} (a gap or a duplicate)`)
  })
  const last = snapshot.events.length
  if (snapshot.checkpoint !== last) problems.push(`checkpoint ${snapshot.checkpoint} != last seq ${last}`)
  const folded = new Map<string, RowJson>()
  for (const [key, list] of eventsByRow(snapshot.events)) {
    list.forEach((e, i) => {
      if (e.version !== i + 1) problems.push(`${key}: event seq ${e.seq} has version ${e.version}, expected ${i + 1}`)
      if (i === 0 && e.kind !== "created") problems.push(`${key}: first event is ${e.kind}`)
      if (i > 0 && e.kind === "created") problems.push(`${key}: created twice`)
      if (i > 0 && list[i - 1].kind === "deleted") problems.push(`${key}: event after its delete`)
    })
    const [type, id] = key.split("/")
    if (Number(id) > (snapshot.counters.get(type) ?? 0)) problems.push(`${key}: id past the counter ${snapshot.counters.get(type)}`)
    const row = foldRow(list)
    if (row !== undefined) folded.set(key, row)
  }
  for (const [key, row] of folded) {
    const stored = snapshot.storedRows.get(key)
    if (stored === undefined) problems.push(`${key}: in the log but not in the stored rows`)
    else if (canonical(stored) !== canonical(row)) problems.push(`${key}: stored row ${canonical(stored)} != fold ${canonical(row)}`)
  }
  for (const key of snapshot.storedRows.keys()) if (!folded.has(key)) problems.push(`${key}: stored but not in the log's fold`)
  return problems
}
