/**
 * How `wo test` reports: TAP version 13 on stdout (readable as it is, and read by TAP consumers in CI), and
 * optionally JUnit XML in a file (`--junit`), which most CI systems show as a test report.
 */
import type { AppTestReport, TestResult } from "./app-tests.ts"

/** The TAP header, written before the first result. */
export const tapHeader = (title: string) => `TAP version 13\n# ${title}`

/** One TAP test line; a failure carries its message in a YAML block. */
export const tapResult = (result: TestResult, index: number) => {
  const line = `${result.ok ? "ok" : "not ok"} ${index} - ${result.name.replace(/#/g, "\\#")}`
  if (result.ok || result.failure === undefined) return line
  const message = result.failure.split("\n").map((l) => `    ${l}`).join("\n")
  return `${line}\n  ---\n  message: |-\n${message}\n  ...`
}

/** The plan and the counts, after the last result. */
export const tapSummary = (report: AppTestReport) => {
  const failed = report.results.filter((r) => !r.ok).length
  const lines = [`1..${report.results.length}`, `# pass ${report.results.length - failed}`, `# fail ${failed}`]
  if (report.results.length === 0) lines.push(`# no tests: add transcripts/*.http or *.spec.ts files to ${report.dir}`)
  return lines.join("\n")
}

const xml = (s: string) =>
  s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")
    // Characters XML 1.0 cannot hold at all (terminal colour codes, say).
    .replace(/[\u0000-\u0008\u000B\u000C\u000E-\u001F]/g, "")

const seconds = (millis: number) => (millis / 1000).toFixed(3)

/** The report as JUnit XML: one testsuite per suite (specs, transcripts), one testcase per result. */
export const junitXml = (report: AppTestReport) => {
  const suites = [...new Set(report.results.map((r) => r.suite))]
  const failures = report.results.filter((r) => !r.ok).length
  const total = report.results.reduce((sum, r) => sum + r.millis, 0)
  const lines = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites name="wo test ${xml(report.app)}" tests="${report.results.length}" failures="${failures}" time="${seconds(total)}">`
  ]
  for (const suite of suites) {
    const results = report.results.filter((r) => r.suite === suite)
    const suiteFailures = results.filter((r) => !r.ok).length
    const suiteTime = results.reduce((sum, r) => sum + r.millis, 0)
    lines.push(`  <testsuite name="${xml(suite)}" tests="${results.length}" failures="${suiteFailures}" time="${seconds(suiteTime)}">`)
    for (const r of results) {
      const open = `    <testcase classname="${xml(r.file)}" name="${xml(r.name)}" time="${seconds(r.millis)}"`
      if (r.ok) lines.push(`${open}/>`)
      else {
        const failure = r.failure ?? "failed"
        lines.push(`${open}>`, `      <failure message="${xml(failure.split("\n")[0])}">${xml(failure)}</failure>`, `    </testcase>`)
      }
    }
    lines.push(`  </testsuite>`)
  }
  lines.push(`</testsuites>`, "")
  return lines.join("\n")
}
