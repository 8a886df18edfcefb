/**
 * Checksums and decoding for what the PostgreSQL store holds. Every events, rows, types and views row carries the
 * CRC-32C of record.ts over a key naming it (`r!<type>/<id>`, `t!<type>`, `v!<name>`; an event: see below) and a
 * payload made of all its other columns, so a changed value, or a value moved under another key, is a mismatch when
 * it is loaded: a StoreError naming the key, never a changed row served. Rows come from the driver as
 * strings (bigint and json columns are read as text) and are decoded with Schema before they are trusted.
 *
 * An event's checksum has two forms, told apart by the stored text:
 *   - `<8 hex>`, keyed by its seq (`e!<seq>`): every event written before seq-shiftable batches, still verified so;
 *   - `@<8 hex>`, keyed by its entity and version (`e!<type>/<id>@<version>`, unique in the log): every event
 *     written since. It does not depend on the seq, so the append function may write a batch at later seqs than it
 *     was planned at (another node's commit moved the head in between: append.ts) without a checksum to redo.
 * What the seq-free form does not catch by itself: an event moved to another seq unchanged (two events' seqs
 * swapped, say). A move that leaves a gap or a duplicate seq is still caught by seq continuity (readers and `wo
 * verify` check every seq from 1 to the head); a swap of two events of one entity by its version continuity (`wo
 * verify`: 1, then +1). A swap of two events of different entities passes both: each entity's history is intact,
 * only their relative order changed, which a view folding both could see. That needs write access to the table and a
 * deliberate edit of two seqs (a flipped bit changes one value), and the seq-keyed form catches it only for the
 * events that still carry it.
 */
import { Either, ParseResult, Schema } from "effect"
import type { Row } from "../../domain/catalog.ts"
import type { StoreError } from "../../domain/errors.ts"
import type { EventKind, StoredEvent } from "../../domain/events.ts"
import type { Actor } from "../../domain/actor.ts"
import { readFailed, RecordCorrupt, seal, unseal } from "../record.ts"
import type { StoredKey } from "../event-log.ts"
import { decodeKeyPayload } from "../key-record.ts"

const HEX = 8

/** The checksum column for `payload` under `key`: record.ts's seal, without the payload. */
export const checksum = (key: string, payload: string) => seal(key, payload).slice(0, HEX)

const verify = (key: string, sum: string, payload: string) => {
  unseal(key, sum + payload)
  return payload
}

const parseJson = <A>(key: string, text: string): A => {
  try {
    return JSON.parse(text) as A
  } catch {
    throw new RecordCorrupt(`corrupt record at key ${key}: not valid JSON`)
  }
}

const corrupt = (e: unknown) =>
  readFailed(e)

/** Runs a decoder that throws RecordCorrupt; the failure as a StoreError. */
export const decodeOrFail = <A>(f: () => A): Either.Either<A, StoreError> => {
  try {
    return Either.right(f())
  } catch (e) {
    return Either.left(corrupt(e))
  }
}

/** A Schema decode failure as RecordCorrupt naming the record. */
const decoder = <A, I>(schema: Schema.Schema<A, I>, what: string) => {
  const decode = Schema.decodeUnknownEither(schema)
  return (raw: unknown, key: string): A => {
    const result = decode(raw)
    if (Either.isLeft(result)) {
      throw new RecordCorrupt(`corrupt record at key ${key}: ${what} does not decode: ${ParseResult.TreeFormatter.formatErrorSync(result.left)}`)
    }
    return result.right
  }
}

const Int = Schema.Int
const BigIntText = Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())
const Kind = Schema.Literal("created", "updated", "deleted", "invoked")

// ---- events

/** Where an event is, as errors name it; and the key of its checksum in the old form (by seq). */
export const eventKey = (seq: number) => `e!${seq}`

