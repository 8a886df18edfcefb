/**
 * Several key iterators read as one, in the order of their keys' suffixes (each key without its iterator's
 * `skip` leading characters): how a list filtered by a set of values walks one span of the index per value
 * and serves them in one order. A batch iterator itself (read-batches.ts).
 */
import type { BatchIterator } from "./read-batches.ts"

export class MergedKeys implements BatchIterator<string> {
  private readonly buffers: Array<Array<string>>
  private readonly positions: Array<number>
  private readonly done: Array<boolean>

  constructor(
    private readonly sources: ReadonlyArray<{ readonly it: BatchIterator<string>; readonly skip: number }>,
    private readonly descending: boolean
  ) {
    this.buffers = sources.map(() => [])
    this.positions = sources.map(() => 0)
    this.done = sources.map(() => false)
  }

  async nextv(size: number): Promise<Array<string>> {
    const out: Array<string> = []
    while (out.length < size) {
      // Every source not at its end holds a key to compare: the empty ones read their next batch (at once).
      if (this.sources.some((_, i) => !this.done[i] && this.positions[i] >= this.buffers[i].length)) await Promise.all(this.sources.map(async ({ it }, i) => {
        if (this.done[i] || this.positions[i] < this.buffers[i].length) return
        // About its share of what is still wanted, with room to spare: a source that runs short reads again.
        this.buffers[i] = await it.nextv(Math.max(8, Math.ceil((1.5 * (size - out.length)) / this.sources.length)))
        this.positions[i] = 0
        if (this.buffers[i].length === 0) this.done[i] = true
      }))
      let best = -1
      let bestSuffix = ""
      for (let i = 0; i < this.sources.length; i++) {
        if (this.done[i]) continue
        const suffix = this.buffers[i][this.positions[i]].slice(this.sources[i].skip)
        if (best < 0 || (this.descending ? suffix > bestSuffix : suffix < bestSuffix)) {
          best = i
          bestSuffix = suffix
        }
      }
      if (best < 0) break
      out.push(this.buffers[best][this.positions[best]++])
    }
    return out
  }

  async close(): Promise<void> {
    await Promise.all(this.sources.map(({ it }) => it.close()))
  }
}
