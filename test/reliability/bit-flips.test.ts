/**
 * One flipped bit anywhere in LevelDB's files must never become a changed row served as if nothing happened.
 * Over many seeds, a copy of a stopped data dir gets one bit flipped in a `.log` (write-ahead log) or `.ldb`
 * (table) file. Then either startup refuses, or `wo verify`'s check names a problem, or every row served equals
 * what was acknowledged. "Served wrong" must be 0.
 *
 * FLIP_SEED=<n> repeats a run; FLIP_TRIALS=<n> runs more trials (default 48).
 */
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { servedRows, type FlipManifest, type FlipOutcome } from "../../testkit/flip-trials.ts"
import { apps, http, ROOT, startServer, tempDir } from "../../testkit/server.ts"

const SEED = Number(process.env.FLIP_SEED ?? 20261202)
const TRIALS = Number(process.env.FLIP_TRIALS ?? 48)

/** A small deterministic PRNG (mulberry32), so a failing seed can be rerun. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const product = (n: number) => ({ name: `product ${n}`, price: n, currency: n % 2 ? "USD" : "EUR" })

/**
 * A stopped data dir with both a table and a write-ahead log holding acknowledged writes: 40 creates and 40
 * price changes, a restart (LevelDB turns its log into an .ldb table when it opens), then 40 more changes.
 */
const buildStore = async () => {
  const dataDir = tempDir("wo-flips-")
  let server = await startServer(apps.pricing, { dataDir })
  for (let n = 1; n <= 40; n++) await http(`${server.url}/api/products`, { method: "POST", body: product(n) })
  for (let n = 1; n <= 40; n++) await http(`${server.url}/api/products/${n}/set_price`, { method: "POST", body: { price: n + 100 } })
  await server.close()
  server = await startServer(apps.pricing, { dataDir })
  for (let n = 1; n <= 40; n++) await http(`${server.url}/api/products/${n}/set_price`, { method: "POST", body: { price: n + 200 } })
  const acked = await servedRows(server.url)
  await server.close()
  return { dataDir, acked }
}

/**
 * Runs the trials in child processes (testkit/flip-trials.ts): a trial that aborts its process inside
 * LevelDB is refused, served nothing, and the rest go on in a new child.
 */
const runTrials = async (manifest: FlipManifest) => {
  const outcomes = new Map<string, FlipOutcome>()
  let left = manifest.dirs
  while (left.length > 0) {
    const file = path.join(tempDir("wo-flip-manifest-"), "manifest.json")
    fs.writeFileSync(file, JSON.stringify({ ...manifest, dirs: left }))
    const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "testkit/flip-trials.ts"), file], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "ignore"]
    })
    let out = ""
    child.stdout.on("data", (c: Buffer) => (out += c.toString()))
    await new Promise((resolve) => child.once("exit", resolve))
    let started: string | undefined
    for (const line of out.split("\n").filter((l) => l.startsWith("{"))) {
      const message = JSON.parse(line) as { start?: string; dir?: string; outcome?: FlipOutcome }
      if (message.start !== undefined) started = message.start
      else if (message.dir !== undefined && message.outcome !== undefined) {
        outcomes.set(message.dir, message.outcome)
        started = undefined
      }
    }
    if (started === undefined && outcomes.size < manifest.dirs.length && left.every((d) => !outcomes.has(d))) {
      throw new Error(`the trial runner produced nothing: ${out.slice(0, 500)}`)
    }
    if (started !== undefined) outcomes.set(started, "refusedAtStartup") // LevelDB aborted the process on it
    left = left.filter((d) => !outcomes.has(d))
  }
  return outcomes
}

describe("bit flips in LevelDB's files", () => {
  it(`never serve a changed row without an error (seed ${SEED}, ${TRIALS} trials)`, async () => {
    const { dataDir, acked } = await buildStore()
    const files = (suffix: string) => fs.readdirSync(dataDir).filter((f) => f.endsWith(suffix))
    expect(files(".log").length, "the store has a write-ahead log").toBeGreaterThan(0)
    expect(files(".ldb").length, "the store has a table").toBeGreaterThan(0)
    expect(acked.size).toBe(40)

    const next = random(SEED)
    const flips = new Map<string, string>() // copy -> where its bit was flipped
    for (let trial = 0; trial < TRIALS; trial++) {
      const copy = tempDir("wo-flip-")
      fs.cpSync(dataDir, copy, { recursive: true })
      const kind = trial % 2 === 0 ? ".log" : ".ldb"
      const candidates = files(kind).map((f) => path.join(copy, f)).filter((f) => fs.statSync(f).size > 0)
      const file = candidates[Math.floor(next() * candidates.length)]
      const bytes = fs.readFileSync(file)
      const offset = Math.floor(next() * bytes.length)
      const bit = Math.floor(next() * 8)
      bytes[offset] ^= 1 << bit
      fs.writeFileSync(file, bytes)
      flips.set(copy, `${path.basename(file)} byte ${offset} bit ${bit}`)
    }
    const results = await runTrials({ acked: Object.fromEntries(acked), dirs: [...flips.keys()] })
    const outcomes = { refusedAtStartup: 0, foundByVerify: 0, harmless: 0, servedWrong: 0 }
    for (const outcome of results.values()) outcomes[outcome]++
    const wrong = [...results].filter(([, o]) => o === "servedWrong").map(([dir]) => flips.get(dir))
    for (const dir of flips.keys()) fs.rmSync(dir, { recursive: true, force: true })
    console.log(`bit flips (seed ${SEED}): ${TRIALS} trials, ${JSON.stringify(outcomes)}`)
    expect(wrong, `changed rows served without an error after flips at: ${wrong.join(", ")}`).toEqual([])
    expect(outcomes.refusedAtStartup + outcomes.foundByVerify + outcomes.harmless).toBe(TRIALS)
    // Most flips land in data that is read: they must be caught, not merely survived.
    expect(outcomes.refusedAtStartup + outcomes.foundByVerify).toBeGreaterThan(TRIALS / 2)
  }, 240_000)
})
