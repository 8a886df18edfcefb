/**
 * What a node has seen of its PostgreSQL store, kept in its data dir so that fencing survives a restart (a kill -9
 * too): the cluster's identity (its system identifier, shared by a primary and the standbys copied from it), the
 * highest timeline, and the furthest WAL position flushed on that timeline. A primary behind them is refused
 * (connection.ts): an old primary that came back writable while the new one is paused cannot take a node back
 * to a past that was overwritten, nor can a server of another cluster listed by mistake.
 *
 * Written whole under a temporary name, synced, renamed into place, the dir synced: a crash leaves the old
 * memory or the new one, never a torn one. Only a serving node writes it; tools that only check never do.
 */
import { Either, ParseResult, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

/** The file in the data dir, and its temporary name while it is written (neither holds LevelDB data). */
export const FENCE_MEMORY_FILE = "store-seen.json"
export const FENCE_MEMORY_TEMP = `${FENCE_MEMORY_FILE}.tmp`

/** A position in the store's history: a timeline and a WAL position on it (bytes since 0/0). */
export interface StorePosition {
  readonly timeline: number
  readonly lsn: bigint
}

/** What the node saw: the store's identity (when the server lets it be read) and the furthest position. */
export interface StoreSeen extends StorePosition {
  readonly systemIdentifier?: string
}

const StoreSeenFile = Schema.parseJson(
  Schema.Struct({
    systemIdentifier: Schema.optional(Schema.String),
    timeline: Schema.Int.pipe(Schema.positive()),
    // A string in the file: JSON numbers lose precision past 2^53.
    lsn: Schema.BigInt
  })
)

/** Whether `a` is behind `b`: an older timeline, or the same one at an earlier WAL position. */
export const isBehind = (a: StorePosition, b: StorePosition) => a.timeline < b.timeline || (a.timeline === b.timeline && a.lsn < b.lsn)

/** The furthest of what was seen and what is seen now; the identity kept from the first that had one. */
export const furthest = (seen: StoreSeen | undefined, now: StoreSeen): StoreSeen => {
  if (seen === undefined) return now
  const position = isBehind(now, seen) ? seen : now
  const systemIdentifier = seen.systemIdentifier ?? now.systemIdentifier
  return { timeline: position.timeline, lsn: position.lsn, ...(systemIdentifier !== undefined ? { systemIdentifier } : {}) }
}

export const sameSeen = (a: StoreSeen | undefined, b: StoreSeen) =>
  a !== undefined && a.timeline === b.timeline && a.lsn === b.lsn && a.systemIdentifier === b.systemIdentifier

/** The memory in `dir`: undefined when there is none (a fresh node); a string says why a file there cannot be read. */
export const readFenceMemory = (dir: string): StoreSeen | undefined | { readonly unreadable: string } => {
  const file = path.join(dir, FENCE_MEMORY_FILE)
  let text: string
  try {
    text = fs.readFileSync(file, "utf8")
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined
    return { unreadable: `cannot read ${file}: ${(e as Error).message}` }
  }
  const decoded = Schema.decodeUnknownEither(StoreSeenFile)(text)
  return Either.isRight(decoded)
    ? decoded.right
    : { unreadable: `${file} is damaged (${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}); if this node's store is right, delete the file` }
}

const memoryText = (seen: StoreSeen) =>
  `${JSON.stringify({ ...(seen.systemIdentifier !== undefined ? { systemIdentifier: seen.systemIdentifier } : {}), timeline: seen.timeline, lsn: String(seen.lsn) })}\n`

/**
 * Writes the memory durably (temporary file, fsync, rename, fsync of the dir), off the event loop (the fsyncs run
 * on libuv's pool): a serving node records the WAL position every second, and a synchronous fsync there would hold
 * every request for its duration. Callers write one at a time (connection.ts chains them): two writes at once would
 * share the temporary file.
 */
export const writeFenceMemory = async (dir: string, seen: StoreSeen) => {
  await fs.promises.mkdir(dir, { recursive: true })
  const temp = path.join(dir, FENCE_MEMORY_TEMP)
  const file = await fs.promises.open(temp, "w")
  try {
    await file.writeFile(memoryText(seen))
    await file.sync()
  } finally {
    await file.close()
  }
  await fs.promises.rename(temp, path.join(dir, FENCE_MEMORY_FILE))
  const folder = await fs.promises.open(dir, "r")
  try {
    await folder.sync()
  } finally {
    await folder.close()
  }
}
