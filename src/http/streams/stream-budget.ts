/**
 * The global memory budget for stream backlogs (WO_STREAM_MEMORY): the bytes every push sink holds for a
 * client that does not read (its queue, and its socket's own buffer while that is full). Past the budget the
 * largest backlogs are closed first, whatever their source address, until the total fits again: a reader that
 * cannot keep up costs itself its stream, never the process its memory, and writers never wait for readers.
 */
import type { PushSink } from "./push-sink.ts"

export interface StreamBudget {
  /** A sink's backlog started (true) or ended (false). */
  readonly mark: (sink: PushSink, backlogged: boolean) => void
  /** Closes the largest backlogs ("memory") until the total fits; returns how many it closed. */
  readonly enforce: () => number
  readonly stats: () => { readonly backlogged: number; readonly bytes: number; readonly closed: number; readonly limit: number }
}

export const makeStreamBudget = (limit: number): StreamBudget => {
  const backlogged = new Set<PushSink>()
  let closed = 0
  const total = () => {
    let bytes = 0
    for (const s of backlogged) bytes += s.backlog()
    return bytes
  }
  return {
    mark: (sink, on) => void (on ? backlogged.add(sink) : backlogged.delete(sink)),
    enforce: () => {
      if (backlogged.size === 0) return 0
      let bytes = total()
      let n = 0
      while (bytes > limit && backlogged.size > 0) {
        let victim: PushSink | undefined
        let most = -1
        for (const s of backlogged) {
          const b = s.backlog()
          if (b > most) {
            most = b
            victim = s
          }
        }
        bytes -= most
        backlogged.delete(victim!)
        victim!.close("memory")
        n++
      }
      closed += n
      return n
    },
    stats: () => ({ backlogged: backlogged.size, bytes: total(), closed, limit })
  }
}
