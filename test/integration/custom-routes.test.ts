/**
 * The embedding program's own routes (writeOnceLayer's `routes`), served in-process on port 0 with an access file:
 * behind the server's edge (Host, the credential, the body limit), at the paths the server leaves, and reading
 * the caller's principal. Before the option, such paths answered 404 and a route needed a second port.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as path from "node:path"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, ManagedRuntime } from "effect"
import { Caller, HttpServer, loadSettings, writeOnceLayer, type WriteOnceApi } from "../../src/index.ts"
import desk from "../../examples/embedded/app.ts"
import { http, rawRequest, tempDir } from "../../testkit/server.ts"
import { accessFileText, bearer, tokenOf } from "../../testkit/access-server.ts"

const routes = (wo: WriteOnceApi<typeof desk>) =>
  HttpRouter.empty.pipe(
    HttpRouter.get("/whoami", Effect.map(Caller, ({ principal }) => HttpServerResponse.unsafeJson({ name: principal?.name ?? null }))),
    HttpRouter.post(
      "/agents",
      Effect.gen(function* () {
        const { name } = (yield* HttpServerRequest.HttpServerRequest.pipe(Effect.flatMap((r) => r.json))) as { name: string }
        return HttpServerResponse.unsafeJson(yield* wo.create("agents", { name }), { status: 201 })
      })
    ),
    // The console's page is the server's: a route of the program's at "/" never shadows it.
    HttpRouter.get("/", HttpServerResponse.text("the program's"))
  )

let url: string
let runtime: ManagedRuntime.ManagedRuntime<HttpServer, unknown>

beforeAll(async () => {
  const dir = tempDir("wo-routes-")
  const accessFile = path.join(dir, "access.json")
  fs.writeFileSync(accessFile, accessFileText([{ name: "nobody", grants: [] }, { name: "desk", grants: ["tickets:*", "agents:*"] }]))
  const settings = await Effect.runPromise(loadSettings({ dataDir: path.join(dir, "data") }, { host: "127.0.0.1", port: 0, accessFile, bodyLimit: 1024 }))
  runtime = ManagedRuntime.make(writeOnceLayer(desk, settings, { routes, logger: false, signals: false }))
  url = (await runtime.runPromise(HttpServer)).url
})
afterAll(() => runtime.dispose())

describe("the program's own routes", () => {
  it("take any authenticated principal and read who it is; none is 401", async () => {
    expect((await http(`${url}/whoami`)).status).toBe(401)
    expect((await http(`${url}/whoami`, { headers: bearer("not-a-token-of-this-server") })).status).toBe(401)
    // A principal with no grant at all reaches the route; the route reads its name.
    const nobody = await http(`${url}/whoami`, { headers: bearer(tokenOf("nobody")) })
    expect(nobody.status).toBe(200)
    expect(nobody.json).toEqual({ name: "nobody" })
    expect((await http(`${url}/nowhere`, { headers: bearer(tokenOf("nobody")) })).status).toBe(404)
  })

  it("use the typed API: a write there is read back over REST", async () => {
    const created = await http(`${url}/agents`, { method: "POST", body: { name: "Ann" }, headers: bearer(tokenOf("desk")) })
    expect(created.status).toBe(201)
    const row = await http(`${url}/api/agents/${created.json.id}`, { headers: bearer(tokenOf("desk")) })
    expect(row.json).toMatchObject({ name: "Ann", version: 1 })
    // A chunked body reaches the route whole, as one sent with its length does.
    const chunked = await rawRequest(`${url}/agents`, {
      method: "POST",
      body: JSON.stringify({ name: "Bob" }),
      headers: { "content-type": "application/json", "transfer-encoding": "chunked", ...bearer(tokenOf("desk")) }
    })
    expect(chunked.status).toBe(201)
    expect(chunked.json).toMatchObject({ name: "Bob" })
  })

  it("sit behind the edge: the Host check and the body limit come first", async () => {
    const foreignHost = await rawRequest(`${url}/whoami`, { headers: { host: "evil.example", ...bearer(tokenOf("desk")) } })
    expect(foreignHost.status).toBe(403)
    const big = await http(`${url}/agents`, { method: "POST", body: { name: "x".repeat(4096) }, headers: bearer(tokenOf("desk")) })
    expect(big.status).toBe(413)
  })

  it("leave the server's own paths alone: the console's page, the API and /mcp", async () => {
    const page = await http(`${url}/`)
    expect(page.status).toBe(200)
    expect(page.text).not.toBe("the program's")
    expect((await http(`${url}/api/tickets`)).status).toBe(401)
    expect((await http(`${url}/api/tickets`, { headers: bearer(tokenOf("nobody")) })).status).toBe(403)
  })
})
