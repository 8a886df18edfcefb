/**
 * Revocation: rewriting the access file ends every kind of open stream of the principals it removed or changed
 * (a legacy session's GET stream, a modern listen, an `/api/_events` tail such as the console's), and their next
 * request is refused; the streams of principals left as they were go on. A bad file is refused and the principals
 * in force stay. The bound asserted is generous (10 s, for a loaded machine); the time measured is logged.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, legacySessions, rest, startWithAccess, tokenOf, type DeclaredPrincipal } from "../../testkit/access-server.ts"
import { LEGACY_VERSION, listenBody, modernHeaders } from "../../testkit/mcp.ts"
import { openSse, type SseConnection } from "../../testkit/sse.ts"
import { waitFor } from "../../testkit/wait.ts"
import * as fs from "node:fs"
import * as nodeHttp from "node:http"
import * as path from "node:path"
import { accessFileText } from "../../testkit/access-server.ts"
import { ROOT, tempDir } from "../../testkit/server.ts"
import { runWo as runWoToEnd, spawnWo } from "../../testkit/spawn.ts"

const BEFORE: ReadonlyArray<DeclaredPrincipal> = [
  { name: "ops", grants: ["admin"] },
  { name: "leaver", grants: ["read"] },
  { name: "narrowed", grants: ["read"] },
  { name: "stayer", grants: ["read"] }
]
/** leaver removed; narrowed keeps its name and token but loses `read`; stayer unchanged. */
const AFTER: ReadonlyArray<DeclaredPrincipal> = [
  { name: "ops", grants: ["admin"] },
  { name: "narrowed", grants: ["books:read"] },
  { name: "stayer", grants: ["read"] }
]

let server: Awaited<ReturnType<typeof startWithAccess>>
let legacy: ReturnType<typeof legacySessions>
let book = ""
let member = ""

beforeAll(async () => {
  server = await startWithAccess(BEFORE)
  legacy = legacySessions(server.url)
  book = (await rest(server.url, "POST", "/api/books", tokenOf("ops"), { title: "Dune", author: "Herbert" })).json.id
  member = (await rest(server.url, "POST", "/api/members", tokenOf("ops"), { name: "Ada" })).json.id
})
afterAll(() => server?.close())

/** Every kind of stream, opened by `name`; each must be open (200) before the file changes. */
const openAll = async (name: string) => {
  const token = tokenOf(name)
  await legacy.open(token)
  const session = legacy.sessionOf(token)!
  const get = await openSse(`${server.url}/mcp`, {
    headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION, ...bearer(token) }
  })
  const listen = await openSse(`${server.url}/mcp`, {
    method: "POST",
    headers: { ...modernHeaders("subscriptions/listen"), ...bearer(token) },
    body: listenBody(1, [`wo://books/${book}`])
  })
  const events = await openSse(`${server.url}/api/_events?from=1`, { headers: bearer(token) })
  const streams: Record<string, SseConnection> = { "legacy GET": get, listen, "/api/_events": events }
  for (const [kind, s] of Object.entries(streams)) expect(s.status, `${name}'s ${kind}`).toBe(200)
  return streams
}

