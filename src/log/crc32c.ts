/** CRC-32C (Castagnoli), the checksum LevelDB uses too: the lookup table and an update over bytes. */

export const CRC32C_TABLE = (() => {
  const t = new Int32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
    t[n] = c
  }
  return t
})()

/**
 * Slicing-by-8: SLICES[k * 256 + n] is the state change of byte n followed by k zero bytes, so eight bytes cost
 * eight independent lookups instead of a chain of eight (about 2x faster on the records the log stores).
 */
const SLICES = (() => {
  const t = new Int32Array(8 * 256)
  t.set(CRC32C_TABLE)
  for (let k = 1; k < 8; k++) {
    for (let n = 0; n < 256; n++) {
      const prev = t[(k - 1) * 256 + n]
      t[k * 256 + n] = (prev >>> 8) ^ CRC32C_TABLE[prev & 0xff]
    }
  }
  return t
})()

/** Continues a CRC-32C (pre-inverted state, start with -1, finish with `^ -1 >>> 0`) over `bytes[start, end)`. */
export const crc32cUpdate = (state: number, bytes: Uint8Array, start = 0, end = bytes.length): number => {
  let c = state
  let i = start
  for (; i + 8 <= end; i += 8) {
    const lo = c ^ (bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24))
    const hi = bytes[i + 4] | (bytes[i + 5] << 8) | (bytes[i + 6] << 16) | (bytes[i + 7] << 24)
    c = SLICES[1792 + (lo & 0xff)] ^ SLICES[1536 + ((lo >>> 8) & 0xff)] ^ SLICES[1280 + ((lo >>> 16) & 0xff)] ^
      SLICES[1024 + (lo >>> 24)] ^ SLICES[768 + (hi & 0xff)] ^ SLICES[512 + ((hi >>> 8) & 0xff)] ^
      SLICES[256 + ((hi >>> 16) & 0xff)] ^ SLICES[hi >>> 24]
  }
  for (; i < end; i++) c = CRC32C_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8)
  return c
}
