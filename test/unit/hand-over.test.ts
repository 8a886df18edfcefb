/**
 * The replay-then-live hand-over (hand-over.ts), on its own: what arrives live during the replay is held and
 * follows it in order, once, only past the replay's head; a reader that falls too far behind is closed rather
 * than held without bound; with no replay, live goes straight through.
 */
import { describe, expect, it } from "vitest"
import { makeHandOver } from "../../src/http/streams/hand-over.ts"

const harness = (capacity: number, holding?: boolean) => {
  const sent: Array<number> = []
  let overflows = 0
  let closed = false
  const handOver = makeHandOver<number>({
    capacity,
    send: (seq) => void sent.push(seq),
    overflow: () => {
      overflows++
      closed = true
    },
    isClosed: () => closed,
    ...(holding === undefined ? {} : { holding })
  })
  return { handOver, sent, overflows: () => overflows }
}

describe("the replay-then-live hand-over", () => {
  it("holds live items while the replay runs, then sends those past its head in order, then goes live", () => {
    const { handOver, sent } = harness(10)
    for (const seq of [4, 5, 6, 7]) handOver.offer(seq)
    expect(sent).toEqual([])
    // The replay read up to 5: 4 and 5 came from the log, so only 6 and 7 follow it.
    handOver.release((seq) => seq > 5)
    expect(sent).toEqual([6, 7])
    handOver.offer(8)
    handOver.offer(9)
    expect(sent).toEqual([6, 7, 8, 9])
  })

  it("closes the stream when more than `capacity` items wait, and holds nothing after", () => {
    const { handOver, sent, overflows } = harness(2)
    for (const seq of [1, 2, 3]) handOver.offer(seq)
    expect(overflows()).toBe(0)
    handOver.offer(4)
    expect(overflows()).toBe(1)
    // Closed: later items are not held (nor sent on release but for what was held before).
    handOver.offer(5)
    handOver.release(() => true)
    expect(sent).toEqual([1, 2, 3])
  })

  it("sends straight through when there is no replay", () => {
    const { handOver, sent } = harness(0, false)
    handOver.offer(1)
    handOver.offer(2)
    expect(sent).toEqual([1, 2])
    handOver.release(() => false)
    handOver.offer(3)
    expect(sent).toEqual([1, 2, 3])
  })
})
