/**
 * WO_LOG_LEVEL: `wo run` starts with every level the settings table (docs/operating.md) lists, and the level is the
 * floor of its log lines; a level it does not know refuses the start, naming the ones it accepts. Real `wo`
 * processes: below Info the line announcing the URL is not logged, so each binds a port it was given and is seen
 * ready on /readyz.
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { freePort, http, ROOT, tempDir } from "../../testkit/server.ts"
import { environment, runWo, WO_BIN } from "../../testkit/spawn.ts"

/** The levels the settings table lists in WO_LOG_LEVEL's row. */
const documented = (() => {
  const row = fs.readFileSync(path.join(ROOT, "docs/operating.md"), "utf8").split("\n").find((l) => l.startsWith("| `WO_LOG_LEVEL` |"))!
  const accepted = row.split("|")[3]
  return [...accepted.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1])
})()

const started: Array<ReturnType<typeof spawn>> = []
afterAll(() => {
  for (const child of started) if (child.exitCode === null) child.kill("SIGKILL")
})

/** `wo run` with WO_LOG_LEVEL=`level` on a port of its own: ready on /readyz, or how it exited. */
const startAt = async (level: string) => {
  const port = await freePort()
  const child = spawn(process.execPath, [WO_BIN, "run", "examples/pricing", "--data", tempDir("wo-level-"), "--listen", `127.0.0.1:${port}`], {
    cwd: ROOT,
    env: environment({ WO_LOG_LEVEL: level }),
    stdio: ["ignore", "pipe", "pipe"]
  })
  started.push(child)
  let output = ""
  child.stdout!.setEncoding("utf8").on("data", (s: string) => (output += s))
  child.stderr!.setEncoding("utf8").on("data", (s: string) => (output += s))
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  for (let i = 0; i < 600 && child.exitCode === null; i++) {
    const ready = await http(`http://127.0.0.1:${port}/readyz`).catch(() => undefined)
    if (ready?.status === 200) break
    await new Promise((r) => setTimeout(r, 100))
  }
  const readyNow = child.exitCode === null && (await http(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200
  child.kill("SIGTERM")
  await exited
  return { ready: readyNow, output }
}

describe("WO_LOG_LEVEL", () => {
  it("the settings table lists Warning among the levels", () => {
    expect(documented).toEqual(expect.arrayContaining(["Debug", "Info", "Warning", "Error"]))
  })

  it("wo run starts with every documented level, which is the floor of its log lines", async () => {
    const answers = await Promise.all(documented.map(async (level) => [level, await startAt(level)] as const))
    for (const [level, { ready, output }] of answers) {
      expect(ready, `${level}:\n${output}`).toBe(true)
      // The announcement is an INFO line: logged at Info and below, not above.
      const infoShown = ["trace", "debug", "info"].includes(level.toLowerCase())
      expect(/ INFO  writeonce .* serving app/.test(output), `${level}:\n${output}`).toBe(infoShown)
    }
  }, 180_000)

  it("a level it does not know refuses the start, naming the accepted ones", async () => {
    const refused = await runWo(["run", "examples/pricing", "--data", tempDir("wo-level-"), "--listen", "127.0.0.1:0"], { env: { WO_LOG_LEVEL: "Loud" }, timeoutMs: 60_000 })
    expect(refused.code).toBe(1)
    expect(refused.stdout + refused.stderr).toMatch(/WO_LOG_LEVEL.*expected one of Trace, Debug, Info, Warning, Error, Fatal, None, got \\"Loud\\"/)
  }, 60_000)
})