describe("rewriting the access file", () => {
  it("ends every open stream of a removed or changed principal, refuses its next request, and leaves the others open", async () => {
    const leaver = await openAll("leaver")
    const narrowed = await openAll("narrowed")
    for (const uri of [`wo://books/${book}`, `wo://members/${member}`]) {
      expect((await legacy.request(tokenOf("narrowed"), "resources/subscribe", { uri })).status).toBe(200)
    }
    const stayer = await openAll("stayer")
    const started = Date.now()
    // As an operator would: the file rewritten in place; the server sees the change itself (no signal).
    server.write(AFTER)
    const ending = [...Object.entries(leaver).map(([k, s]) => [`leaver ${k}`, s] as const), ...Object.entries(narrowed).map(([k, s]) => [`narrowed ${k}`, s] as const)]
    for (const [label, s] of ending) {
      expect(await waitFor(() => s.ended(), 10_000), `${label} ended`).toBe(true)
    }
    console.log(`access revocation: ${ending.length} streams ended ${Date.now() - started} ms after the file was rewritten`)
    // The next requests: the removed token is refused, the narrowed one has only its new grants.
    expect((await rest(server.url, "GET", "/api/books", tokenOf("leaver"))).status).toBe(401)
    expect((await legacy.request(tokenOf("leaver"), "tools/list")).status).toBe(401)
    expect((await rest(server.url, "GET", "/api/books", tokenOf("narrowed"))).status).toBe(200)
    expect((await rest(server.url, "GET", "/api/members", tokenOf("narrowed"))).status).toBe(403)
    // The principal left as it was keeps its streams: a change reaches its listen stream after the reload.
    for (const [kind, s] of Object.entries(stayer)) expect(s.ended(), `stayer's ${kind}`).toBe(false)
    expect((await stayer.listen.nextJson(5000))?.json.method).toBe("notifications/subscriptions/acknowledged")
    await rest(server.url, "PATCH", `/api/books/${book}`, tokenOf("ops"), { title: "Dune Messiah" })
    expect((await stayer.listen.nextJson(5000))?.json.method).toBe("notifications/resources/updated")
    for (const s of [...Object.values(leaver), ...Object.values(narrowed), ...Object.values(stayer)]) s.close()
  })

  it("a session reopened by a narrowed principal no longer hears what it may no longer read", async () => {
    const session = legacy.sessionOf(tokenOf("narrowed"))!
    const get = await openSse(`${server.url}/mcp`, {
      headers: { accept: "text/event-stream", "mcp-session-id": session, "mcp-protocol-version": LEGACY_VERSION, ...bearer(tokenOf("narrowed")) }
    })
    expect(get.status).toBe(200)
    await rest(server.url, "PATCH", `/api/members/${member}`, tokenOf("ops"), { name: "Ada L." })
    await rest(server.url, "PATCH", `/api/books/${book}`, tokenOf("ops"), { title: "Children of Dune" })
    const first = await get.nextJson(5000)
    expect(first?.json.params.uri).toBe(`wo://books/${book}`)
    expect(await get.nextJson(500)).toBeUndefined()
    get.close()
  })

  it("a changed token is a revoked one: the old token is refused, the new one works", async () => {
    const stream = await openSse(`${server.url}/api/_events?from=1`, { headers: bearer(tokenOf("stayer")) })
    expect(stream.status).toBe(200)
    const file = JSON.parse(fs.readFileSync(server.file, "utf8"))
    file.principals.find((p: { name: string }) => p.name === "stayer").token = "a-brand-new-token-for-stayer"
    fs.writeFileSync(server.file, JSON.stringify(file))
    expect(await waitFor(() => stream.ended(), 10_000)).toBe(true)
    expect((await rest(server.url, "GET", "/api/books", tokenOf("stayer"))).status).toBe(401)
    expect((await rest(server.url, "GET", "/api/books", "a-brand-new-token-for-stayer")).status).toBe(200)
  })

  it("a keep-alive connection's repeated header is judged again once the file changed its principal", async () => {
    // One socket for every request, as a keep-alive client holds it: the server remembers the last header per connection.
    const agent = new nodeHttp.Agent({ keepAlive: true, maxSockets: 1 })
    const get = (route: string, token: string) =>
      new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
        const req = nodeHttp.get(`${server.url}${route}`, { agent, headers: bearer(token) }, (res) => {
          res.resume()
          res.on("end", () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }))
        })
        req.on("error", reject)
      })
    try {
      const token = tokenOf("ops")
      expect(await get("/api/members", token)).toEqual({ status: 200, reused: false })
      expect(await get("/api/members", token)).toEqual({ status: 200, reused: true })
      // Another principal's header on the same connection is that principal's (narrowed may read books only).
      expect(await get("/api/members", tokenOf("narrowed"))).toEqual({ status: 403, reused: true })
      expect(await get("/api/members", token)).toEqual({ status: 200, reused: true })
      const file = JSON.parse(fs.readFileSync(server.file, "utf8"))
      file.principals.find((p: { name: string }) => p.name === "ops").grants = ["books:read"]
      fs.writeFileSync(server.file, JSON.stringify(file))
      await server.reload()
      expect(await get("/api/members", token)).toEqual({ status: 403, reused: true })
      file.principals = file.principals.filter((p: { name: string }) => p.name !== "ops")
      fs.writeFileSync(server.file, JSON.stringify(file))
      await server.reload()
      expect(await get("/api/books", token)).toEqual({ status: 401, reused: true })
    } finally {
      agent.destroy()
      fs.writeFileSync(server.file, JSON.stringify({ principals: JSON.parse(accessFileText(AFTER)).principals }))
      await server.reload()
    }
  })

  it("a bad file is refused: the principals in force stay, and their streams too", async () => {
    const stream = await openSse(`${server.url}/api/_events?from=1`, { headers: bearer(tokenOf("ops")) })
    expect(stream.status).toBe(200)
    fs.writeFileSync(server.file, JSON.stringify({ principals: [{ name: "ops", token: tokenOf("ops"), grants: ["books:burn"] }] }))
    await server.reload()
    fs.writeFileSync(server.file, "{ not json")
    await server.reload()
    expect((await rest(server.url, "GET", "/api/members", tokenOf("narrowed"))).status).toBe(403)
    expect((await rest(server.url, "GET", "/api/books", tokenOf("narrowed"))).status).toBe(200)
    expect((await rest(server.url, "GET", "/api/_rows", tokenOf("ops"))).status).toBe(200)
    expect(stream.ended()).toBe(false)
    stream.close()
  })
})

describe("wo run --access", () => {
  it("serves the file's principals, re-reads it on SIGHUP and goes on serving; a bad file at start stops it with the problem", async () => {
    const dir = tempDir("wo-access-run-")
    const file = path.join(dir, "access.json")
    fs.writeFileSync(file, accessFileText([{ name: "ops", grants: ["admin"] }]))
    const wo = await spawnWo(["run", path.join(ROOT, "examples/library"), "--data", path.join(dir, "data"), "--listen", "127.0.0.1:0", "--access", file])
    try {
      expect((await rest(wo.loopbackUrl, "GET", "/api/books", tokenOf("ops"))).status).toBe(200)
      expect((await rest(wo.loopbackUrl, "GET", "/api/books", undefined)).status).toBe(401)
      // The file unchanged (so no watch fires): only the signal makes it re-read.
      process.kill(wo.pid, "SIGHUP")
      expect(await waitFor(() => /access file .* reloaded: 1 principals/.test(wo.output()), 10_000)).toBe(true)
      expect(wo.exitReport()).toBeUndefined()
      expect((await rest(wo.loopbackUrl, "GET", "/api/books", tokenOf("ops"))).status).toBe(200)
    } finally {
      await wo.stop()
    }
    fs.writeFileSync(file, accessFileText([{ name: "ops", grants: ["books:burn"] }]))
    const bad = await runWoToEnd(["run", path.join(ROOT, "examples/library"), "--data", path.join(dir, "data"), "--listen", "127.0.0.1:0", "--access", file], { timeoutMs: 60_000 })
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(/principal ops: grant "books:burn": books has no operation named burn/)
  })
})
