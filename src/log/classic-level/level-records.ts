/**
 * The event and row records of the classic-level store, decoded and checked against the key they sit under; the
 * log, `wo verify` and the loss survey read through them.
 */
import type { Row } from "../../domain/catalog.ts"
import type { StoredEvent } from "../../domain/events.ts"
import { isCanonicalId } from "../../domain/ids.ts"
import type { StoredRow } from "../event-log.ts"
import * as K from "./log-keys.ts"
import { RecordCorrupt, unsealJson } from "../record.ts"

/** Records per native iterator call: one `nextv` instead of one pull per record. */
export const READ_BATCH = 1000

/**
 * A key range read in batches of READ_BATCH: classic-level stops a `nextv` at `highWaterMarkBytes` (16 KiB by
 * default, about 90 events), which made a full read ten times as many native calls as it needed.
 */
export const batchedRange = (gte: string, lt: string) => ({ gte, lt, highWaterMarkBytes: READ_BATCH * 1024 })

/** The stored row record: the row as served, with the schema version of its type it was written with. */
interface RowRecord {
  readonly schema?: number
  readonly row: Row
}

/** A row's stored payload (sealed under its key); tools that write a data dir directly use it too. */
export const rowPayload = (schema: number, rowJson: string) => `{"schema":${schema},"row":${rowJson}}`

export const decodeEvent = (key: string, value: string): StoredEvent => {
  const event = unsealJson<StoredEvent>(key, value)
  if (event === null || typeof event !== "object" || event.seq !== K.seqOfEventKey(key)) {
    throw new RecordCorrupt(`corrupt log: key ${key} holds event seq ${event?.seq}`)
  }
  return event
}

export const decodeRow = (key: string, value: string): StoredRow => {
  const record = unsealJson<RowRecord>(key, value)
  const type = K.typeOfRowKey(key)
  if (record?.row === undefined || !isCanonicalId(String(record.row.id)) || K.rowKey(type, String(record.row.id)) !== key) {
    throw new RecordCorrupt(`corrupt row: key ${key} does not hold the row it names`)
  }
  return { type, row: record.row, schema: record.schema }
}
