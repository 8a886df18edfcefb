/**
 * The thin node:http edge. It reads a request into a plain `EdgeRequest` (enforcing the body limit), runs the
 * Effect handler on the app's runtime, and writes the buffered or streamed `EdgeResponse`. It owns the
 * byte-level concerns: Content-Length, keep-alive, body limits, SSE backpressure, and client disconnects.
 */
import { Data, Effect, Fiber, Runtime, RuntimeFlags } from "effect"
import * as http from "node:http"
import type * as net from "node:net"
import { makeStreamHub, type StreamHub } from "../streams/stream-hub.ts"
import { capConnections, type CappedConnections, type ConnectionTable } from "./connection-caps.ts"
import { makeDispatch, type DirectRoute, type EdgeHandler, type InFlight } from "./dispatch.ts"
import { readRequests } from "./read-request.ts"

export type { DirectRespond, DirectRoute, EdgeHandler } from "./dispatch.ts"

/** The port could not be bound (in use, no permission). */
export class ListenError extends Data.TaggedError("ListenError")<{ readonly message: string }> {}

export interface EdgeOptions {
  readonly host: string
  readonly port: number
  readonly bodyLimit: number
  readonly requestTimeoutMs: number
  /** Runs when shutdown begins, after the server stops accepting: ends long-lived streams. */
  readonly onShutdown?: Effect.Effect<void>
  /** How long shutdown waits for in-flight requests before closing their connections. */
  readonly shutdownGraceMs?: number
  /** Frames a push stream may hold unwritten before it is closed (WO_STREAM_BUFFER; one more is in flight). */
  readonly streamBuffer?: number
  /** Bytes all push streams together may hold for slow readers (WO_STREAM_MEMORY). */
  readonly streamMemory?: number
  /** Tried before the handler: the requests it takes run without a fiber (see DirectRoute). */
  readonly direct?: DirectRoute
  /**
   * Most open connections per client address and in all (WO_MAX_CONNECTIONS_PER_CLIENT, WO_MAX_CONNECTIONS; see
   * connection-caps.ts). Unset (an edge started by a test): no caps.
   */
  readonly maxConnectionsPerClient?: number
  readonly maxConnections?: number
}

export interface RunningEdge {
  readonly url: string
  readonly address: net.AddressInfo
  readonly server: http.Server
  /** The push streams' machinery: their memory budget and heartbeat (for stats and tests). */
  readonly streams: StreamHub
  /** The open connections as the caps count them, when capped (for stats and tests). */
  readonly connections?: ConnectionTable<net.Socket>
}

/**
 * The server, before it listens. A client must send its whole request within requestTimeoutMs (slowloris);
 * responses, streams included, are not limited. Node checks the deadline every connectionsCheckingInterval.
 */
const makeServer = (options: EdgeOptions) =>
  http.createServer({
    requestTimeout: options.requestTimeoutMs,
    headersTimeout: Math.min(options.requestTimeoutMs, 60_000),
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, options.requestTimeoutMs / 4)),
    keepAliveTimeout: 5_000
  })

/** Listens on `host:port`; a port that cannot be bound fails with ListenError. */
const listen = (server: http.Server, options: EdgeOptions) =>
  Effect.async<void, ListenError>((resume) => {
    server.once("error", (e) =>
      resume(Effect.fail(new ListenError({ message: `cannot listen on ${options.host}:${options.port}: ${e.message}` }))))
    server.listen(options.port, options.host, () => resume(Effect.void))
  }).pipe(Effect.map(() => server.address() as net.AddressInfo))

/**
 * Shutdown: stop accepting, end the long-lived streams (`onShutdown`), give the requests in flight
 * `shutdownGraceMs` to finish, then cancel or interrupt what is left and close every connection.
 */
const shutdown = (server: http.Server, options: EdgeOptions, inFlight: InFlight, connections: CappedConnections | undefined) =>
  Effect.gen(function* () {
    server.close()
    server.closeIdleConnections()
    if (options.onShutdown) yield* options.onShutdown
    const deadline = Date.now() + (options.shutdownGraceMs ?? 10_000)
    while (inFlight.fibers.size + inFlight.direct.size > 0 && Date.now() < deadline) yield* Effect.sleep("20 millis")
    for (const cancel of inFlight.direct) cancel()
    for (const fiber of inFlight.fibers) yield* Fiber.interrupt(fiber)
    server.closeAllConnections()
    connections?.close()
  })

/**
 * Starts the edge; the server stops accepting when the scope closes, in-flight requests get
 * `shutdownGraceMs` to finish, then every connection (streams included) is closed.
 */
export const startEdge = <R>(handler: EdgeHandler<R>, options: EdgeOptions) =>
  Effect.gen(function* () {
    // Without Effect's fiber metrics (counters and a lifetime histogram updated as each request's fiber starts
    // and ends): nothing reads them, and they were a visible share of a durable write's CPU (bench:profile).
    const runtime = Runtime.disableRuntimeFlag(yield* Effect.runtime<R>(), RuntimeFlags.RuntimeMetrics)
    const runFork = Runtime.runFork(runtime)
    const hub = makeStreamHub(options.streamMemory)
    // One frame in the writer's hands plus the buffer: the bound the tests pin (limits.test.ts).
    const pushLimit = (options.streamBuffer ?? 1024) + 1
    const inFlight: InFlight = { fibers: new Set<Fiber.RuntimeFiber<void, never>>(), direct: new Set<() => void>() }
    const dispatch = makeDispatch(handler, options.direct, runFork, hub, pushLimit, inFlight)

    const server = makeServer(options)
    const connections = options.maxConnections === undefined && options.maxConnectionsPerClient === undefined
      ? undefined
      : capConnections(server, {
        total: options.maxConnections ?? Number.MAX_SAFE_INTEGER,
        perClient: options.maxConnectionsPerClient ?? Number.MAX_SAFE_INTEGER
      }, (line) => runFork(Effect.logWarning(line)))
    server.on("request", readRequests(options.bodyLimit, connections, dispatch))

    const address = yield* listen(server, options)
    const hostPart = address.family === "IPv6" ? `[${address.address}]` : address.address
    yield* Effect.addFinalizer(() => shutdown(server, options, inFlight, connections))

    return { url: `http://${hostPart}:${address.port}`, address, server, streams: hub, connections: connections?.table } satisfies RunningEdge
  })
