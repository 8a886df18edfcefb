/**
 * `/livez`, `/readyz`, `/healthz`: open without the token and without a known Host, saying nothing
 * about the data; `/readyz` 503 after the writer died, while the disk is full (a real small tmpfs, as in
 * disk-full.test.ts), and during recovery (the listener opens only once recovery is done: a node that is
 * recovering refuses connections, and its first answer is ready with every row served); 200 otherwise.
 */
import { Effect, Layer } from "effect"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { writeProducts } from "../../bench/lib/row-writer.ts"
import { environment, WO_BIN } from "../../testkit/spawn.ts"
import { LogFaults } from "../../testkit/log-faults.ts"
import { smallTmpfs } from "../../testkit/small-tmpfs.ts"
import { apps, freePort, http, rawRequest, ROOT, spawnServer, startServer, tempDir } from "../../testkit/server.ts"

const pricing = path.join(ROOT, "examples/pricing")
const TOKEN = "ready-test-token"
const product = { name: "p", price: 1, currency: "USD" }

/** Polls `url` until it answers `status` (at most `polls` times, 100 ms apart); returns the last answer. */
const pollFor = async (url: string, status: number, polls = 100) => {
  let res = await http(url)
  for (let i = 0; i < polls && res.status !== status; i++) {
    await new Promise((r) => setTimeout(r, 100))
    res = await http(url)
  }
  return res
}

describe("health endpoints", () => {
  it("answer without the token and for any Host, with nothing but their status; /metrics and /api need the token", async () => {
    const server = await startServer(apps.pricing, { authToken: TOKEN })
    try {
      expect((await http(`${server.url}/api/products`, { method: "POST", body: product, headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(201)
      for (const [p, body] of [["/livez", { status: "ok" }], ["/healthz", { status: "ok" }], ["/readyz", { status: "ready" }]] as const) {
        const res = await http(`${server.url}${p}`)
        expect(res.status, p).toBe(200)
        expect(res.json, p).toEqual(body)
        // A load balancer probes by address: a Host this server does not know still gets the probe's answer.
        const foreign = await rawRequest(`${server.url}${p}`, { headers: { host: "10.1.2.3:8080" } })
        expect(foreign.status, p).toBe(200)
        expect((await rawRequest(`${server.url}${p}`, { method: "HEAD" })).status, p).toBe(200)
      }
      expect((await rawRequest(`${server.url}/api/products/1`, { headers: { host: "10.1.2.3:8080", authorization: `Bearer ${TOKEN}` } })).status).toBe(403)
      expect((await http(`${server.url}/api/products/1`)).status).toBe(401)
      expect((await http(`${server.url}/metrics`)).status).toBe(401)
      expect((await http(`${server.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200)
    } finally {
      await server.close()
    }
  })

  it("/readyz is 503 once the writer died; /livez still 200", async () => {
    let die = false
    const faults = Layer.succeed(LogFaults, { beforeWrite: () => (die ? Effect.die(new Error("injected writer bug")) : Effect.void) })
    const server = await startServer(apps.pricing, {}, faults)
    try {
      expect((await http(`${server.url}/api/products`, { method: "POST", body: product })).status).toBe(201)
      expect((await http(`${server.url}/readyz`)).status).toBe(200)
      die = true
      expect((await http(`${server.url}/api/products`, { method: "POST", body: product })).status).toBe(503)
      const ready = await http(`${server.url}/readyz`)
      expect(ready.status).toBe(503)
      expect(ready.json).toEqual({ status: "not ready", reason: expect.stringMatching(/writer stopped/) })
      expect((await http(`${server.url}/livez`)).status).toBe(200)
    } finally {
      await server.close()
    }
  })
})

/** Spawns `wo run` and resolves once its output matches `pattern` (before it serves: no URL to wait for). */
const spawnUntil = (args: ReadonlyArray<string>, pattern: RegExp) =>
  new Promise<{ readonly output: () => string; readonly kill: () => void }>((resolve, reject) => {
    const child = spawn(process.execPath, [WO_BIN, ...args], { env: environment(), stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    const handle = { output: () => output, kill: () => void child.kill("SIGKILL") }
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      if (pattern.test(output)) resolve(handle)
    }
    child.stdout.on("data", onData)
    child.stderr.on("data", onData)
    child.once("exit", (code) => reject(new Error(`wo exited (${code}) before ${pattern}: ${output}`)))
  })

describe("readiness during recovery", () => {
  it("a recovering node refuses connections, and first answers ready with every row served", async () => {
    const rows = 150_000
    const dataDir = tempDir("wo-ready-recovery-")
    await writeProducts(dataDir, rows, (i) => ({ name: `p${i}`, price: i, currency: "USD" }))
    const port = await freePort()
    const url = `http://127.0.0.1:${port}`
    // Start under way: the first start over rows written without a server checks every stored row against the
    // app's types (100,000 of them checked; the rest and the view's fold to go).
    const server = await spawnUntil(["run", pricing, "--data", dataDir, "--listen", `127.0.0.1:${port}`], /schema check: 100000 stored rows checked/)
    try {
      const during = await http(`${url}/readyz`).then((r) => r.status, (e: Error) => (e.cause as NodeJS.ErrnoException | undefined)?.code ?? e.message)
      expect(during).toBe("ECONNREFUSED")
      expect(server.output()).not.toMatch(/serving app/)
      let first = await http(`${url}/readyz`).then((r) => r.status, () => 0)
      for (let i = 0; i < 600 && first === 0; i++) {
        await new Promise((r) => setTimeout(r, 100))
        first = await http(`${url}/readyz`).then((r) => r.status, () => 0)
      }
      expect(first).toBe(200)
      expect(server.output()).toMatch(/serving app/)
      expect((await http(`${url}/api/products/${rows}`)).json).toMatchObject({ id: String(rows), price: rows })
    } finally {
      server.kill()
      fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }, 120_000)
})

const disk = smallTmpfs("readiness on a full disk")

describe.skipIf(!disk.mounted)("readiness on a full disk", () => {
  it("/readyz is 503 while the disk is full and 200 once space returns", async () => {
    const dataDir = path.join(disk.mountPoint, "data")
    fs.mkdirSync(dataDir)
    const server = await spawnServer(pricing, dataDir)
    try {
      expect((await http(`${server.url}/readyz`)).status).toBe(200)
      const big = (n: number) => ({ name: `${n}-${"x".repeat(30 * 1024)}`, price: n, currency: "USD" })
      let refused = 0
      for (let n = 1; n <= 200 && refused === 0; n++) {
        const res = await http(`${server.url}/api/products`, { method: "POST", body: big(n) })
        if (res.status !== 201) refused = res.status
      }
      expect(refused, "the 1.2 MB tmpfs never filled").toBe(503)
      const full = await http(`${server.url}/readyz`)
      expect(full.status).toBe(503)
      expect(full.json).toEqual({ status: "not ready", reason: expect.stringMatching(/not writable/) })
      // Still full after the probe interval: the probe write fails too.
      await new Promise((r) => setTimeout(r, 1100))
      expect((await http(`${server.url}/readyz`)).status).toBe(503)
      expect((await http(`${server.url}/livez`)).status).toBe(200)

      disk.remount("size=64m")
      const back = await pollFor(`${server.url}/readyz`, 200)
      expect(back.json).toEqual({ status: "ready" })
      expect((await http(`${server.url}/api/products`, { method: "POST", body: product })).status).toBe(201)
    } finally {
      await server.stop("SIGKILL")
    }
  }, 60_000)
})
