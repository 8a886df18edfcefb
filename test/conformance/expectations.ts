/**
 * Compares conformance results with the expected-failures file. An entry without `checks` expects the whole
 * scenario to fail; with `checks`, exactly those checks may fail (and must, so a fix shows up as a diff here).
 */
import * as fs from "node:fs"
import * as path from "node:path"
import type { ScenarioResult } from "./run-conformance.ts"

export interface Expectation {
  readonly reason: string
  readonly checks?: ReadonlyArray<string>
}

export const loadExpectations = (era: "legacy" | "modern"): Record<string, Expectation> =>
  JSON.parse(fs.readFileSync(path.join(import.meta.dirname, "expected-failures.json"), "utf8"))[era]

/** Problems: scenarios that fail unexpectedly, and expected failures that now pass. */
export const compareWithExpectations = (results: ReadonlyArray<ScenarioResult>, expected: Record<string, Expectation>) => {
  const problems: Array<string> = []
  for (const r of results) {
    const e = expected[r.scenario]
    const failed = r.failedChecks.map((c) => c.id)
    if (e === undefined) {
      if (!r.passed) problems.push(`${r.scenario} failed: ${r.failedChecks.map((c) => `${c.id}: ${c.message}`).join("; ")}`)
    } else if (e.checks === undefined) {
      if (r.passed) problems.push(`${r.scenario} passes now: remove it from expected-failures.json (${e.reason})`)
    } else {
      const unexpected = failed.filter((id) => !e.checks!.includes(id))
      const fixed = e.checks.filter((id) => !failed.includes(id))
      if (unexpected.length) problems.push(`${r.scenario}: unexpected failures ${r.failedChecks.filter((c) => unexpected.includes(c.id)).map((c) => `${c.id}: ${c.message}`).join("; ")}`)
      if (fixed.length) problems.push(`${r.scenario}: ${fixed.join(", ")} pass now: update expected-failures.json`)
    }
  }
  return problems
}