/** The checksummed payload of an event: every column but seq (in the old form's key) and the checksum. */
export const eventPayload = (e: {
  readonly type: string
  readonly id: string
  readonly version: number
  readonly kind: EventKind
  readonly schema: number
  readonly at: number
  readonly method: string | null
  readonly params: string | null
  readonly data: string
  readonly command: string | null
  readonly correlation: string | null
  readonly actor: string | null
}) =>
  `${JSON.stringify([e.type, e.id, e.version, e.kind, e.schema, e.at, e.method])}\n${e.params ?? ""}\n${e.data}` +
  // An app command's name and correlation, after the data (JSON text has no raw newline); events without them
  // (every event of a store written before them) keep the payload, and so the checksum, they had.
  (e.command === null && e.correlation === null ? "" : `\n${JSON.stringify([e.command, e.correlation])}`) +
  // The actor's JSON object last (the command's part is an array: the two cannot be taken for each other); events
  // written before format 8 have none, and keep their payload and checksum.
  (e.actor === null ? "" : `\n${e.actor}`)

/** The key of an event's checksum in the seq-free form: its entity and version, unique in the log. */
export const eventEntityKey = (type: string, id: string, version: number) => `e!${type}/${id}@${version}`
/** Marks a checksum of the seq-free form (hex never holds it). */
const SEQ_FREE = "@"

/** The checksum column of an event written now: the seq-free form. */
export const eventChecksum = (e: Parameters<typeof eventPayload>[0]) => SEQ_FREE + checksum(eventEntityKey(e.type, e.id, e.version), eventPayload(e))

/** Verifies an event row's checksum in either form; throws RecordCorrupt naming the event by its seq. */
const verifyEvent = (seq: number, e: Parameters<typeof eventPayload>[0] & { readonly checksum: string }) => {
  const seqFree = e.checksum.length === HEX + 1 && e.checksum.startsWith(SEQ_FREE)
  const key = seqFree ? eventEntityKey(e.type, e.id, e.version) : eventKey(seq)
  try {
    unseal(key, (seqFree ? e.checksum.slice(1) : e.checksum) + eventPayload(e))
  } catch {
    throw new RecordCorrupt(`corrupt record at key ${eventKey(seq)}: checksum mismatch`)
  }
}

/** An actor's JSON, made once per actor object (most events share one: REST's, a principal's, a session's). */
const actorTexts = new WeakMap<Actor, string>()
const actorJson = (actor: Actor) => {
  let text = actorTexts.get(actor)
  if (text === undefined) actorTexts.set(actor, (text = JSON.stringify(actor)))
  return text
}

/** The columns of an event, as the append writes them. */
export const eventColumns = (event: StoredEvent) => {
  const columns = {
    seq: event.seq,
    type: event.type,
    id: event.id,
    version: event.version,
    kind: event.kind,
    schema: event.schema ?? 1,
    at: event.at,
    method: event.method ?? null,
    params: event.params === undefined ? null : JSON.stringify(event.params),
    data: JSON.stringify(event.data),
    command: event.command ?? null,
    correlation: event.correlation ?? null,
    actor: event.actor === undefined ? null : actorJson(event.actor)
  }
  // The seq-free form: the append may write the event at a later seq than planned (append.ts).
  return Object.assign(columns, { checksum: eventChecksum(columns) })
}

/**
 * The events table's columns in the order the log's readers select them (EVENT_COLUMNS) and a notification carries
 * them (schema.ts: each event a JSON array of them).
 */
export const EVENT_ROW_COLUMNS = ["seq", "type", "id", "version", "kind", "schema", "at", "method", "params", "data", "checksum", "command", "correlation", "actor"] as const
/** Read as text: the bigints (a JavaScript number would round them) and the JSON columns (their stored text is checksummed). */
const READ_AS_TEXT: ReadonlySet<string> = new Set(["seq", "at", "params", "data", "actor"])
/**
 * The select list that reads an event row as `EventRow` expects it. It renames seq to text: order by the
 * table's column (`from events e ... order by e.seq`), never by the output name (text order puts 100 before 99).
 */
