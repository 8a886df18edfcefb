/**
 * User code gets values of its own: an invariant's check, a method's apply (its row and its params), an app
 * command's decide (rows read through ctx.get) and a view's evolve (its event, before and after) may change what
 * they are handed in place, in fields typed Unknown, Any and object too, and neither the served row, the stored
 * row nor the log changes. Each case ends with `wo verify` and `wo replay --app` clean on the data dir.
 */
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import mutatingApp from "../../testkit/mutating-app.ts"
import { writeAppDir } from "../../testkit/app-dir.ts"
import { checkStore, readStore } from "../../testkit/log-reader.ts"
import { http, ROOT, runWo, startServer } from "../../testkit/server.ts"

const APP_DIR = writeAppDir(`export { default } from ${JSON.stringify(path.join(ROOT, "testkit/mutating-app.ts"))}\n`)

type Server = Awaited<ReturnType<typeof startServer>>
let server: Server | undefined

afterEach(async () => {
  await server?.close()
  server = undefined
})

const post = (p: string, body: unknown) => http(`${server!.url}${p}`, { method: "POST", body })
const get = (p: string) => http(`${server!.url}${p}`)

/** A note whose opaque fields are nested objects, and whose `meta.mutate` names the callback that changes it. */
const note = (mutate: string, title = "first") => ({
  title,
  meta: { mutate, n: 1, deep: { list: [1, 2] } },
  blob: { b: 1 },
  extra: { inner: { c: 1 } }
})

/** The fields of a note as sent, as any row or event must hold them. */
const fieldsOf = (n: ReturnType<typeof note>) => ({ meta: n.meta, blob: n.blob, extra: n.extra })

/** Closes the server, then checks the log: its stored rows equal its fold, and `wo verify` and `wo replay --app` agree. */
const closeAndCheck = async () => {
  const dataDir = server!.dataDir
  await server!.close()
  server = undefined
  const store = await readStore(dataDir)
  expect(checkStore(store)).toEqual([])
  const verify = await runWo(["verify", dataDir])
  expect(verify.code, verify.stdout + verify.stderr).toBe(0)
  const replay = await runWo(["replay", "--app", APP_DIR, dataDir])
  expect(replay.stdout + replay.stderr).not.toMatch(/MISMATCH/)
  expect(replay.code, replay.stdout + replay.stderr).toBe(0)
  return store
}

describe("user code changing what it is handed in place", () => {
  it("an invariant's check: neither the created event nor, on a later method, the stored row changes", async () => {
    server = await startServer(mutatingApp)
    const sent = note("invariant")
    const created = await post("/api/notes", sent)
    expect(created.status).toBe(201)
    expect(created.json).toEqual({ id: "1", version: 1, title: "first", ...fieldsOf(sent) })
    // The invariant runs again on the row after the method, whose meta comes from the stored row.
    const retitled = await post("/api/notes/1/retitle", { title: "second" })
    expect(retitled.status).toBe(200)
    expect(retitled.json).toEqual({ id: "1", version: 2, title: "second", ...fieldsOf(sent) })
    expect((await get("/api/notes/1")).json).toEqual({ id: "1", version: 2, title: "second", ...fieldsOf(sent) })
    const store = await closeAndCheck()
    expect(store.events.map((e) => e.data)).toEqual([{ title: "first", ...fieldsOf(sent) }, { title: "second" }])
    expect(store.storedRows.get("notes/1")).toEqual({ id: "1", version: 2, title: "second", ...fieldsOf(sent) })
  })

  it("a method's apply: its row and its params are its own; the served and stored row change only by its event", async () => {
    server = await startServer(mutatingApp)
    const sent = note("method")
    expect((await post("/api/notes", sent)).status).toBe(201)
    const retitled = await post("/api/notes/1/retitle", { title: "second" })
    expect(retitled.status).toBe(200)
    expect(retitled.json).toEqual({ id: "1", version: 2, title: "second", ...fieldsOf(sent) })
    expect((await get("/api/notes/1")).json).toEqual({ id: "1", version: 2, title: "second", ...fieldsOf(sent) })
    // A param typed Unknown changed by apply: the event stores the params as the client sent them.
    expect((await post("/api/notes/1/annotate", { note: { text: "hi" } })).status).toBe(200)
    const store = await closeAndCheck()
    expect(store.events.map((e) => [e.version, e.params ?? null, e.data])).toEqual([
      [1, null, { title: "first", ...fieldsOf(sent) }],
      [2, { title: "second" }, { title: "second" }],
      [3, { note: { text: "hi" } }, { title: "annotated" }]
    ])
    expect(store.storedRows.get("notes/1")).toEqual({ id: "1", version: 3, title: "annotated", ...fieldsOf(sent) })
  })

  it("a command that reads through ctx.get and returns no change: no event, no version bump, the row unchanged", async () => {
    server = await startServer(mutatingApp)
    const sent = note("command")
    expect((await post("/api/notes", sent)).status).toBe(201)
    const peeked = await post("/api/_commands/peek", { note: "1" })
    expect(peeked.status).toBe(200)
    expect((await get("/api/notes/1")).json).toEqual({ id: "1", version: 1, title: "first", ...fieldsOf(sent) })
    const store = await closeAndCheck()
    expect(store.events).toHaveLength(1)
    expect(store.storedRows.get("notes/1")).toEqual({ id: "1", version: 1, title: "first", ...fieldsOf(sent) })
  })

  it("a view's evolve: the event it folds, the row before and the row after are its own", async () => {
    server = await startServer(mutatingApp)
    const sent = note("view")
    const created = await post("/api/notes", sent)
    expect(created.status).toBe(201)
    expect((await get("/api/notes/1")).json).toEqual({ id: "1", version: 1, title: "first", ...fieldsOf(sent) })
    expect((await post("/api/notes/1/retitle", { title: "second" })).status).toBe(200)
    expect((await get("/api/notes/1")).json).toEqual({ id: "1", version: 2, title: "second", ...fieldsOf(sent) })
    expect((await get("/api/_views/notes_seen")).json).toMatchObject({ value: 2 })
    const store = await closeAndCheck()
    expect(store.events.map((e) => e.data)).toEqual([{ title: "first", ...fieldsOf(sent) }, { title: "second" }])
    expect(store.storedRows.get("notes/1")).toEqual({ id: "1", version: 2, title: "second", ...fieldsOf(sent) })
  })
})
