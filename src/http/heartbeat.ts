/**
 * One heartbeat timer per interval for every open SSE stream, instead of one timer (and one Stream merge) per
 * stream. Each tick asks every stream to beat; a stream that wrote anything within the last half interval
 * skips it (it is visibly alive), so an idle stream gets a comment about every `ms`.
 */
export type Beat = (since: number) => void

export interface Heartbeat {
  /** Registers a stream's beat; the returned function unregisters it (the last one stops the timer). */
  readonly add: (ms: number, beat: Beat) => () => void
  readonly size: () => number
}

export const makeHeartbeat = (): Heartbeat => {
  const timers = new Map<number, { readonly timer: NodeJS.Timeout; readonly beats: Set<Beat> }>()
  let size = 0
  return {
    add: (ms, beat) => {
      let entry = timers.get(ms)
      if (entry === undefined) {
        const beats = new Set<Beat>()
        const timer = setInterval(() => {
          const since = Date.now() - ms / 2
          for (const b of beats) b(since)
        }, ms)
        timer.unref()
        timers.set(ms, (entry = { timer, beats }))
      }
      const beats = entry.beats
      beats.add(beat)
      size++
      return () => {
        if (!beats.delete(beat)) return
        size--
        if (beats.size === 0) {
          clearInterval(timers.get(ms)!.timer)
          timers.delete(ms)
        }
      }
    },
    size: () => size
  }
}
