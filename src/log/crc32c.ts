/** CRC-32C (Castagnoli), the checksum LevelDB uses too: the lookup table and a byte-wise update. */

export const CRC32C_TABLE = (() => {
  const t = new Int32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
    t[n] = c
  }
  return t
})()

/** Continues a CRC-32C (pre-inverted state, start with -1, finish with `^ -1 >>> 0`) over `bytes[start, end)`. */
export const crc32cUpdate = (state: number, bytes: Uint8Array, start = 0, end = bytes.length): number => {
  let c = state
  for (let i = start; i < end; i++) c = CRC32C_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8)
  return c
}
