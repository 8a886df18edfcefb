/**
 * The deadline FIFO of the writer (commands/request-deadline.ts), on real timers with a short bound: what is answered
 * in time is never expired, what is not is expired once, in arrival order, and the FIFO keeps no answered item.
 */
import { describe, expect, it } from "vitest"
import { makeRequestDeadlines, type Watched } from "../../src/commands/request-deadline.ts"

interface Item extends Watched {
  readonly n: number
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe("request deadlines", () => {
  it("expires each unanswered item once, in arrival order, and never one answered in time", async () => {
    const expired: Array<number> = []
    const deadlines = makeRequestDeadlines<Item>(50, (item) => {
      expired.push(item.n)
      item.answered = true
    })
    const items = Array.from({ length: 10 }, (_, n): Item => ({ n, arrivedAt: Date.now(), answered: false }))
    for (const item of items) deadlines.watch(item)
    for (const item of items) if (item.n % 2 === 0) item.answered = true
    // Generous: the timers fire after 50 ms; a loaded machine may take far longer to run them.
    for (let i = 0; i < 200 && expired.length < 5; i++) await wait(20)
    expect(expired).toEqual([1, 3, 5, 7, 9])
    // Later arrivals get a timer of their own deadline.
    const late: Item = { n: 10, arrivedAt: Date.now(), answered: false }
    deadlines.watch(late)
    for (let i = 0; i < 200 && expired.length < 6; i++) await wait(20)
    await wait(100)
    expect(expired).toEqual([1, 3, 5, 7, 9, 10])
    deadlines.close()
  })

  it("expires nothing once closed", async () => {
    const expired: Array<number> = []
    const deadlines = makeRequestDeadlines<Item>(20, (item) => void expired.push(item.n))
    deadlines.watch({ n: 1, arrivedAt: Date.now(), answered: false })
    deadlines.close()
    await wait(100)
    expect(expired).toEqual([])
  })

  it("drops the answered front at each arrival: many writes answered in order leave nothing to expire", async () => {
    const expired: Array<number> = []
    const deadlines = makeRequestDeadlines<Item>(30, (item) => void expired.push(item.n))
    for (let n = 0; n < 10_000; n++) {
      const item: Item = { n, arrivedAt: Date.now(), answered: false }
      deadlines.watch(item)
      item.answered = true
    }
    await wait(100)
    expect(expired).toEqual([])
    deadlines.close()
  })
})
