/**
 * A stored idempotency key's payload, the same text in both stores (classic-level seals it under `k!<key>`;
 * PostgreSQL keeps it in `idempotency_keys.result` with a checksum beside it):
 *
 *   {"fingerprint":"<sha256 hex>","at":<ms>,"entries":[{"event":{...},"rowJson":"<row as served>"|null}, ...]}
 *
 * The entries are the submission's as written (seqs and, on a shared log, create ids as the log assigned them),
 * with each row's JSON text as it was answered: a retry is answered with the same bytes.
 */
import { Either, ParseResult, Schema } from "effect"
import type { StoredEvent } from "../domain/events.ts"
import type { AppendEntry, StoredKey } from "./event-log.ts"
import { RecordCorrupt } from "./record.ts"

/** The payload to store for a keyed submission whose entries were written as `entries`. */
export const keyPayload = (fingerprint: string, at: number, entries: ReadonlyArray<AppendEntry>): string =>
  JSON.stringify({
    fingerprint,
    at,
    entries: entries.map(({ event, row, rowJson }) => ({ event, rowJson: row === null ? null : rowJson ?? JSON.stringify(row) }))
  })

const StoredEventShape = Schema.Struct({ seq: Schema.Number, type: Schema.String, id: Schema.String, version: Schema.Number })
const Payload = Schema.Struct({
  fingerprint: Schema.String,
  at: Schema.Number,
  entries: Schema.NonEmptyArray(Schema.Struct({ event: Schema.Unknown, rowJson: Schema.NullOr(Schema.String) }))
})
const decodePayload = Schema.decodeUnknownEither(Schema.parseJson(Payload))
const isEvent = Schema.is(StoredEventShape)

/** The stored key from its payload (checksum already verified); RecordCorrupt naming `where` if it does not decode. */
export const decodeKeyPayload = (key: string, payload: string, where: string): StoredKey => {
  const decoded = decodePayload(payload)
  if (Either.isLeft(decoded)) {
    throw new RecordCorrupt(`corrupt record at key ${where}: not an idempotency key record (${ParseResult.TreeFormatter.formatErrorSync(decoded.left)})`)
  }
  const { fingerprint, at, entries } = decoded.right
  for (const { event } of entries) {
    if (!isEvent(event)) throw new RecordCorrupt(`corrupt record at key ${where}: an entry holds no event`)
  }
  return { key, fingerprint, at, entries: entries.map(({ event, rowJson }) => ({ event: event as StoredEvent, rowJson })) }
}
