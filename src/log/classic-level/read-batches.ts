/**
 * A classic-level iterator read a batch at a time (`nextv`): one native call per batch instead of one per record.
 * Every reader of a key range (the log, `wo verify`, the loss survey, the row tables, the index backfill) reads
 * through it, and the iterator is closed however the read ends.
 */
import { READ_BATCH } from "./level-records.ts"

/** A classic-level iterator, of keys or of key-value pairs. */
export interface BatchIterator<T> {
  nextv(size: number): Promise<Array<T>>
  close(): Promise<void>
}

export interface ReadBatchesOptions {
  /** How many records to ask for next (READ_BATCH unless given): a read that stops at a count asks for no more. */
  readonly size?: () => number
  /**
   * Reads the next batch (on libuv's thread pool) while this one is handled, for a whole range read by a check:
   * one at a time, `wo verify` waited for the read about half of the time.
   */
  readonly readAhead?: boolean
  /** A failure to close the iterator is ignored: the answer read stands. */
  readonly closeQuietly?: boolean
}

/**
 * Hands each batch to `f` until the range ends or `f` answers something other than undefined, then closes the
 * iterator; answers what `f` answered, or undefined at the range's end.
 */
export const readBatches = async <T, R>(
  it: BatchIterator<T>,
  f: (batch: Array<T>) => R | undefined | Promise<R | undefined>,
  options: ReadBatchesOptions = {}
): Promise<R | undefined> => {
  const size = options.size
  let ahead: Promise<Array<T>> | undefined
  try {
    for (;;) {
      const batch = await (ahead ?? it.nextv(size === undefined ? READ_BATCH : size()))
      ahead = undefined
      if (batch.length === 0) return undefined
      if (options.readAhead) ahead = it.nextv(READ_BATCH)
      let answer = f(batch)
      if (answer instanceof Promise) answer = await answer
      if (answer !== undefined) return answer
    }
  } finally {
    await ahead?.catch(() => undefined) // settled before the iterator closes (and never an unhandled rejection)
    if (options.closeQuietly) await it.close().catch(() => undefined)
    else await it.close()
  }
}

/** Hands every record of the iterator to `f`, a batch at a time. */
export const forEachRecord = <T>(it: BatchIterator<T>, f: (record: T) => void, options?: ReadBatchesOptions): Promise<undefined> =>
  readBatches(it, (batch) => {
    for (const record of batch) f(record)
    return undefined
  }, options)
