/**
 * What an operator accepted as lost (`--accept-data-loss`): one JSON line per acceptance in `WO-ACCEPTED-LOSS`
 * beside the data, naming the seqs that are gone and, where known, the ids of the rows they created. The file is
 * never removed by writeonce. `wo verify` reports it, and reads a gap in the log that it covers (and the version
 * jumps across that gap) as the accepted loss rather than as damage; the log reads across such a gap too.
 */
import * as fs from "node:fs"
import * as path from "node:path"

export const ACCEPTED_LOSS_FILE = "WO-ACCEPTED-LOSS"

/** Inclusive seq ranges, ascending. */
export type SeqRanges = ReadonlyArray<readonly [number, number]>

export interface AcceptedLoss {
  /** When it was accepted (ISO time). */
  readonly at: string
  readonly lostSeqs: SeqRanges
  /** Per type, ids of rows whose create was lost (they are never handed out again). */
  readonly lostIds: Readonly<Record<string, ReadonlyArray<string>>>
  /** What was found, in words. */
  readonly reason: string
}

export const countSeqs = (ranges: SeqRanges) => ranges.reduce((n, [a, b]) => n + b - a + 1, 0)

export const describeRanges = (ranges: SeqRanges, max = 10) => {
  const shown = ranges.slice(0, max).map(([a, b]) => (a === b ? `${a}` : `${a}..${b}`))
  return shown.join(", ") + (ranges.length > max ? `, and ${ranges.length - max} more ranges` : "")
}

/** Consecutive ids as ranges (`1701-1800, 1803`), at most `max` of them listed. */
export const describeIds = (ids: ReadonlyArray<string>, max = 10) => {
  const nums = ids.map(Number).sort((a, b) => a - b)
  const ranges: Array<[number, number]> = []
  for (const n of nums) {
    const last = ranges[ranges.length - 1]
    if (last !== undefined && n === last[1] + 1) last[1] = n
    else ranges.push([n, n])
  }
  const shown = ranges.slice(0, max).map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`))
  return shown.join(", ") + (ranges.length > max ? `, and ${ranges.length - max} more ranges` : "")
}

export const appendAcceptedLoss = (dir: string, loss: AcceptedLoss) => {
  const fd = fs.openSync(path.join(dir, ACCEPTED_LOSS_FILE), "a")
  try {
    fs.writeSync(fd, `${JSON.stringify(loss)}\n`)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

/** Every acceptance recorded in the dir (none when the file is absent); a line that does not parse is skipped. */
export const readAcceptedLosses = (dir: string): ReadonlyArray<AcceptedLoss> => {
  let text: string
  try {
    text = fs.readFileSync(path.join(dir, ACCEPTED_LOSS_FILE), "utf8")
  } catch {
    return []
  }
  const losses: Array<AcceptedLoss> = []
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue
    try {
      const loss = JSON.parse(line) as AcceptedLoss
      if (Array.isArray(loss.lostSeqs)) losses.push(loss)
    } catch {
      // A line torn by a crash while it was appended: the acceptance it held is simply not known.
    }
  }
  return losses
}

/** Whether every seq in [from, to] was accepted as lost. */
export const acceptedGap = (losses: ReadonlyArray<AcceptedLoss>) => {
  const ranges = losses.flatMap((l) => l.lostSeqs).slice().sort((a, b) => a[0] - b[0])
  return (from: number, to: number): boolean => {
    let next = from
    for (const [a, b] of ranges) {
      if (a > next) break
      if (b >= next) next = b + 1
      if (next > to) return true
    }
    return next > to
  }
}

/** Whether some seq in (after, before) was accepted as lost: a version jump across it is explained. */
export const lossBetween = (losses: ReadonlyArray<AcceptedLoss>) => {
  const ranges = losses.flatMap((l) => l.lostSeqs)
  return (after: number, before: number): boolean => ranges.some(([a, b]) => a < before && b > after)
}
