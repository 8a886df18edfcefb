/** Binary searches over ascending id arrays, shared by the row table and its indexes. */

/** Index of the first id greater than `after`. */
export const indexAfter = (ids: ReadonlyArray<number>, after: number): number => {
  let lo = 0
  let hi = ids.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (ids[mid] <= after) lo = mid + 1
    else hi = mid
  }
  return lo
}
