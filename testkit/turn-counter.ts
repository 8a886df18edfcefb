/**
 * Counts turns of the event loop: a callback re-armed with `setImmediate`, run once per turn as an I/O callback
 * (a request arriving) would be. Reading the count at two points tells whether the loop turned in between, by
 * order and not by time: work that holds the loop for its whole length sees the same count all along.
 */
export interface TurnCounter {
  readonly turns: () => number
  readonly stop: () => void
}

export const countTurns = (): TurnCounter => {
  let turns = 0
  let counting = true
  const tick = () => {
    turns++
    if (counting) setImmediate(tick)
  }
  setImmediate(tick)
  return { turns: () => turns, stop: () => void (counting = false) }
}
