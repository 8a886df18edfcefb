/** Polls `check` until it holds or `ms` pass; returns its last value. */
export const waitFor = async (check: () => boolean, ms = 5000) => {
  const until = Date.now() + ms
  while (!check() && Date.now() < until) await new Promise((r) => setTimeout(r, 20))
  return check()
}
