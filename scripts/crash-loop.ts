/**
 * The crash loop, long form: `node --import tsx scripts/crash-loop.ts` (CYCLES, default 20; SEED to repeat a
 * run's choices; IN_FLIGHT, default 32). Each cycle drives mixed REST and MCP writes against the real `wo`
 * binary, kills it with SIGKILL at a random moment, and checks the log, `wo replay`, the restarted server and a
 * resumed subscriber (see testkit/crash-loop.ts). Exits 1 when any acknowledged write was lost or any
 * check failed.
 */
import { runCrashLoop } from "../testkit/crash-loop.ts"

const int = (name: string, fallback: number) => {
  const raw = process.env[name]
  const n = raw === undefined ? fallback : Number(raw)
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${raw}`)
  return n
}

const started = Date.now()
const report = await runCrashLoop({
  cycles: int("CYCLES", 20),
  inFlight: int("IN_FLIGHT", 32),
  seed: process.env.SEED === undefined ? undefined : int("SEED", 1),
  log: (line) => console.log(line)
})
console.log(
  `\n${report.cycles.length} cycles in ${((Date.now() - started) / 1000).toFixed(1)} s (seed ${report.seed}, data dir ${report.dataDir})\n` +
    `acknowledged writes: ${report.ackedWrites}; checks of acknowledged writes against the log: ${report.checks}; lost: ${report.lost}\n` +
    `notifications checked for acknowledged writes on subscribed rows: ${report.notificationsChecked}`
)
if (report.problems.length > 0) {
  console.error(`\n${report.problems.length} problems:\n  ${report.problems.slice(0, 50).join("\n  ")}`)
  process.exit(1)
}
console.log("OK: no acknowledged write lost, the log whole after every crash, every notification resumed")
