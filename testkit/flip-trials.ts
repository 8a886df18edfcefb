/**
 * The child side of the bit-flip test (test/reliability/bit-flips.test.ts): for each damaged data dir in the
 * manifest, start the real runtime on it, read every row, stop, and run `wo verify`'s check. One JSON line per
 * trial on stdout, preceded by a `start` line: LevelDB's C++ code may abort the whole process on a damaged
 * table (an assertion in its key handling), and the parent then counts the started trial as refused.
 *
 * Run as `node --import tsx testkit/flip-trials.ts <manifest.json>`.
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import { openDb } from "../src/log/classic-level/level-db.ts"
import { verifyStore } from "../src/log/classic-level/offline/verify.ts"
import { apps, http, startServer } from "./server.ts"

export interface FlipManifest {
  /** Every row acknowledged before the flip, id -> JSON text as served. */
  readonly acked: Record<string, string>
  readonly dirs: ReadonlyArray<string>
}

export type FlipOutcome = "refusedAtStartup" | "foundByVerify" | "harmless" | "servedWrong"

/** Every row the server serves, by id, as JSON text (list and get must agree). */
export const servedRows = async (url: string) => {
  const list = await http(`${url}/api/products?limit=1000`)
  if (list.status !== 200) throw new Error(`list answered ${list.status}`)
  const rows = new Map<string, string>()
  for (const row of list.json.items) rows.set(row.id, JSON.stringify(row))
  for (const id of rows.keys()) {
    const one = await http(`${url}/api/products/${id}`)
    if (one.text !== rows.get(id)) rows.set(id, `get ${one.status}: ${one.text}`)
  }
  return rows
}

const verifyProblems = (dataDir: string) =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(openDb(dataDir), verifyStore)).pipe(
      Effect.map((report) => report.problems),
      Effect.catchAll((e) => Effect.succeed([e.message]))
    )
  )

const trial = async (dir: string, acked: ReadonlyMap<string, string>): Promise<FlipOutcome> => {
  let served: Map<string, string>
  try {
    const server = await startServer(apps.pricing, { dataDir: dir })
    try {
      served = await servedRows(server.url)
    } finally {
      await server.close()
    }
  } catch {
    return "refusedAtStartup"
  }
  if ((await verifyProblems(dir)).length > 0) return "foundByVerify"
  const same = served.size === acked.size && [...served].every(([id, json]) => acked.get(id) === json)
  return same ? "harmless" : "servedWrong"
}

if (process.argv[1]?.endsWith("flip-trials.ts")) {
  const manifest = JSON.parse(fs.readFileSync(process.argv[2], "utf8")) as FlipManifest
  const acked = new Map(Object.entries(manifest.acked))
  for (const dir of manifest.dirs) {
    process.stdout.write(`${JSON.stringify({ start: dir })}\n`)
    process.stdout.write(`${JSON.stringify({ dir, outcome: await trial(dir, acked) })}\n`)
  }
}
