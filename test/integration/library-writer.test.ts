/**
 * The library data dirs the keyed-views benchmark writes directly (bench/lib/library-writer.ts): `wo verify --app`
 * agrees with them (checksums, continuity, counters, row counts, checkpoint, the view's stored state, references),
 * and a server started on one lends to the members left without a loan, its view served from the stored state.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { Effect, Either } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { writeLibrary } from "../../bench/lib/library-writer.ts"
import { loadApp } from "../../src/app-loading/load-app.ts"
import { compileApp } from "../../src/domain/compile.ts"
import { tempDir } from "../../testkit/server.ts"
import { ROOT, runWo, spawnWo } from "../../testkit/spawn.ts"

const SLOW = 120_000
const dirs: Array<string> = []
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })))

const written = async (app: string) => {
  const dir = tempDir("wo-library-writer-")
  dirs.push(dir)
  const appDir = path.join(ROOT, "bench/apps", app)
  const compiled = Either.getOrThrow(compileApp((await Effect.runPromise(loadApp(appDir))).app))
  // 3 books, 12 members, loans for members 1..9 (books round-robin, so one book has its copies checked out 3 times).
  await writeLibrary(dir, { books: 3, members: 12, loans: 9 }, compiled, 4)
  return { dir, appDir }
}

describe("bench/lib/library-writer.ts", () => {
  for (const app of ["library-whole", "library-keyed", "library-noview"]) {
    it(`writes a data dir wo verify agrees with (${app})`, async () => {
      const { dir, appDir } = await written(app)
      const r = await runWo(["verify", "--app", appDir, dir], { timeoutMs: SLOW })
      expect(r.stdout + r.stderr).toContain("verified 36 events and 24 rows")
      expect(r.code).toBe(0)
    }, SLOW)
  }

  it("serves the stored view at once, and lends to a member left without a loan", async () => {
    const { dir, appDir } = await written("library-whole")
    const server = await spawnWo(["run", appDir, "--data", dir, "--listen", "127.0.0.1:0"], { readyTimeoutMs: SLOW, env: { WO_LOG_LEVEL: "Info" } })
    try {
      expect(server.stdout()).toMatch(/views: 1 loaded/)
      const res = await fetch(`${server.loopbackUrl}/api/_commands/lend`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ book: "1", member: "10" }) })
      expect(res.status).toBe(200)
      const view = (await (await fetch(`${server.loopbackUrl}/api/_views/loans_by_member`)).json()) as { value: Record<string, Array<string>> }
      expect(Object.keys(view.value)).toHaveLength(10)
      expect(view.value["10"]).toEqual(["10"])
      expect(view.value["9"]).toEqual(["9"])
    } finally {
      await server.stop()
    }
  }, SLOW)

  it("stores keyed entries the server reads and extends, and wo verify --app agrees after", async () => {
    const { dir, appDir } = await written("library-keyed")
    const server = await spawnWo(["run", appDir, "--data", dir, "--listen", "127.0.0.1:0"], { readyTimeoutMs: SLOW, env: { WO_LOG_LEVEL: "Info" } })
    try {
      // Member 3 has loan 3 out (written directly): a second loan joins it in the stored entry; member 10 gets one.
      for (const member of ["3", "10"]) {
        const res = await fetch(`${server.loopbackUrl}/api/_commands/lend`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ book: "2", member }) })
        expect(res.status).toBe(200)
      }
      expect(server.stdout()).not.toMatch(/folding it/)
    } finally {
      await server.stop()
    }
    const r = await runWo(["verify", "--app", appDir, dir], { timeoutMs: SLOW })
    expect(r.stdout + r.stderr).toContain("verified 40 events")
    expect(r.code).toBe(0)
  }, SLOW)
})
