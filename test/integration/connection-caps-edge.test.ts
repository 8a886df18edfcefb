/**
 * The connection caps on the real edge and real sockets: a connection is counted from its `connection` event, is
 * busy from its request head until its answer ends, and at the total cap the one idle longest (a connection that
 * never sent a whole request before one that was answered) is closed to make room; one with a request in flight is
 * never closed for room, and past either cap the new connection is closed at once, with a warning.
 */
import { Effect, Exit, Logger, Scope } from "effect"
import * as net from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { startEdge, type RunningEdge } from "../../src/http/edge/edge.ts"
import { json, type EdgeResponse } from "../../src/http/edge/edge-types.ts"
import { waitFor } from "../../testkit/wait.ts"

interface Client {
  readonly socket: net.Socket
  readonly closed: () => boolean
  /** Everything the server sent. */
  readonly received: () => string
}

const clients: Array<Client> = []
let scope: Scope.CloseableScope | undefined
afterEach(async () => {
  for (const c of clients.splice(0)) c.socket.destroy()
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
  scope = undefined
})

/** An edge capped at `perClient` and `total`, answering /hold only once `release` is called; its warnings. */
const start = async (perClient: number, total: number) => {
  const warnings: Array<string> = []
  const held: Array<() => void> = []
  const handler = (request: { path: string }): Effect.Effect<EdgeResponse> =>
    request.path === "/hold" ? Effect.async<EdgeResponse>((resume) => void held.push(() => resume(Effect.succeed(json(200, {}))))) : Effect.succeed(json(200, { ok: true }))
  const capture = Logger.replace(Logger.defaultLogger, Logger.make(({ message }) => void warnings.push(String(Array.isArray(message) ? message.join(" ") : message))))
  scope = Effect.runSync(Scope.make())
  const edge: RunningEdge = await Effect.runPromise(
    startEdge(handler, { host: "127.0.0.1", port: 0, bodyLimit: 1024, requestTimeoutMs: 60_000, shutdownGraceMs: 100, maxConnectionsPerClient: perClient, maxConnections: total }).pipe(
      Scope.extend(scope),
      Effect.provide(capture)
    )
  )
  return { edge, port: edge.address.port, table: edge.connections!, warnings, release: () => held.splice(0).forEach((r) => r()) }
}

/** Connects from `localAddress` and sends `bytes`; resolves once connected. */
const connect = (port: number, localAddress: string, bytes: string) =>
  new Promise<Client>((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port, localAddress })
    let closed = false
    let received = ""
    socket.on("data", (d) => (received += d.toString()))
    socket.on("error", () => {})
    socket.once("close", () => (closed = true))
    socket.once("connect", () => {
      socket.write(bytes)
      const client = { socket, closed: () => closed, received: () => received }
      clients.push(client)
      resolve(client)
    })
    socket.once("error", reject)
  })

const SLOW = "GET /x HTTP/1.1\r\nX-Slow: a" // a head that never ends
const WHOLE = "GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
const HOLD = "GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" // in flight until released

describe("connection caps on the edge", () => {
  it("closes the connection idle longest first, a slow head before an answered one, and never a busy one", async () => {
    const { port, table, warnings, release } = await start(2, 3)
    const slow = await connect(port, "127.0.0.2", SLOW)
    expect(await waitFor(() => table.size === 1)).toBe(true)
    const kept = await connect(port, "127.0.0.3", WHOLE)
    expect(await waitFor(() => kept.received().includes("200 OK") && table.idleCount === 2)).toBe(true)
    const busy = await connect(port, "127.0.0.4", HOLD)
    expect(await waitFor(() => table.size === 3 && table.idleCount === 2)).toBe(true)

    // At the cap: the slow head goes first (idle since it opened), then the answered one.
    const n1 = await connect(port, "127.0.0.5", SLOW)
    expect(await waitFor(() => slow.closed())).toBe(true)
    expect([kept.closed(), busy.closed(), n1.closed()]).toEqual([false, false, false])
    const n2 = await connect(port, "127.0.0.5", SLOW)
    expect(await waitFor(() => kept.closed())).toBe(true)
    expect([busy.closed(), n1.closed(), n2.closed()]).toEqual([false, false, false])
    expect(warnings.filter((w) => /closed the connection idle longest to make room for one from 127\.0\.0\.5: .*WO_MAX_CONNECTIONS=3/.test(w))).toHaveLength(1)

    // A third from 127.0.0.5 is past its address's cap: closed at once, and nothing else is.
    const n3 = await connect(port, "127.0.0.5", SLOW)
    expect(await waitFor(() => n3.closed())).toBe(true)
    expect([busy.closed(), n1.closed(), n2.closed()]).toEqual([false, false, false])
    expect(warnings.filter((w) => /refused a connection from 127\.0\.0\.5: .*WO_MAX_CONNECTIONS_PER_CLIENT=2/.test(w))).toHaveLength(1)
    expect([table.size, table.countOf("127.0.0.5")]).toEqual([3, 2])

    // The busy one is answered in full, and its connection then counts as idle.
    release()
    expect(await waitFor(() => busy.received().includes("200 OK") && table.idleCount === 3)).toBe(true)
  })

  it("closes a new connection at once when every open one has a request in flight, and counts it as gone", async () => {
    const { port, table, warnings, release } = await start(10, 2)
    const a = await connect(port, "127.0.0.2", HOLD)
    const b = await connect(port, "127.0.0.3", HOLD)
    expect(await waitFor(() => table.size === 2 && table.idleCount === 0)).toBe(true)
    const refused = await connect(port, "127.0.0.4", WHOLE)
    expect(await waitFor(() => refused.closed())).toBe(true)
    expect(refused.received()).toBe("")
    const again = await connect(port, "127.0.0.4", WHOLE)
    expect(await waitFor(() => again.closed())).toBe(true)
    expect([a.closed(), b.closed(), table.size, table.countOf("127.0.0.4")]).toEqual([false, false, 2, 0])
    // One line for the address, however many it was refused (the second is counted for the next line).
    expect(warnings.filter((w) => /refused .*from 127\.0\.0\.4: .*WO_MAX_CONNECTIONS=2/.test(w))).toHaveLength(1)

    // A client leaving frees its slot.
    release()
    a.socket.destroy()
    expect(await waitFor(() => table.size === 1)).toBe(true)
    const served = await connect(port, "127.0.0.4", WHOLE)
    expect(await waitFor(() => served.received().includes("200 OK"))).toBe(true)
  })
})
