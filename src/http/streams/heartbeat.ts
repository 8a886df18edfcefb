/**
 * One heartbeat timer per interval for every open SSE stream, instead of one timer (and one Stream merge) per
 * stream. Each tick asks every stream to beat; a stream that wrote anything within the last half interval
 * skips it (it is visibly alive), so an idle stream gets a comment about every `ms`.
 * A stream registers itself (an object with a `beat` method), not a closure, and leaves by `remove`: an open
 * stream keeps no function of its own here (bench/stream-memory.ts, heap per open stream).
 */
export interface Beater {
  /** Writes a heartbeat unless the stream wrote anything since `since` (ms). */
  readonly beat: (since: number) => void
}

export interface Heartbeat {
  /** Registers a stream to beat every `ms` (the first one of an interval starts its timer). */
  readonly add: (ms: number, beater: Beater) => void
  /** Unregisters it (the last one of its interval stops the timer); nothing when it is not registered. */
  readonly remove: (beater: Beater) => void
  readonly size: () => number
}

export const makeHeartbeat = (): Heartbeat => {
  const timers = new Map<number, { readonly timer: NodeJS.Timeout; readonly beaters: Set<Beater> }>()
  let size = 0
  return {
    add: (ms, beater) => {
      let entry = timers.get(ms)
      if (entry === undefined) {
        const beaters = new Set<Beater>()
        const timer = setInterval(() => {
          const since = Date.now() - ms / 2
          for (const b of beaters) b.beat(since)
        }, ms)
        timer.unref()
        timers.set(ms, (entry = { timer, beaters }))
      }
      if (entry.beaters.has(beater)) return
      entry.beaters.add(beater)
      size++
    },
    remove: (beater) => {
      // One entry per interval in use: one or two.
      for (const [ms, entry] of timers) {
        if (!entry.beaters.delete(beater)) continue
        size--
        if (entry.beaters.size === 0) {
          clearInterval(entry.timer)
          timers.delete(ms)
        }
        return
      }
    },
    size: () => size
  }
}
