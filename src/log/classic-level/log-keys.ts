/**
 * Key layout of the classic-level store. Numbers are zero-padded so that LevelDB's byte order is numeric order.
 * Every value is a checksummed record (record.ts) over the payload named here.
 *   e!<seq:16>            an event (JSON)
 *   r!<type>!<id:12>      a row's current state, `{schema, row}` (JSON)
 *   m!checkpoint          the seq the stored rows include
 *   m!counter!<type>      the highest id assigned for the type
 *   m!rows!<type>         how many rows of the type are stored (a row whose key is damaged is then missed)
 *   h!<type>!<id:12>!<version:16>  an event's seq, by its entity and version: a row's history is one key range
 *   m!format              the store format: 2, every value a checksummed record (record.ts); 3, events record their
 *                         actor and each has its `h!` record (a format-2 store is upgraded when a server opens it)
 *   m!schema              the digest of the app's types the stored rows were last checked against (store-rows.ts)
 *   m!acked-record        present once the store keeps an acknowledged-head record beside it (acked-head.ts)
 *   v!<name>              a view's state (log/view-record.ts), written in the batch that changed it
 *   w!<name>!<definition>!<key>  an entry of a keyed view, `{seq, value}` (keyed-records.ts), written in the batch
 *                         that changed it. `<definition>` is the digest of the view's declaration (view-record.ts):
 *                         a new declaration is folded beside the old one, in a range of its own, and the old range
 *                         is cleared once the new one serves. The view's `v!<name>` record names the definition
 *                         that serves.
 *   k!<key>               an idempotency key: its request's fingerprint and answer (key-record.ts), written in
 *                         the batch of the submission it names
 *   t!<at:16>!<key>       the same key by commit time, so that expired keys are pruned in order (payload: the key)
 *   x!..., m!index!...    secondary index records and their state (index-keys.ts)
 */
import { isCanonicalId, MAX_ID_DIGITS } from "../../domain/ids.ts"

export const eventKey = (seq: number) => `e!${String(seq).padStart(16, "0")}`
export const EVENTS_START = "e!"
export const EVENTS_END = "e!~"
/**
 * A row's key. Only a canonical id (domain/ids.ts) has one: padding "01" would reach row 1 under another name, so
 * any other spelling is a defect of the caller (the surfaces refuse it before reading), thrown rather than aliased.
 */
export const rowKey = (type: string, id: string) => {
  if (!isCanonicalId(id)) throw new Error(`no row key for the non-canonical id ${JSON.stringify(id.slice(0, 40))} of ${type}`)
  return `r!${type}!${id.padStart(MAX_ID_DIGITS, "0")}`
}
export const typeOfRowKey = (key: string) => key.slice(2, key.lastIndexOf("!"))
export const idOfRowKey = (key: string) => Number(key.slice(key.lastIndexOf("!") + 1))
export const ROWS_START = "r!"
export const ROWS_END = "r!~"
export const CHECKPOINT_KEY = "m!checkpoint"
export const COUNTER_PREFIX = "m!counter!"
export const counterKey = (type: string) => `${COUNTER_PREFIX}${type}`
export const ROW_COUNT_PREFIX = "m!rows!"
export const rowCountKey = (type: string) => `${ROW_COUNT_PREFIX}${type}`
export const FORMAT_KEY = "m!format"
export const FORMAT = "3"
/** The format before events recorded their actor and had `h!` records; still read, and upgraded by the server. */
export const FORMAT_BEFORE_ACTORS = "2"
/**
 * The key of an entity's event at `version`, whose value is the event's seq. Only a canonical id has one (as
 * `rowKey`): versions are zero-padded so that byte order is version order.
 */
export const historyKey = (type: string, id: string, version: number) => `${historyPrefix(type, id)}${String(version).padStart(16, "0")}`
export const historyPrefix = (type: string, id: string) => {
  if (!isCanonicalId(id)) throw new Error(`no history key for the non-canonical id ${JSON.stringify(id.slice(0, 40))} of ${type}`)
  return `h!${type}!${id.padStart(MAX_ID_DIGITS, "0")}!`
}
export const HISTORY_START = "h!"
export const HISTORY_END = "h!~"
export const ACKED_RECORD_KEY = "m!acked-record"
export const SCHEMA_CHECKED_KEY = "m!schema"
export const seqOfEventKey = (key: string) => Number(key.slice(2))
export const viewKey = (name: string) => `v!${name}`
export const nameOfViewKey = (key: string) => key.slice(2)
export const VIEWS_START = "v!"
export const VIEWS_END = "v!~"
export const idempotencyKey = (key: string) => `k!${key}`
export const keyTimeKey = (at: number, key: string) => `t!${String(at).padStart(16, "0")}!${key}`
/** The key a `t!` record names. */
export const keyOfTimeKey = (timeKey: string) => timeKey.slice(2 + 16 + 1)
export const KEY_TIMES_START = "t!"
/** The `k!` range: `"` is the character after `!`, so keys holding any visible character (`~` too) are inside. */
export const KEYS_START = "k!"
export const KEYS_END = 'k"'
/** The prefix of a keyed view's entries under one definition. */
export const viewEntriesPrefix = (name: string, definition: string) => `w!${name}!${definition}!`
/** The end of that range, exclusive: `"` follows `!`, so every key, whatever its characters, is inside. */
export const viewEntriesEnd = (name: string, definition: string) => `w!${name}!${definition}"`
/** A keyed view's entry. The key is stored as given: byte order (UTF-8) is the order a list by key follows. */
export const viewEntryKey = (name: string, definition: string, key: string) => `${viewEntriesPrefix(name, definition)}${key}`
/** The view key a `w!` record holds, from its store key. */
export const entryKeyOfViewEntryKey = (storeKey: string, prefix: string) => storeKey.slice(prefix.length)
export const VIEW_ENTRIES_START = "w!"
export const VIEW_ENTRIES_END = 'w"'
