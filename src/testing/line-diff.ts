/** A small line diff for readable failures: transcripts (bodies, events) and decider specs (events). */

/** A line diff (LCS): `  ` same, `- ` expected only, `+ ` actual only; long unchanged runs fold to `  ...`. */
export const lineDiff = (expected: ReadonlyArray<string>, actual: ReadonlyArray<string>, context = 3): Array<string> => {
  const n = expected.length
  const m = actual.length
  if (n * m > 4_000_000) return [...expected.map((l) => `- ${l}`), ...actual.map((l) => `+ ${l}`)]
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1))
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = expected[i] === actual[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1])
    }
  }
  const ops: Array<readonly [" " | "-" | "+", string]> = []
  let i = 0
  let j = 0
  while (i < n && j < m) {
    if (expected[i] === actual[j]) {
      ops.push([" ", expected[i]])
      i++
      j++
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) ops.push(["-", expected[i++]])
    else ops.push(["+", actual[j++]])
  }
  while (i < n) ops.push(["-", expected[i++]])
  while (j < m) ops.push(["+", actual[j++]])

  const changed = ops.map(([op]) => op !== " ")
  const near = (k: number) => changed.slice(Math.max(0, k - context), k + context + 1).some((c) => c)
  const out: Array<string> = []
  ops.forEach(([op, line], k) => {
    if (near(k)) out.push(`${op} ${line}`)
    else if (out[out.length - 1] !== "  ...") out.push("  ...")
  })
  return out
}