export const EVENT_COLUMNS = EVENT_ROW_COLUMNS.map((c) => (READ_AS_TEXT.has(c) ? `${c}::text as ${c}` : c)).join(", ")

const EventRow = Schema.Struct({
  seq: BigIntText,
  type: Schema.String,
  id: Schema.String,
  version: Int,
  kind: Kind,
  schema: Int,
  at: BigIntText,
  method: Schema.NullOr(Schema.String),
  params: Schema.NullOr(Schema.String),
  data: Schema.String,
  checksum: Schema.String,
  command: Schema.NullOr(Schema.String),
  correlation: Schema.NullOr(Schema.String),
  actor: Schema.NullOr(Schema.String)
})
const decodeEventRow = decoder(EventRow, "the events row")

/** A seq or a time as the driver gives a sound one: digits, no leading zero, a safe integer. */
const PLAIN_COUNT = /^(?:0|[1-9]\d{0,14})$/
const isNullOrString = (v: unknown) => v === null || typeof v === "string"

/**
 * The events row as EventRow decodes it, checked by hand; undefined when a column is in any other form (the Schema
 * decode then runs, and names what is wrong). Hand-tuned: a node decodes every event of every other node (the
 * tailer), at the rate of the whole cluster, and the Schema decode was most of what each of them cost it.
 */
const plainEventRow = (raw: Readonly<Record<string, unknown>>): Schema.Schema.Type<typeof EventRow> | undefined => {
  const { seq, type, id, version, kind, schema, at, method, params, data, checksum, command, correlation, actor } = raw
  if (typeof seq !== "string" || !PLAIN_COUNT.test(seq) || typeof at !== "string" || !PLAIN_COUNT.test(at)) return undefined
  if (!Number.isSafeInteger(version) || !Number.isSafeInteger(schema)) return undefined
  if (kind !== "created" && kind !== "updated" && kind !== "deleted" && kind !== "invoked") return undefined
  if (typeof type !== "string" || typeof id !== "string" || typeof data !== "string" || typeof checksum !== "string") return undefined
  if (!isNullOrString(method) || !isNullOrString(params) || !isNullOrString(command) || !isNullOrString(correlation) || !isNullOrString(actor)) return undefined
  return {
    seq: Number(seq), type, id, version: version as number, kind, schema: schema as number, at: Number(at), method: method as string | null,
    params: params as string | null, data, checksum, command: command as string | null, correlation: correlation as string | null, actor: actor as string | null
  }
}

/** An events row, verified and decoded; throws RecordCorrupt naming the event. */
export const decodeEvent = (raw: { readonly seq?: unknown }): StoredEvent => {
  const key = eventKey(Number(raw.seq))
  const e = plainEventRow(raw) ?? decodeEventRow(raw, key)
  verifyEvent(e.seq, e)
  const event: StoredEvent = {
    seq: e.seq,
    at: e.at,
    type: e.type,
    id: e.id,
    version: e.version,
    schema: e.schema,
    kind: e.kind,
    ...(e.method === null ? {} : { method: e.method }),
    ...(e.params === null ? {} : { params: parseJson<Record<string, unknown>>(key, e.params) }),
    data: parseJson<Record<string, unknown>>(key, e.data),
    ...(e.command === null ? {} : { command: e.command }),
    ...(e.correlation === null ? {} : { correlation: e.correlation }),
    ...(e.actor === null ? {} : { actor: parseJson<Actor>(key, e.actor) })
  }
  return event
}

// ---- rows

export const rowKey = (type: string, id: string) => `r!${type}/${id}`

/** The checksummed payload of a rows row: version, schema and the row's JSON ("null" for a tombstone). */
export const rowPayload = (version: number, schema: number, rowJson: string | null) => `${version}\n${schema}\n${rowJson ?? "null"}`

export const ROW_COLUMNS = "type, id, version, schema, row::text as row, checksum"

