/**
 * The acknowledged-head record: a small file beside LevelDB (`WO-ACKED`) that remembers, outside LevelDB's
 * write-ahead log, the highest seq the writer has acknowledged, and the id counters. LevelDB drops records from a
 * damaged, truncated, missing or older write-ahead log without a word; at open, a store whose head is below the
 * recorded `acked` has lost acknowledged writes, and is refused (acked-check.ts).
 *
 * Cost: a second fsync after each LevelDB batch would halve throughput. So each batch's record is written
 * CONCURRENTLY with the batch, and claims only what is already safe: `acked` = the end of the batch before (its
 * LevelDB write has returned), `intended` = this batch's end (not yet acknowledged: a store head in
 * (acked, intended] is a crash mid-batch, not a loss). When the writer goes idle, and at a graceful shutdown, one
 * more record (off the hot path) raises `acked` to the last seq.
 *
 * The one window this leaves: a kill -9 (or power cut) after a batch is acknowledged and before its idle record
 * is durable, AND a write-ahead-log loss of that same last batch. The record then says `acked` = the batch before,
 * so the lost last batch is not seen. Under load the next batch's record closes the window within one batch.
 *
 * Layout: three fixed-size slots, each `<crc32c:8 hex> <json>\n`. A write goes to the oldest slot no other write
 * is using, so a torn write (a crash mid-write) damages at most the slots in flight (at most two: one batch
 * record, one idle record) and the newest completed record stays whole. The file is preallocated when created,
 * so rewriting a slot never needs new disk blocks (a full disk fails LevelDB's write, not this one).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { crc32c } from "./record.ts"

export const ACKED_FILE = "WO-ACKED"
const SLOT = 16 * 1024
const SLOTS = 3

export interface AckedRecord {
  /** Every seq up to this one was acknowledged to a caller. */
  readonly acked: number
  /** The end of the batch being written when the record was made (>= acked). */
  readonly intended: number
  /** The highest id handed out per type (including a batch in flight): never handed out again. */
  readonly counters: ReadonlyMap<string, number>
}

export type ReadRecord =
  | { readonly _tag: "Missing" }
  | { readonly _tag: "Damaged"; readonly reason: string }
  | { readonly _tag: "Found"; readonly record: AckedRecord; readonly gens: ReadonlyArray<number> }

interface Slot {
  readonly gen: number
  readonly acked: number
  readonly intended: number
  readonly counters: Record<string, number>
}

const encodeSlot = (slot: Slot): Buffer => {
  const json = JSON.stringify(slot)
  const bytes = Buffer.from(`${crc32c(json).toString(16).padStart(8, "0")} ${json}\n`, "utf8")
  if (bytes.length > SLOT) throw new Error(`the acknowledged-head record needs ${bytes.length} bytes, more than its ${SLOT}-byte slot`)
  return bytes
}

const isCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0

const decodeSlot = (bytes: Buffer): Slot | undefined => {
  const end = bytes.indexOf(0x0a)
  if (end < 10 || bytes[8] !== 0x20) return undefined
  const json = bytes.toString("utf8", 9, end)
  if (Number.parseInt(bytes.toString("latin1", 0, 8), 16) !== crc32c(json) || !/^[0-9a-f]{8}$/.test(bytes.toString("latin1", 0, 8))) return undefined
  try {
    const slot = JSON.parse(json) as Slot
    if (!isCount(slot.gen) || !isCount(slot.acked) || !isCount(slot.intended) || slot.counters === null || typeof slot.counters !== "object") return undefined
    if (!Object.values(slot.counters).every(isCount)) return undefined
    return slot
  } catch {
    return undefined
  }
}

/**
 * The record as the slots hold it: the highest `acked` and the highest counters of every whole slot (each was true
 * when written), and `intended` from the newest one.
 */
export const readAckedRecord = (dir: string): ReadRecord => {
  let bytes: Buffer
  try {
    bytes = fs.readFileSync(path.join(dir, ACKED_FILE))
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return { _tag: "Missing" }
    return { _tag: "Damaged", reason: `cannot read ${ACKED_FILE}: ${(e as Error).message}` }
  }
  const slots: Array<Slot | undefined> = []
  for (let i = 0; i < SLOTS; i++) slots.push(i * SLOT < bytes.length ? decodeSlot(bytes.subarray(i * SLOT, Math.min(bytes.length, (i + 1) * SLOT))) : undefined)
  const whole = slots.filter((s): s is Slot => s !== undefined)
  if (whole.length === 0) return { _tag: "Damaged", reason: `no slot of ${ACKED_FILE} passes its checksum` }
  const newest = whole.reduce((a, b) => (b.gen > a.gen ? b : a))
  const counters = new Map<string, number>()
  for (const s of whole) for (const [type, n] of Object.entries(s.counters)) counters.set(type, Math.max(counters.get(type) ?? 0, n))
  return {
    _tag: "Found",
    record: { acked: Math.max(...whole.map((s) => s.acked)), intended: newest.intended, counters },
    gens: slots.map((s) => s?.gen ?? -1)
  }
}

