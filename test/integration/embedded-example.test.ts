/**
 * examples/embedded/main.ts run as CI runs it, a child process: the ticket desk embedded in an Effect program under
 * `NodeRuntime.runMain`, with one route of its own on the server's port. Its log lines print once each, and its
 * route sits behind the server's edge (Host, Origin, the credential) and reads the caller's principal.
 */
import { afterEach, describe, expect, it } from "vitest"
import * as path from "node:path"
import { ROOT, spawnNode, WO_READY, type Spawned } from "../../testkit/spawn.ts"
import { http, rawRequest, tempDir } from "../../testkit/server.ts"

const MAIN = path.join(ROOT, "examples/embedded/main.ts")
const running: Array<Spawned> = []

const start = async (env: Record<string, string> = {}) => {
  const child = await spawnNode(MAIN, [tempDir("wo-desk-"), "127.0.0.1:0"], {
    importTsx: true,
    nodeArgs: ["--conditions=writeonce-source"],
    ready: WO_READY,
    readyTimeoutMs: 60_000,
    env: { WO_LOG_LEVEL: "Info", ...env }
  })
  running.push(child)
  return child
}

/** The program logs its first lines once the server listens: wait for the last of them. */
const waitForOutput = async (child: Spawned, text: string) => {
  for (let i = 0; i < 600 && !child.output().includes(text); i++) await new Promise((r) => setTimeout(r, 50))
  expect(child.output()).toContain(text)
}

const occurrences = (text: string, part: string) => text.split(part).length - 1

afterEach(async () => {
  for (const child of running.splice(0)) await child.stop()
})

describe("the embedded example", () => {
  it("runs under NodeRuntime.runMain, logs each line once, and serves its route beside /api", async () => {
    const desk = await start()
    await waitForOutput(desk, "tickets: 0 open, 1 assigned, 0 closed")
    const out = desk.output()
    // One logger: without writeonce's own line logger replacing runMain's pretty one, every line came twice.
    expect(occurrences(out, `serving app "ticket-desk"`)).toBe(1)
    expect(occurrences(out, "escalate refused: missing_reference")).toBe(1)
    expect(out).not.toMatch(/level=INFO|fiber=#/)

    const escalated = await http(`${desk.loopbackUrl}/desk/escalations`, { method: "POST", body: { ticket: "1", agent: "2" } })
    expect(escalated.status).toBe(200)
    expect(escalated.json).toMatchObject({ ticket: { id: "1", priority: "urgent", assignee: "2" }, escalatedBy: null })
    // The same row over the app's REST API: one data path.
    expect((await http(`${desk.loopbackUrl}/api/tickets/1`)).json).toMatchObject({ version: 3, priority: "urgent" })
    const refused = await http(`${desk.loopbackUrl}/desk/escalations`, { method: "POST", body: { ticket: "1", agent: "99" } })
    expect(refused.status).toBe(422)
    expect(refused.json).toMatchObject({ code: "missing_reference" })
    expect((await http(`${desk.loopbackUrl}/desk/nowhere`)).status).toBe(404)
    // Behind the same edge: a foreign Origin is refused before the route runs.
    const foreign = await rawRequest(`${desk.loopbackUrl}/desk/escalations`, {
      method: "POST",
      body: JSON.stringify({ ticket: "1", agent: "2" }),
      headers: { "content-type": "application/json", origin: "https://evil.example" }
    })
    expect(foreign.status).toBe(403)
    expect(await desk.stop()).toBe(0)
  })

  it("with a credential required, the route takes only authenticated callers and reads the principal", async () => {
    const desk = await start({ WO_AUTH_TOKEN: "desk-token-for-tests" })
    await waitForOutput(desk, "tickets: 0 open, 1 assigned, 0 closed")
    const anonymous = await http(`${desk.loopbackUrl}/desk/escalations`, { method: "POST", body: { ticket: "1", agent: "2" } })
    expect(anonymous.status).toBe(401)
    const authorization = { authorization: "Bearer desk-token-for-tests" }
    const escalated = await http(`${desk.loopbackUrl}/desk/escalations`, { method: "POST", body: { ticket: "1", agent: "2" }, headers: authorization })
    expect(escalated.status).toBe(200)
    expect(escalated.json).toMatchObject({ escalatedBy: "auth-token" })
    // The write records the principal the route acted for.
    const history = await http(`${desk.loopbackUrl}/api/tickets/1/history`, { headers: authorization })
    expect(history.text).toContain(`"actor":{"principal":"auth-token","client":"in-process"}`)
  })
})
