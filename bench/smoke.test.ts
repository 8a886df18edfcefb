/**
 * Smoke run of the benchmark harness (`bench/run.ts --smoke`): it must complete and write well-formed output
 * (the JSON with its keys, the Markdown table, a well-formed SVG). Nothing here asserts that anything is fast.
 *
 * Not part of `npm test` (it spawns a dozen servers: seconds alone, far more beside the suite on 2 cores).
 * Run it with `npm run bench:smoke` (vitest.bench.config.ts); .ci/run does, after `npm test`.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runNode } from "../testkit/spawn.ts"

const out = fs.mkdtempSync(path.join(os.tmpdir(), "wo-bench-smoke-"))
const data = fs.mkdtempSync(path.join(os.tmpdir(), "wo-bench-smoke-data-"))

afterAll(() => {
  fs.rmSync(out, { recursive: true, force: true })
  fs.rmSync(data, { recursive: true, force: true })
})

// A hang guard, not a speed check: ~80 s on a quiet 2-core machine, more than 120 s beside two CPU hogs. The child
// is killed at 300 s, before the test's own timeout (vitest.bench.config.ts, 330 s), so a hang reports its stderr.
const runSmoke = () => runNode("bench/run.ts", ["--smoke", "--out", out], { importTsx: true, env: { BENCH_DATA_DIR: data }, timeoutMs: 300_000 })

/** Tag balance and a single root: enough to catch a truncated or mis-nested SVG without an XML parser. */
const checkWellFormed = (xml: string): void => {
  expect(xml.startsWith("<?xml")).toBe(true)
  const body = xml.replace(/^<\?xml[^>]*\?>\s*/, "")
  const stack: Array<string> = []
  let roots = 0
  for (const m of body.matchAll(/<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g)) {
    const [, closing, name, , selfClosing] = m
    if (closing) expect(stack.pop()).toBe(name)
    else if (!selfClosing) {
      if (stack.length === 0) roots++
      stack.push(name)
    } else if (stack.length === 0) roots++
  }
  expect(stack).toEqual([])
  expect(roots).toBe(1)
  // nothing that looks like markup was left unmatched, and text has no raw '<' or '&'
  const stripped = body.replace(/<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/g, "")
  expect(stripped).not.toMatch(/<|&(?!(amp|lt|gt|quot|apos);)/)
}

describe("npm run bench -- --smoke", () => {
  it("completes and writes latest.json, latest.md and latest.svg", async () => {
    const { code, stdout, stderr } = await runSmoke()
    expect(code, `bench/run.ts --smoke failed:\n${stderr.slice(-3000)}`).toBe(0)
    expect(stdout).toContain("## Budgets")

    const report = JSON.parse(fs.readFileSync(path.join(out, "latest.json"), "utf8"))
    for (const key of [
      "bench", "mode", "at", "node", "commit", "cores", "loadavg", "busyCoresAtStart", "fsync", "load", "notify", "notifyFloor", "stall",
      "replay", "sessions", "ratios", "budgets", "warnings"
    ]) expect(report, key).toHaveProperty(key)
    expect(report.mode).toBe("smoke")
    expect(report.loadavg.before).toHaveLength(3)
    expect(report.loadavg.after).toHaveLength(3)
    expect(report.load.length).toBeGreaterThan(0)
    for (const s of report.load) {
      expect(s.levels.length, s.id).toBeGreaterThan(0)
      for (const l of s.levels) {
        for (const k of ["concurrency", "callsPerSec", "p50Ms", "p99Ms", "p999Ms", "srvCpuUsPerCall", "errors"]) expect(l, `${s.id} ${k}`).toHaveProperty(k)
      }
    }
    expect(report.budgets.length).toBeGreaterThanOrEqual(6)
    for (const b of report.budgets) expect(["PASS", "MISS", "n/a"]).toContain(b.result)
    expect(report.notify.latency.length).toBeGreaterThan(0)
    expect(report.stall).toHaveLength(2)
    expect(report.replay.ok).toBe(true)
    expect(report.sessions.sessions).toBeGreaterThan(0)

    const md = fs.readFileSync(path.join(out, "latest.md"), "utf8")
    expect(md).toContain("| budget | measured | want | verdict | how |")
    expect(md).toMatch(/^\| scenario \| in flight \| calls\/s \| p50 ms \| p99 ms \| p99\.9 ms \|/m)
    expect(md).toMatch(/\*\*(PASS|MISS|n\/a)\*\*/)

    checkWellFormed(fs.readFileSync(path.join(out, "latest.svg"), "utf8"))
  })
})