const RowRow = Schema.Struct({
  type: Schema.String,
  id: Schema.String,
  version: Int,
  schema: Int,
  row: Schema.NullOr(Schema.String),
  checksum: Schema.String
})
const decodeRowRow = decoder(RowRow, "the rows row")

/** A live rows row, verified and decoded; throws RecordCorrupt naming the row. */
export const decodeRow = (raw: { readonly type?: unknown; readonly id?: unknown }) => {
  const key = rowKey(String(raw.type), String(raw.id))
  const r = decodeRowRow(raw, key)
  verify(key, r.checksum, rowPayload(r.version, r.schema, r.row))
  const row = r.row === null ? null : parseJson<Row>(key, r.row)
  if (row !== null && (typeof row !== "object" || row.id !== r.id || row.version !== r.version)) {
    throw new RecordCorrupt(`corrupt row: key ${key} does not hold the row it names`)
  }
  return { type: r.type, id: r.id, version: r.version, schema: r.schema, row }
}

// ---- types (id counters and live row counts)

export const typeKey = (type: string) => `t!${type}`
export const typePayload = (lastId: number, rowCount: number) => `${lastId}\n${rowCount}`

const TypeRow = Schema.Struct({
  type: Schema.String,
  last_id: BigIntText,
  row_count: BigIntText,
  checksum: Schema.String
})
const decodeTypeRow = decoder(TypeRow, "the types row")

export const TYPE_COLUMNS = "type, last_id::text as last_id, row_count::text as row_count, checksum"

export const decodeType = (raw: { readonly type?: unknown }) => {
  const key = typeKey(String(raw.type))
  const t = decodeTypeRow(raw, key)
  verify(key, t.checksum, typePayload(t.last_id, t.row_count))
  return { type: t.type, lastId: t.last_id, rowCount: t.row_count }
}

// ---- views

export const viewKey = (name: string) => `v!${name}`

const ViewRow = Schema.Struct({ name: Schema.String, record: Schema.String, checksum: Schema.String })
const decodeViewRow = decoder(ViewRow, "the views row")

export const VIEW_COLUMNS = "name, record, checksum"

export const decodeView = (raw: { readonly name?: unknown }) => {
  const key = viewKey(String(raw.name))
  const v = decodeViewRow(raw, key)
  verify(key, v.checksum, v.record)
  return { name: v.name, record: parseJson<unknown>(key, v.record) }
}

/** A views row as loaded: decoded, or (one view's problem, not the store's) why it is corrupt. */
export const decodeViewOrCorrupt = (raw: { readonly name?: unknown }): { name: string; record: unknown; corrupt?: string } => {
  try {
    return decodeView(raw)
  } catch (e) {
    return { name: String(raw.name), record: undefined, corrupt: e instanceof Error ? e.message : String(e) }
  }
}

// ---- the head

const HeadRow = Schema.Struct({ seq: BigIntText, max_seq: Schema.NullOr(BigIntText) })
const decodeHeadRow = decoder(HeadRow, "the log head")

export const HEAD_QUERY = "select h.seq::text as seq, (select max(seq) from writeonce.events)::text as max_seq from writeonce.log_head h"

/** The last committed seq; throws RecordCorrupt when the head and the events disagree. */
export const decodeHead = (raw: unknown) => {
  const h = decodeHeadRow(raw, "log_head")
  const max = h.max_seq ?? 0
  if (max !== h.seq) throw new RecordCorrupt(`corrupt store: log_head is at seq ${h.seq}, but the last event is ${max}`)
  return h.seq
}

// ---- idempotency keys

export const idempotencyKeyOf = (key: string) => `k!${key}`
export const KEY_COLUMNS = "key, result, checksum"

/** A stored idempotency key: the checksum over its result verified, the result decoded (log/key-record.ts). */
export const decodeStoredKey = (raw: { readonly key: string; readonly result: string; readonly checksum: string }): StoredKey => {
  const where = idempotencyKeyOf(raw.key)
  return decodeKeyPayload(raw.key, verify(where, raw.checksum, raw.result), where)
}
