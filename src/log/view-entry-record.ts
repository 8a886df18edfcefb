/**
 * A keyed view's stored records.
 *  - An entry (`w!<name>!<definition>!<key>` on classic-level): `{"seq":<n>,"value":<JSON>}`, `seq` the log
 *    sequence of the entry's last change, `value` its JSON text as encoded through the view's schema. Written in the
 *    batch that changed it, so the entries under the definition that serves are exact at the store's head.
 *  - The view's own record (`v!<name>`, beside the whole views' records, view-record.ts):
 *    `{"definition":"<digest>","seq":0,"keyed":true}`, the declaration whose entries serve; with `"failed":"<why>"`
 *    once its key or evolve threw. Missing, of another declaration or failed: the view is folded again from the log.
 */
import { Either, Schema } from "effect"

/** An entry as stored: its JSON text and the seq of its last change. */
export interface StoredEntry {
  readonly json: string
  readonly seq: number
}

const HEAD = '{"seq":'
const VALUE = ',"value":'

/** The stored text of an entry whose value's JSON text is `json`. */
export const viewEntryJson = (seq: number, json: string) => `${HEAD}${seq}${VALUE}${json}}`

/**
 * The entry in a stored text, or undefined when the text is not one. Sliced rather than parsed: the value's text is
 * served as it is, and a read costs no parse of the entry (the checksum guards the text).
 */
export const parseViewEntry = (text: string): StoredEntry | undefined => {
  if (!text.startsWith(HEAD) || !text.endsWith("}")) return undefined
  const at = text.indexOf(VALUE, HEAD.length)
  if (at < 0) return undefined
  const seq = Number(text.slice(HEAD.length, at))
  if (!Number.isSafeInteger(seq) || seq < 0) return undefined
  const json = text.slice(at + VALUE.length, -1)
  return json.length === 0 ? undefined : { json, seq }
}

/** The keyed view's own record: the definition whose entries serve, or why the view failed. */
export const keyedViewRecordJson = (definition: string, failed?: { readonly seq: number; readonly reason: string }) =>
  failed === undefined
    ? `{"definition":${JSON.stringify(definition)},"seq":0,"keyed":true}`
    : `{"definition":${JSON.stringify(definition)},"seq":${failed.seq},"keyed":true,"failed":${JSON.stringify(failed.reason)}}`

const KeyedRecordSchema = Schema.Struct({
  definition: Schema.String,
  seq: Schema.Int.pipe(Schema.nonNegative()),
  keyed: Schema.Literal(true),
  failed: Schema.optional(Schema.String)
})
const decodeKeyedRecord = Schema.decodeUnknownEither(KeyedRecordSchema)

/** The keyed view's record, or why the stored record is not one (a whole view's record, say). */
export const parseKeyedViewRecord = (record: unknown): Either.Either<typeof KeyedRecordSchema.Type, string> =>
  Either.mapLeft(decodeKeyedRecord(record), (e) => e.message.split("\n").slice(-1)[0].trim())
