/**
 * Idle connections must not lock out new clients: a real `wo run` under `ulimit -n 1024`, 1,100 connections that
 * each send a header byte a second (a slowloris), and another client served all along. Past a cap the server
 * closes the new connection and says so in a warning naming the address and the cap, at most once per address per
 * interval; at the total cap it closes the connection idle longest to make room.
 */
import * as nodeHttp from "node:http"
import * as net from "node:net"
import * as path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { fdLimit } from "../../src/support/fd-limit.ts"
import { ROOT, spawnWo, type Spawned } from "../../testkit/spawn.ts"
import { tempDir } from "../../testkit/server.ts"
import { waitFor } from "../../testkit/wait.ts"

const FD_LIMIT = 1024
const SLOW_CONNECTIONS = 1100
const PRICING = path.join(ROOT, "examples/pricing")
/** This process opens the slow connections itself: it needs the files for them. */
const enoughFiles = fdLimit().limit >= SLOW_CONNECTIONS + 400

interface Herd {
  /** Connections the server closed (refused or evicted). */
  readonly closed: () => number
  readonly open: () => number
  readonly destroy: () => void
}

/**
 * Opens `count` connections to `port`, from `sources` in turn, a hundred at a time: each sends one byte of a header
 * that never ends, then one more every second. Resolves once each connected or failed (bounded: 60 s).
 */
const slowloris = async (port: number, count: number, sources: ReadonlyArray<string>): Promise<Herd> => {
  const sockets: Array<net.Socket> = []
  let closed = 0
  for (let i = 0; i < count; i += 100) {
    const batch = Array.from({ length: Math.min(100, count - i) }, (_, j) =>
      new Promise<void>((resolve) => {
        const socket = net.connect({ host: "127.0.0.1", port, localAddress: sources[(i + j) % sources.length] })
        sockets.push(socket)
        socket.once("connect", () => {
          socket.write("GET /livez HTTP/1.1\r\nX-Slow: ")
          resolve()
        })
        socket.on("error", () => resolve())
        socket.once("close", () => {
          closed++
          resolve()
        })
        socket.on("data", () => {})
      }))
    await Promise.race([Promise.all(batch), new Promise((r) => setTimeout(r, 60_000))])
  }
  const drip = setInterval(() => {
    for (const s of sockets) if (!s.destroyed && s.writable) s.write("a")
  }, 1000)
  return {
    closed: () => closed,
    open: () => sockets.length - closed,
    destroy: () => {
      clearInterval(drip)
      for (const s of sockets) s.destroy()
    }
  }
}

/** GET `path` from `localAddress`: the status, or the error's code. */
const get = (port: number, target: string, localAddress: string) =>
  new Promise<number | string>((resolve) => {
    const req = nodeHttp.get({ host: "127.0.0.1", port, path: target, localAddress, agent: false, timeout: 20_000 }, (res) => {
      res.resume()
      res.once("end", () => resolve(res.statusCode ?? 0))
    })
    req.once("timeout", () => req.destroy(new Error("timeout")))
    req.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message))
  })

const CAPS_LINE = /connections: at most (\d+) per client address \(WO_MAX_CONNECTIONS_PER_CLIENT\), (\d+) in all \(WO_MAX_CONNECTIONS\); open-file limit (\d+)/

let server: Spawned | undefined
let herd: Herd | undefined
afterEach(async () => {
  herd?.destroy()
  herd = undefined
  await server?.stop()
  server = undefined
})

/** `wo run` of the pricing sample under `ulimit -n 1024`, its caps as its start-up line says them. */
const start = async () => {
  // The request timeout is longer than the test: the caps alone must hold the slow connections back.
  server = await spawnWo(["run", PRICING, "--data", tempDir("wo-conns-"), "--listen", "127.0.0.1:0"], {
    fdLimit: FD_LIMIT,
    env: { WO_REQUEST_TIMEOUT_MS: "300000" }
  })
  // The start-up lines say the caps and the open-file limit, just after the line that says where it serves.
  expect(await waitFor(() => CAPS_LINE.test(server!.stdout()), 20_000), server.stdout()).toBe(true)
  const caps = CAPS_LINE.exec(server.stdout())
  const [perClient, total, files] = caps!.slice(1).map(Number)
  return { port: Number(new URL(server.loopbackUrl).port), perClient, total, files }
}

const warnings = (pattern: RegExp) => server!.stdout().split("\n").filter((l) => / WARN /.test(l) && pattern.test(l))

describe.skipIf(!enoughFiles)(`${SLOW_CONNECTIONS} slow connections under ulimit -n ${FD_LIMIT}`, () => {
  it("from one address: past the per-client cap they are closed and logged, and another client is served", async () => {
    const { port, perClient, total, files } = await start()
    expect(files).toBe(FD_LIMIT)
    expect(total).toBeLessThan(FD_LIMIT)
    expect(perClient).toBeLessThan(total)
    const started = Date.now()
    herd = await slowloris(port, SLOW_CONNECTIONS, ["127.0.0.1"])
    // The server holds exactly the per-client cap of them, and closed the rest.
    expect(await waitFor(() => herd!.closed() === SLOW_CONNECTIONS - perClient, 20_000), `closed ${herd.closed()}`).toBe(true)
    expect(herd.open()).toBe(perClient)

    const answers = []
    for (let i = 0; i < 10; i++) answers.push(await get(port, "/livez", "127.0.0.2"))
    expect(answers).toEqual(Array(10).fill(200))
    expect(await get(port, "/api/products", "127.0.0.2")).toBe(200)

    // Logged, naming the address and the cap, and rate-limited: one line at once, then at most one per 10 s.
    const lines = warnings(/refused .*connections? from 127\.0\.0\.1\b.*WO_MAX_CONNECTIONS_PER_CLIENT=/)
    expect(lines.length, server!.stdout()).toBeGreaterThanOrEqual(1)
    expect(lines[0]).toContain(`WO_MAX_CONNECTIONS_PER_CLIENT=${perClient}`)
    expect(lines.length).toBeLessThanOrEqual(2 + Math.floor((Date.now() - started) / 10_000))
    expect(herd.closed()).toBeGreaterThan(100 * lines.length)
  }, 180_000)

  it("from many addresses: at the total cap the connections idle longest are closed first, and another client is served", async () => {
    const { port, total } = await start()
    const started = Date.now()
    const sources = Array.from({ length: 11 }, (_, i) => `127.0.0.${10 + i}`)
    herd = await slowloris(port, SLOW_CONNECTIONS, sources)
    // 100 from each address, under the per-client cap; past the total, each new one replaced an idle one.
    expect(await waitFor(() => herd!.open() === total, 20_000), `open ${herd.open()}`).toBe(true)

    const answers = []
    for (let i = 0; i < 10; i++) answers.push(await get(port, "/livez", "127.0.0.2"))
    expect(answers).toEqual(Array(10).fill(200))

    const lines = warnings(/closed the connection idle longest to make room for one from 127\.0\.0\.\d+: .*WO_MAX_CONNECTIONS=/)
    expect(lines.length, server!.stdout()).toBeGreaterThanOrEqual(1)
    expect(lines.length).toBeLessThanOrEqual(1 + Math.floor((Date.now() - started) / 10_000))
    expect(lines[0]).toContain(`WO_MAX_CONNECTIONS=${total}`)
  }, 180_000)
})
