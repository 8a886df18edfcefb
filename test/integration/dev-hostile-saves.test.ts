/**
 * `wo dev` as a real process, saved with versions of app.ts that misbehave while they load: an endless loop,
 * `process.exit(0)`, a top-level await that never settles, a rejected promise nobody handles, a throw. Each fails
 * that reload with a line naming the cause, the previous app serves on (`/livez` and the app's REST answer
 * throughout), and the good save after it is taken.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { spawnWo, type Spawned } from "../../testkit/spawn.ts"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { http, tempDir } from "../../testkit/server.ts"
import { waitFor } from "../../testkit/wait.ts"

const BOUND = 60_000
/** The limit on a version's load in these tests: generous for a loaded machine, short enough to wait for twice. */
const LOAD_TIMEOUT_MS = 5000

const notesApp = (extra: { field?: string; topLevel?: string } = {}) => `
import { Schema } from "effect"
import { defineApp, entity } from "writeonce"
${extra.topLevel ?? ""}
export default defineApp({
  name: "notes",
  entities: {
    notes: entity({
      fields: {
        title: Schema.String${extra.field ?? ""}
      }
    })
  }
})
`

/** The good save after the hostile one: notes gain a defaulted field, which the served rows then show. */
const GOOD = notesApp({ field: `,\n        pinned: Schema.Boolean.pipe(Schema.optionalWith({ default: () => false }))` })

let server: Spawned | undefined
afterEach(async () => {
  await server?.stop()
  server = undefined
})

const reloads = (s: Spawned) => s.stdout().split("wo dev: reloaded").length - 1
const refusals = (s: Spawned) => s.output().split("did not reload").length - 1

/**
 * Asks for /livez and the app's list, one after the other, until stopped: every answer must be a 200. A request
 * that gets no answer at all (a server stuck in a loop) fails the test at its own deadline.
 */
const keepAsking = (url: string) => {
  const failures: Array<string> = []
  let answered = 0
  let running = true
  const done = (async () => {
    while (running) {
      for (const target of ["/livez", "/api/notes"]) {
        try {
          const res = await fetch(`${url}${target}`, { signal: AbortSignal.timeout(20_000) })
          await res.text()
          if (res.status === 200) answered++
          else failures.push(`${target}: ${res.status}`)
        } catch (e) {
          failures.push(`${target}: ${e instanceof Error ? e.message : String(e)}`)
        }
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  })()
  return {
    failures,
    answered: () => answered,
    stop: async () => {
      running = false
      await done
    }
  }
}

const hostile = async (source: string, cause: RegExp) => {
  const dir = writeAppDir(notesApp())
  server = await spawnWo(["dev", dir, "--data", tempDir("wo-dev-data-"), "--listen", "127.0.0.1:0"], {
    env: { WO_DEV_LOAD_TIMEOUT_MS: String(LOAD_TIMEOUT_MS) },
    stopTimeoutMs: 5000
  })
  const s = server
  const appFile = path.join(dir, "app.ts")
  expect((await http(`${s.url}/api/notes`, { method: "POST", body: { title: "before" } })).status).toBe(201)
  const asking = keepAsking(s.url)
  try {
    fs.writeFileSync(appFile, source)
    expect(await waitFor(() => refusals(s) === 1 || s.exitReport() !== undefined, BOUND)).toBe(true)
    expect(s.exitReport()).toBeUndefined()
    // The line names the cause; the previous app serves on, writes included.
    const refusal = s.output().slice(s.output().indexOf("did not reload"))
    expect(refusal).toMatch(cause)
    expect(reloads(s)).toBe(0)
    const answeredMeanwhile = asking.answered()
    expect(answeredMeanwhile).toBeGreaterThan(0)
    expect((await http(`${s.url}/api/notes`, { method: "POST", body: { title: "meanwhile" } })).status).toBe(201)

    // The next save is tried, and taken: the new field's default shows on the rows written before.
    fs.writeFileSync(appFile, GOOD)
    expect(await waitFor(() => reloads(s) === 1 || refusals(s) > 1, BOUND)).toBe(true)
    expect(refusals(s)).toBe(1)
    const listed = await http(`${s.url}/api/notes`)
    expect(listed.json.items.map((r: { title: string; pinned: boolean }) => [r.title, r.pinned])).toEqual([["before", false], ["meanwhile", false]])
    // Asked on after the reload: a next answer comes (the asker keeps going at its own pace).
    expect(await waitFor(() => asking.answered() > answeredMeanwhile, BOUND)).toBe(true)
  } finally {
    await asking.stop()
  }
  expect(asking.failures).toEqual([])
  expect(s.exitReport()).toBeUndefined()
}

describe("wo dev with a save that misbehaves while it loads", () => {
  it("an endless loop at import fails that reload (named as a loop), and the next save is taken", async () => {
    await hostile(notesApp({ topLevel: "while (true) {}" }), new RegExp(`within ${LOAD_TIMEOUT_MS} ms[^\\n]*endless loop`))
  }, 3 * BOUND)

  it("process.exit(0) at import fails that reload, and the server lives on", async () => {
    await hostile(notesApp({ topLevel: "process.exit(0)" }), /ended its process while loading \(process\.exit\(0\)\)/)
  }, 3 * BOUND)

  it("a top-level await that never settles fails that reload, and the next save is taken", async () => {
    await hostile(notesApp({ topLevel: "await new Promise(() => {})" }), new RegExp(`within ${LOAD_TIMEOUT_MS} ms[^\\n]*top-level await that never settles`))
  }, 3 * BOUND)

  it("a promise rejected at import with no handler fails that reload, and the server lives on", async () => {
    await hostile(notesApp({ topLevel: `Promise.reject(new Error("rejected at import"))` }), /threw while loading, outside its import[^\n]*: rejected at import \(at [^\n]*app\.ts:\d+:\d+\)/)
  }, 3 * BOUND)

  it("a throw at import fails that reload with the error and where it was thrown", async () => {
    await hostile(notesApp({ topLevel: `throw new Error("broken at import")` }), /cannot load [^\n]*app\.ts: broken at import \(at [^\n]*app\.ts:\d+:\d+\)/)
  }, 3 * BOUND)
})

describe("wo dev imports each version once", () => {
  it("a save back to a version already served imports nothing new: its code at import runs no more in the server", async () => {
    const dir = writeAppDir(notesApp())
    server = await spawnWo(["dev", dir, "--data", tempDir("wo-dev-data-"), "--listen", "127.0.0.1:0"], { stopTimeoutMs: 5000 })
    const s = server
    const appFile = path.join(dir, "app.ts")
    const said = (word: string) => s.stdout().split(word).length - 1
    const v2 = notesApp({ topLevel: `console.log("imported-v2")` })
    const v3 = notesApp({ topLevel: `console.log("imported-v3")` })
    fs.writeFileSync(appFile, v2)
    expect(await waitFor(() => reloads(s) === 1, BOUND)).toBe(true)
    fs.writeFileSync(appFile, v3)
    expect(await waitFor(() => reloads(s) === 2, BOUND)).toBe(true)
    // Back to v2: served again, from the modules imported the first time (the worker's print is not shown).
    fs.writeFileSync(appFile, v2)
    expect(await waitFor(() => reloads(s) === 3, BOUND)).toBe(true)
    expect(refusals(s)).toBe(0)
    expect([said("imported-v2"), said("imported-v3")]).toEqual([1, 1])
    expect((await http(`${s.url}/api/notes`, { method: "POST", body: { title: "served" } })).status).toBe(201)
  }, 3 * BOUND)
})
