/**
 * The deadline of every write on a shared log: WO_STORE_TIMEOUT from its arrival to its answer, whatever batches
 * are ahead of it. Each store call of a batch is bounded too, but a write waits for the batch ahead of it and then
 * its own, so a bound per call is not a bound per request; this one is.
 *
 * Every write has the same timeout, so arrival order is deadline order: the writes wait in one FIFO, and one timer
 * stands at the earliest deadline. Hand-tuned for the writer's hot path: a push per write and no timer of its own
 * (a timer per write is an allocation and a clear per write, for a bound that rarely fires). Writes are answered
 * about in arrival order, so the answered front is dropped at each push: the FIFO holds about the writes in flight,
 * and keeps no answered write alive (into the old generation) until its deadline.
 */

/** What the deadline watches: when it arrived, and whether it was answered (then it is dropped, unanswered). */
export interface Watched {
  readonly arrivedAt: number
  answered: boolean
}

export interface RequestDeadlines<T extends Watched> {
  /** Watches `item` from its `arrivedAt`: `expire(item)` runs once its deadline passes unanswered. */
  readonly watch: (item: T) => void
  /** Stops the timer (shutdown). */
  readonly close: () => void
}

/** `expire` must answer the item (set `answered`); `now` is the clock (ms), `timeoutMs` the bound from arrival. */
export const makeRequestDeadlines = <T extends Watched>(
  timeoutMs: number,
  expire: (item: T) => void,
  now: () => number = Date.now
): RequestDeadlines<T> => {
  let queue: Array<T> = []
  let head = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  let closed = false

  /** Drops the answered front; the array is compacted once the dropped part is most of it (amortised O(1)). */
  const dropAnswered = () => {
    while (head < queue.length && queue[head].answered) queue[head++] = undefined as unknown as T
    if (head === queue.length) {
      if (head > 0) queue.length = 0
      head = 0
    } else if (head > 1024 && head * 2 > queue.length) {
      queue = queue.slice(head)
      head = 0
    }
  }

  const sweep = () => {
    timer = undefined
    const t = now()
    while (head < queue.length) {
      const item = queue[head]
      if (!item.answered) {
        if (item.arrivedAt + timeoutMs > t) break
        expire(item)
      }
      queue[head++] = undefined as unknown as T
    }
    arm()
  }

  const arm = () => {
    dropAnswered()
    if (closed || timer !== undefined || head === queue.length) return
    const wait = Math.max(0, queue[head].arrivedAt + timeoutMs - now())
    timer = setTimeout(sweep, wait)
    // The deadline never keeps the process alive on its own.
    timer.unref?.()
  }

  return {
    watch: (item) => {
      dropAnswered()
      queue.push(item)
      if (timer === undefined) arm()
    },
    close: () => {
      closed = true
      if (timer !== undefined) clearTimeout(timer)
      timer = undefined
    }
  }
}
