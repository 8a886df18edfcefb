/**
 * The one loss LevelDB does not even write to its `LOG`: a record in the last block of a write-ahead log whose
 * length field claims more bytes than the file holds is taken for a write torn by a crash, and dropped with
 * every record after it, silently. A real torn write ends inside its payload; a damaged length field sits in
 * front of a payload that is whole. So before opening, each `NNNNNN.log` is walked as LevelDB's log reader
 * walks it, and such a record is checked against its own CRC: if a complete record is there, acknowledged
 * data would vanish, and the open is refused instead.
 *
 * Format (LevelDB's doc/log_format.md): 32 KiB blocks of records `crc32c:4 (masked) | length:2 | type:1 | data`;
 * fewer than 7 bytes left in a block are zero padding.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { crc32cUpdate } from "../crc32c.ts"

const BLOCK = 32 * 1024
const HEADER = 7
const MASK_DELTA = 0xa282ead8

const unmask = (masked: number) => {
  const rot = (masked - MASK_DELTA) >>> 0
  return ((rot >>> 17) | (rot << 15)) >>> 0
}

/** Where a write-ahead log holds a whole record behind a length field that runs past the end of the file. */
export const damagedTailRecord = (bytes: Uint8Array): { readonly offset: number; readonly claimed: number; readonly actual: number } | undefined => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let pos = 0
  while (pos < bytes.length) {
    const blockEnd = Math.min(bytes.length, (Math.floor(pos / BLOCK) + 1) * BLOCK)
    if (blockEnd - pos < HEADER) {
      pos = blockEnd
      continue
    }
    const length = view.getUint16(pos + 4, true)
    if (pos + HEADER + length <= blockEnd) {
      pos += HEADER + length
      continue
    }
    // The length runs past the block. LevelDB reports that as corruption, except at the end of the file.
    if (blockEnd !== bytes.length) {
      pos = blockEnd
      continue
    }
    const expected = unmask(view.getUint32(pos, true))
    // CRC of the type byte and then each longer prefix of what is left: a match is a whole record.
    let state = crc32cUpdate(-1, bytes, pos + 6, pos + 7)
    for (let end = pos + HEADER; end <= bytes.length; end++) {
      if (end > pos + HEADER) state = crc32cUpdate(state, bytes, end - 1, end)
      if (((state ^ -1) >>> 0) === expected) return { offset: pos, claimed: length, actual: end - pos - HEADER }
    }
    return undefined
  }
  return undefined
}

/** Problems in the data dir's write-ahead logs that LevelDB would drop without a word, one line each. */
export const silentWalDamage = (dir: string): ReadonlyArray<string> => {
  let names: Array<string>
  try {
    names = fs.readdirSync(dir).filter((f) => /^\d+\.log$/.test(f))
  } catch {
    return []
  }
  const problems: Array<string> = []
  for (const name of names) {
    const damaged = damagedTailRecord(fs.readFileSync(path.join(dir, name)))
    if (damaged !== undefined) {
      problems.push(
        `${path.join(dir, name)}: the record at byte ${damaged.offset} claims ${damaged.claimed} bytes, but a complete ` +
          `${damaged.actual}-byte record is there (its length field is damaged); LevelDB would drop it and every record after it`
      )
    }
  }
  return problems
}