const fdatasync = (fd: number) => new Promise<void>((resolve, reject) => fs.fdatasync(fd, (e) => (e ? reject(e) : resolve())))

/** Makes the directory entry of a new file durable. */
const syncDir = (dir: string) => {
  const fd = fs.openSync(dir, "r")
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

export interface AckedHeadWriter {
  /** The record for a batch about to be written: `acked` = what is acknowledged so far, `intended` its end. */
  readonly writeBatch: (intended: number, counters: ReadonlyMap<string, number>) => Promise<void>
  /** The batch ending at `seq` is acknowledged: recorded at the next `settle` (or at once by `flush`). */
  readonly acknowledged: (seq: number) => void
  /** The writer is idle: record the last acknowledged seq, in the background. */
  readonly settle: () => void
  /** Records the last acknowledged seq and waits for it (graceful shutdown, a repair at open). */
  readonly flush: () => Promise<void>
  readonly close: () => Promise<void>
}

/**
 * Opens the record file for writing. `acked` and `counters`: what the store holds now, all acknowledged.
 * `recreate` (the caller checked that it may: a new store, an upgrade, an accepted loss) writes it anew from
 * these alone, so no slot keeps a higher `acked` than the store now holds.
 */
export const openAckedHead = (
  dir: string,
  acked: number,
  initialCounters: ReadonlyMap<string, number>,
  recreate: boolean
): AckedHeadWriter => {
  const file = path.join(dir, ACKED_FILE)
  const found: ReadRecord = recreate ? { _tag: "Missing" } : readAckedRecord(dir)
  const counters = new Map(initialCounters)
  const gens = found._tag === "Found" ? [...found.gens] : Array.from({ length: SLOTS }, () => -1)
  if (found._tag !== "Found" || fs.statSync(file).size < SLOT * SLOTS) {
    // Created whole (preallocated, the first record in slot 0) under a temporary name, then renamed into place.
    const tmp = `${file}.tmp`
    const bytes = Buffer.alloc(SLOT * SLOTS)
    encodeSlot({ gen: 0, acked, intended: acked, counters: Object.fromEntries(counters) }).copy(bytes, 0)
    const fd = fs.openSync(tmp, "w")
    try {
      fs.writeSync(fd, bytes, 0, bytes.length, 0)
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
    fs.renameSync(tmp, file)
    syncDir(dir)
    gens.splice(0, SLOTS, 0, -1, -1)
  }
  const fd = fs.openSync(file, "r+")
  const busy = [false, false, false]
  let gen = Math.max(...gens)
  let lastAcked = acked
  let recordedAcked = found._tag === "Found" ? Math.min(found.record.acked, acked) : acked
  let settling: Promise<void> | undefined
  let closed = false

  const write = async (slot: Omit<Slot, "gen">) => {
    // The oldest slot not being written: the newest finished record is never overwritten while another is in flight.
    let i = -1
    for (let j = 0; j < SLOTS; j++) if (!busy[j] && (i === -1 || gens[j] < gens[i])) i = j
    const mine = ++gen
    busy[i] = true
    try {
      const bytes = encodeSlot({ gen: mine, ...slot })
      fs.writeSync(fd, bytes, 0, bytes.length, i * SLOT)
      await fdatasync(fd)
      gens[i] = mine
    } catch (e) {
      gens[i] = -1 // torn, perhaps: the oldest again, so the next write goes here rather than over a whole slot
      throw e
    } finally {
      busy[i] = false
    }
  }

  const settleOnce = async () => {
    while (!closed && recordedAcked < lastAcked) {
      const target = lastAcked
      await write({ acked: target, intended: target, counters: Object.fromEntries(counters) })
      recordedAcked = Math.max(recordedAcked, target)
    }
  }

  return {
    writeBatch: async (intended, moved) => {
      for (const [type, n] of moved) if (n > (counters.get(type) ?? 0)) counters.set(type, n)
      await write({ acked: lastAcked, intended, counters: Object.fromEntries(counters) })
      recordedAcked = Math.max(recordedAcked, lastAcked)
    },
    acknowledged: (seq) => {
      if (seq > lastAcked) lastAcked = seq
    },
    settle: () => {
      if (settling !== undefined || recordedAcked >= lastAcked || closed) return
      // A failure here (a full disk) leaves acked lower than it could be: weaker, never wrong. The next one retries.
      settling = settleOnce().catch(() => undefined).finally(() => {
        settling = undefined
      })
    },
    flush: async () => {
      await settling
      await settleOnce()
    },
    close: async () => {
      await settling?.catch(() => undefined)
      closed = true
      fs.closeSync(fd)
    }
  }
}
