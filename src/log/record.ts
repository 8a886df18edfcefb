import { crc32cUpdate } from "./crc32c.ts"
import { DataCorrupt, StoreFailed } from "../domain/store-errors.ts"

/**
 * Checksummed records: every value the log stores is `<crc:8 hex><payload>`, where the CRC-32C covers the key
 * and the payload's UTF-8 bytes. A flipped bit in the value, or in the key (a row moved under another id), is
 * a mismatch when the record is loaded, never a silently changed row.
 *
 * Node 20 has no CRC in node:zlib: key and payload are encoded into one reused buffer (native UTF-8, lone
 * surrogates as U+FFFD like Buffer.from) and checked eight bytes at a time (crc32c.ts). Per character in JS,
 * the same checksum cost twice as much, and it is the largest share of `wo verify` and `wo replay`.
 */

/** Reused for every checksum (one thread, no await inside): grown for a record larger than it. */
let scratch = Buffer.allocUnsafe(64 * 1024)

/** CRC-32C of `key`, a NUL and `payload` from index `start`, as UTF-8 (`key` undefined: `payload` alone). */
const checksum = (key: string | undefined, payload: string, start: number): number => {
  // At most 3 bytes per UTF-16 unit: nothing is ever cut short.
  const most = 3 * ((key?.length ?? 0) + 1 + payload.length - start)
  if (most > scratch.length) scratch = Buffer.allocUnsafe(Math.max(most, 2 * scratch.length))
  let n = 0
  if (key !== undefined) {
    n = scratch.write(key, 0, "utf8")
    scratch[n++] = 0
  }
  n += scratch.write(start === 0 ? payload : payload.slice(start), n, "utf8")
  return (crc32cUpdate(-1, scratch, 0, n) ^ -1) >>> 0
}

/** CRC-32C of the UTF-8 bytes of `s` (the standard Castagnoli check value: "123456789" -> 0xe3069283). */
export const crc32c = (s: string): number => checksum(undefined, s, 0)

const recordCrc = (key: string, payload: string, start = 0) => checksum(key, payload, start)

const HEX_LENGTH = 8

/** The stored value for `payload` under `key`. */
export const seal = (key: string, payload: string): string =>
  recordCrc(key, payload).toString(16).padStart(HEX_LENGTH, "0") + payload

/** Why a record could not be opened; the caller names the key in its error. */
export class RecordCorrupt extends Error {}

/** A failed read as its store error: DataCorrupt for a record that fails its check, StoreFailed for the rest. */
export const readFailed = (e: unknown): DataCorrupt | StoreFailed =>
  e instanceof RecordCorrupt ? new DataCorrupt({ reason: e.message }) : new StoreFailed({ reason: `cannot read the store: ${e instanceof Error ? e.message : String(e)}` })

/** The payload of a stored value, or a RecordCorrupt when the checksum does not match key and payload. */
export const unseal = (key: string, value: string): string => {
  const stored = value.length > HEX_LENGTH ? Number.parseInt(value.slice(0, HEX_LENGTH), 16) : Number.NaN
  if (!Number.isInteger(stored) || stored !== recordCrc(key, value, HEX_LENGTH)) {
    throw new RecordCorrupt(`corrupt record at key ${key}: checksum mismatch`)
  }
  return value.slice(HEX_LENGTH)
}

/** The JSON payload of a stored value, parsed; RecordCorrupt when the checksum or the JSON is bad. */
export const unsealJson = <A>(key: string, value: string): A => {
  const payload = unseal(key, value)
  try {
    return JSON.parse(payload) as A
  } catch {
    throw new RecordCorrupt(`corrupt record at key ${key}: not valid JSON`)
  }
}
