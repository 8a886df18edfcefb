/**
 * The acknowledged-head record: a small file beside LevelDB (`WO-ACKED`) that remembers, outside LevelDB's
 * write-ahead log, the highest seq the writer has acknowledged, and the id counters. LevelDB drops records from a
 * damaged, truncated, missing or older write-ahead log without a word; at open, a store whose head is below the
 * recorded `acked` has lost acknowledged writes, and is refused (acked-check.ts).
 *
 * Cost. A second fsync per batch, in series or even beside LevelDB's, costs about a fifth of the durable creates
 * per second on this disk (bench/acked-record.ts). So after each LevelDB batch has returned (it is durable), and
 * before any caller of it is answered, the record is rewritten with `acked` = the batch's end: one `pwrite` into
 * the page cache, a few microseconds, no fsync. A process that dies (kill -9, a crash) loses nothing of it: the
 * kernel writes the page back. Only a power cut or a kernel crash can lose what was not yet fdatasync'ed, so the
 * record is fdatasync'ed off the hot path, in the background: SYNC_DELAY_MS after the writer goes idle (and so
 * about that often under continuous load), and at a graceful shutdown: one every SYNC_DELAY_MS costs nothing
 * measurable.
 *
 * It never claims more than LevelDB holds: every version written claims only batches LevelDB had already made
 * durable. After a power cut the file may hold an older version (or, per slot, a torn one): `acked` is then
 * lower than it could be, a weaker check, never a false refusal.
 *
 * The one window this leaves: a power cut (or kernel crash) within SYNC_DELAY_MS plus one fdatasync after a batch
 * was acknowledged, AND a loss of that batch from the write-ahead log. A kill -9 leaves no window.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { crc32c } from "../record.ts"
import { fsyncPath } from "../../support/fsync-path.ts"

export const ACKED_FILE = "WO-ACKED"
// Three fixed-size slots, each `<crc32c:8 hex> <json>\n`; each rewrite goes to the slot holding the oldest record,
// so a torn page-back damages at most one, and the reader takes the highest `acked` and counters of the whole ones.
// The file is preallocated when created, so a rewrite never needs new disk blocks (a full disk fails LevelDB's
// write, not this one).
const SLOT = 16 * 1024
const SLOTS = 3
/**
 * How long after the writer first goes idle the record is fdatasync'ed. The timer is not pushed back by later
 * batches, so under continuous load the record is also synced about this often.
 */
export const SYNC_DELAY_MS = 100

export interface AckedRecord {
  /** Every seq up to this one was durable in LevelDB before it was acknowledged to a caller. */
  readonly acked: number
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
    if (!isCount(slot.gen) || !isCount(slot.acked) || slot.counters === null || typeof slot.counters !== "object") return undefined
    if (!Object.values(slot.counters).every(isCount)) return undefined
    return slot
  } catch {
    return undefined
  }
}

/**
 * The record as the slots hold it: the highest `acked` and the highest counters of every whole slot (each was true
 * when written).
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
  const counters = new Map<string, number>()
  for (const s of whole) for (const [type, n] of Object.entries(s.counters)) counters.set(type, Math.max(counters.get(type) ?? 0, n))
  return {
    _tag: "Found",
    record: { acked: Math.max(...whole.map((s) => s.acked)), counters },
    gens: slots.map((s) => s?.gen ?? -1)
  }
}

const pwrite = (fd: number, bytes: Buffer, at: number) =>
  new Promise<void>((resolve, reject) => fs.write(fd, bytes, 0, bytes.length, at, (e) => (e ? reject(e) : resolve())))
const fdatasync = (fd: number) => new Promise<void>((resolve, reject) => fs.fdatasync(fd, (e) => (e ? reject(e) : resolve())))

export interface AckedHeadWriter {
  /**
   * The batch ending at `seq` is durable in LevelDB and about to be acknowledged: rewrites the record (page cache;
   * durable at the next sync), on the thread pool so that a file system that makes a write wait never stalls the
   * event loop. Fails if the write fails: the batch must then not be acknowledged.
   */
  readonly acknowledged: (seq: number, moved: ReadonlyMap<string, number>) => Promise<void>
  /** The writer is idle: fdatasync the record within SYNC_DELAY_MS, in the background. */
  readonly settle: () => void
  /** fdatasyncs the record now (graceful shutdown). */
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
  if (found._tag === "Found") for (const [type, n] of found.record.counters) counters.set(type, Math.max(counters.get(type) ?? 0, n))
  const gens = found._tag === "Found" ? [...found.gens] : Array.from({ length: SLOTS }, () => -1)
  if (found._tag !== "Found" || fs.statSync(file).size < SLOT * SLOTS) {
    // Created whole (preallocated, the first record in slot 0) under a temporary name, then renamed into place.
    const tmp = `${file}.tmp`
    const bytes = Buffer.alloc(SLOT * SLOTS)
    encodeSlot({ gen: 0, acked, counters: Object.fromEntries(counters) }).copy(bytes, 0)
    const fd = fs.openSync(tmp, "w")
    try {
      fs.writeSync(fd, bytes, 0, bytes.length, 0)
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
    fs.renameSync(tmp, file)
    fsyncPath(dir)
    gens.splice(0, SLOTS, 0, -1, -1)
  }
  const fd = fs.openSync(file, "r+")
  let gen = Math.max(...gens)
  let lastAcked = acked
  let dirty = false
  let syncing: Promise<void> | undefined
  let idle: ReturnType<typeof setTimeout> | undefined
  let closed = false

  const sync = () => {
    if (syncing !== undefined || !dirty || closed) return syncing
    dirty = false
    // A failure here (an I/O error) leaves the on-disk acked lower than it could be: weaker, never wrong.
    syncing = fdatasync(fd).catch(() => {
      dirty = true
    }).finally(() => {
      syncing = undefined
    })
    return syncing
  }

  return {
    acknowledged: async (seq, moved) => {
      for (const [type, n] of moved) if (n > (counters.get(type) ?? 0)) counters.set(type, n)
      if (seq > lastAcked) lastAcked = seq
      let i = 0
      for (let j = 1; j < SLOTS; j++) if (gens[j] < gens[i]) i = j
      const mine = ++gen
      const bytes = encodeSlot({ gen: mine, acked: lastAcked, counters: Object.fromEntries(counters) })
      gens[i] = Number.MAX_SAFE_INTEGER // not chosen again while in flight (the writer writes one batch at a time)
      try {
        await pwrite(fd, bytes, i * SLOT)
        gens[i] = mine
      } catch (e) {
        gens[i] = -1 // torn, perhaps: the oldest, so the next write goes here rather than over a whole slot
        throw e
      }
      dirty = true
    },
    settle: () => {
      if (idle !== undefined || !dirty || closed) return
      idle = setTimeout(() => {
        idle = undefined
        void sync()
      }, SYNC_DELAY_MS)
      idle.unref()
    },
    flush: async () => {
      await syncing
      await sync()
    },
    close: async () => {
      if (idle !== undefined) clearTimeout(idle)
      await syncing
      closed = true
      fs.closeSync(fd)
    }
  }
}
