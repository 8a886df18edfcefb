/**
 * The thin node:http edge. It reads a request into a plain `EdgeRequest` (enforcing the body limit), runs the
 * Effect handler on the app's runtime, and writes the buffered or streamed `EdgeResponse`. It owns the
 * byte-level concerns: Content-Length, keep-alive, body limits, SSE backpressure, and client disconnects.
 */
import { Cause, Data, Effect, Exit, Fiber, Runtime, RuntimeFlags, Scope, Stream } from "effect"
import * as http from "node:http"
import type * as net from "node:net"
import { errorJson, type EdgeRequest, type EdgeResponse } from "./edge-types.ts"
import { edgeError } from "./edge-error.ts"
import type { CloseReason, PushSink } from "../streams/push-sink.ts"
import { sseFrame } from "../../support/sse.ts"
import { isJsonContentType } from "./json-body.ts"
import { JsonScan } from "./json-scan.ts"
import { longWork } from "../../support/turnstile.ts"
import { makeStreamHub, type StreamHub } from "../streams/stream-hub.ts"
import { capConnections, type ConnectionTable } from "./connection-caps.ts"

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

export type EdgeHandler<R> = (request: EdgeRequest) => Effect.Effect<EdgeResponse, never, R>

/**
 * Requests answered without a fiber (the REST row writes: rest.ts): `respond` is called once, later or at once, and
 * the result cancels the work if the client leaves first. Undefined when the request is not one: the handler
 * takes it. Only buffered answers; a defect is answered as a failed fiber is.
 */
export type DirectRoute = (request: EdgeRequest, respond: DirectRespond) => (() => void) | undefined

export interface DirectRespond {
  readonly answer: (response: EdgeResponse) => void
  /** The work died (a bug of ours): logged and answered 500, as a failed request's fiber is. */
  readonly failed: (cause: Cause.Cause<unknown>) => void
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

type Buffered = Extract<EdgeResponse, { _tag: "Buffered" }>

/** The query of every request without one: shared, so read-only (no route changes a request's query). */
const NO_QUERY = new URLSearchParams()

const PLAIN_PATH = /^\/(?!\/)[A-Za-z0-9_\-/]*$/

/**
 * The request target as a URL, or undefined: node:http lets through targets that URL cannot parse
 * (`GET http://[::1/x`), and a throw in a request listener would end the process.
 */
const parseTarget = (target: string | undefined) => {
  // The usual target (a plain path: no query, dot segment, escape or backslash) is its own pathname.
  if (target !== undefined && PLAIN_PATH.test(target)) return { pathname: target, search: "", searchParams: NO_QUERY }
  try {
    return new URL(target ?? "/", "http://edge")
  } catch {
    return undefined
  }
}

const badTarget = errorJson(400, "BadRequest", "the request target is not a valid URL", {}, { connection: "close" }) as Buffered

const tooLarge = (target: string | undefined, limit: number) =>
  edgeError(parseTarget(target)?.pathname, 413, "PayloadTooLarge", `request body exceeds ${limit} bytes`, { connection: "close" }) as Buffered

/**
 * The head in one `writeHead` (the same lines, in the same order, as a `setHeader` each: cheaper per answer). A
 * response that carries its Content-Length already (a durable write's: rest.ts) is written as it is, not copied.
 */
const writeBuffered = (res: http.ServerResponse, response: Buffered, onEnd?: () => void) => {
  const body = response.body ?? ""
  const headers = response.headers["content-length"] !== undefined
    ? response.headers
    : { ...response.headers, "content-length": Buffer.byteLength(body) }
  res.writeHead(response.status, headers)
  res.end(body, onEnd)
}

const INTERNAL: Buffered = { _tag: "Buffered", status: 500, headers: { "content-type": "application/json" }, body: JSON.stringify({ error: "Internal", message: "internal error" }) }

/** Writes one chunk, resolving only once the socket accepted it (real backpressure, no buffering). */
const writeChunk = (res: http.ServerResponse, chunk: string) =>
  Effect.async<void>((resume) => {
    if (res.destroyed) return resume(Effect.interrupt)
    if (res.write(chunk)) return resume(Effect.void)
    const onDrain = () => {
      res.off("close", onClose)
      resume(Effect.void)
    }
    const onClose = () => {
      res.off("drain", onDrain)
      resume(Effect.interrupt)
    }
    res.once("drain", onDrain)
    res.once("close", onClose)
    return Effect.sync(() => {
      res.off("drain", onDrain)
      res.off("close", onClose)
    })
  })

const SSE_BASE_HEADERS = { "cache-control": "no-cache", "x-accel-buffering": "no", connection: "keep-alive" }
const HEARTBEAT = sseFrame({ comment: "heartbeat" })

const streamBody = (res: http.ServerResponse, response: Extract<EdgeResponse, { _tag: "Stream" }>, hub: StreamHub) => {
  res.writeHead(response.status, { ...SSE_BASE_HEADERS, ...response.headers })
  res.flushHeaders()
  // The shared heartbeat timer, not a merge per stream; a comment never splits a chunk (each is written whole).
  const beater = {
    beat: () => {
      if (!res.destroyed && !res.writableNeedDrain) res.write(HEARTBEAT)
    }
  }
  if (response.heartbeatMs !== undefined) hub.heartbeat.add(response.heartbeatMs, beater)
  return Stream.runForEach(response.events, (chunk) => writeChunk(res, chunk)).pipe(
    Effect.ensuring(Effect.sync(() => {
      hub.heartbeat.remove(beater)
      res.end()
    }))
  )
}

/**
 * A push stream: the handler subscribes the sink in the stream's scope. Once `start` has returned, no fiber
 * waits on the stream (a parked fiber per stream cost several KiB of heap per open stream): the client
 * leaving closes the sink, and the sink closing closes the scope. True when the stream stays open.
 */
const pushBody = (
  res: http.ServerResponse,
  response: Extract<EdgeResponse, { _tag: "Push" }>,
  hub: StreamHub,
  limit: number,
  runFork: <A, E>(effect: Effect.Effect<A, E>) => unknown
) =>
  Effect.gen(function* () {
    res.writeHead(response.status, { ...SSE_BASE_HEADERS, ...response.headers })
    res.flushHeaders()
    const sink = hub.open(res, limit, response.heartbeatMs)
    const scope = yield* Scope.make()
    // Interrupted (the client left during a replay) or failed: close now, in this fiber.
    yield* Scope.extend(response.start(sink), scope).pipe(
      Effect.onExit((exit) => (Exit.isFailure(exit) ? endPush(sink, scope, "client") : Effect.void))
    )
    if (sink.isClosed()) {
      yield* endPush(sink, scope, "done")
      return false
    }
    closeTogether(res, sink, scope, runFork)
    return true
  })

const endPush = (sink: PushSink, scope: Scope.CloseableScope, reason: CloseReason) =>
  Effect.suspend(() => {
    sink.close(reason)
    return Scope.close(scope, Exit.void)
  })

/**
 * An open push stream's two ties, for as long as it is open: the client leaving closes the sink, the sink closing
 * closes the scope. A function of its own so that what they keep is these four alone, not the response and the
 * handler's `start` (bench/stream-memory.ts, heap per open stream); `on`, not `once` (its wrapper is kept too):
 * the listener is removed when the sink closes, whoever closed it.
 */
const closeTogether = (
  res: http.ServerResponse,
  sink: PushSink,
  scope: Scope.CloseableScope,
  runFork: <A, E>(effect: Effect.Effect<A, E>) => unknown
) => {
  const onClose = () => sink.close("client")
  res.on("close", onClose)
  sink.whenClosed(() => {
    res.off("close", onClose)
    runFork(endPush(sink, scope, "done"))
  })
}

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
    const inFlight = new Set<Fiber.RuntimeFiber<void, never>>()
    const hub = makeStreamHub(options.streamMemory)
    // One frame in the writer's hands plus the buffer: the bound the tests pin (limits.test.ts).
    const pushLimit = (options.streamBuffer ?? 1024) + 1

    /** Requests on the direct path not yet answered: shutdown waits for them as for the fibers. */
    const directInFlight = new Set<() => void>()
    /** A request that died: logged and answered 500, as the generic path does for a failed fiber (never throws). */
    const endFailed = (res: http.ServerResponse, cause: Cause.Cause<unknown>) => {
      try {
        if (!Cause.isInterruptedOnly(cause)) {
          runFork(Effect.logError("request failed", cause))
          if (!res.headersSent) writeBuffered(res, INTERNAL)
        }
        if (!res.writableEnded) res.end()
      } catch {
        res.destroy()
      }
    }

    /**
     * A request the direct route takes: answered by a callback, often from inside the writer's batch, so nothing
     * here may throw into it. True when the route took it. Hand-tuned (bench/profile-core.ts create): a fiber per
     * durable write, its run loop and its resumption were the largest share of its CPU after the store itself; one
     * `DirectCall` per request (its methods shared) rather than a closure per callback.
     */
    class DirectCall implements DirectRespond {
      done = false
      cancel: (() => void) | undefined = undefined
      /** Made only for a call answered later (a write): one answered at once (a cached read) needs none. */
      closeListener: (() => void) | undefined = undefined
      constructor(readonly res: http.ServerResponse) {}
      /** The client went away before the answer: the work is cancelled if it has not started. */
      onClose() {
        if (this.done || this.res.writableFinished) return
        this.settle()
        this.cancel?.()
      }
      /** Waits for the answer: the client leaving cancels the work. */
      pending() {
        this.closeListener = () => this.onClose()
        this.res.on("close", this.closeListener) // removed by settle (`once` would wrap it)
        directInFlight.add(this.cancel!)
      }
      settle() {
        this.done = true
        if (this.closeListener === undefined) return
        directInFlight.delete(this.cancel!)
        this.res.off("close", this.closeListener)
      }
      answer(response: EdgeResponse) {
        if (this.done) return
        this.settle()
        try {
          if (response._tag === "Buffered") writeBuffered(this.res, response)
          else throw new Error(`the direct route answered with a ${response._tag} response`)
        } catch (e) {
          endFailed(this.res, Cause.die(e))
        }
      }
      failed(cause: Cause.Cause<unknown>) {
        if (this.done) return
        this.settle()
        endFailed(this.res, cause)
      }
    }

    const dispatchDirect = (route: DirectRoute, request: EdgeRequest, res: http.ServerResponse) => {
      const call = new DirectCall(res)
      try {
        call.cancel = route(request, call)
      } catch (e) {
        call.failed(Cause.die(e))
        return true
      }
      if (call.cancel === undefined) return false
      // Nothing can emit "close" between the route's return and this line: no I/O event runs in between.
      if (!call.done) call.pending()
      return true
    }

    const dispatch = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, bodyShape: JsonScan | undefined) => {
      const url = parseTarget(req.url)
      if (url === undefined) return writeBuffered(res, badTarget)
      const request: EdgeRequest = {
        method: req.method ?? "GET",
        path: url.pathname,
        query: url.searchParams,
        search: url.search,
        headers: req.headers,
        body,
        bodyShape,
        remoteAddress: req.socket.remoteAddress ?? ""
      }
      if (options.direct !== undefined && dispatchDirect(options.direct, request, res)) return
      // A push stream outlives its fiber (see pushBody): then the fiber's end must not end the response.
      let parked = false
      const program = Effect.flatMap(Effect.suspend(() => handler(request)), (response) =>
        response._tag === "Buffered"
          ? Effect.sync(() => writeBuffered(res, response))
          : response._tag === "Stream"
          ? streamBody(res, response, hub)
          : Effect.map(pushBody(res, response, hub, pushLimit, runFork), (open) => void (parked = open)))
      const fiber = runFork(program)
      inFlight.add(fiber)
      // The client went away before we answered: interrupt, so finalizers free what the request held.
      const onClose = () => {
        if (!res.writableFinished) fiber.unsafeInterruptAsFork(fiber.id())
      }
      res.once("close", onClose)
      fiber.addObserver((exit) => {
        inFlight.delete(fiber)
        res.off("close", onClose)
        if (Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)) {
          runFork(Effect.logError("request failed", exit.cause))
          if (!res.headersSent) writeBuffered(res, INTERNAL)
        }
        if (!parked && !res.writableEnded) res.end()
      })
    }

    // A client must send its whole request within requestTimeoutMs (slowloris); responses, streams included,
    // are not limited. Node checks the deadline every connectionsCheckingInterval.
    const server = http.createServer({
      requestTimeout: options.requestTimeoutMs,
      headersTimeout: Math.min(options.requestTimeoutMs, 60_000),
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, options.requestTimeoutMs / 4)),
      keepAliveTimeout: 5_000
    }, (req, res) => {
      connections?.requestStarted(req, res)
      const declared = Number(req.headers["content-length"] ?? 0)
      if (declared > options.bodyLimit) {
        writeBuffered(res, tooLarge(req.url, options.bodyLimit))
        req.resume()
        return
      }
      const chunks: Array<Buffer> = []
      let size = 0
      let rejected = false
      // A body is read as it arrives, a chunk per step, rather than in one long step once it is all here: a JSON
      // body's shape is scanned, and a body of several chunks whose length was declared is copied into one
      // buffer of that length (its pages are only touched, so only resident, as the bytes arrive).
      let shape: JsonScan | undefined
      let whole: Buffer | undefined
      let first = true
      req.on("data", (chunk: Buffer) => {
        if (rejected) return
        if (first) {
          first = false
          if (isJsonContentType(req.headers["content-type"])) shape = new JsonScan()
          if (declared > chunk.length) whole = Buffer.allocUnsafe(declared)
        }
        if (size + chunk.length > options.bodyLimit) {
          rejected = true
          writeBuffered(res, tooLarge(req.url, options.bodyLimit), () => req.destroy())
          return
        }
        if (whole !== undefined && size + chunk.length <= whole.length) chunk.copy(whole, size)
        else chunks.push(chunk)
        size += chunk.length
        shape?.feed(chunk)
        // Past its first chunk a body is long work: one chunk per turn of the process's turnstile (turnstile.ts),
        // so that a few large bodies arriving at once (libuv reads up to 32 chunks per socket in one go) do not
        // hold requests that arrive meanwhile for tens of milliseconds.
        if (size > chunk.length) {
          req.pause()
          longWork.enter(() => req.resume())
        }
      })
      req.on("end", () => {
        if (rejected) return
        const body = whole !== undefined
          ? (chunks.length === 0 ? whole.subarray(0, size) : Buffer.concat([whole.subarray(0, size - chunks.reduce((n, c) => n + c.length, 0)), ...chunks]))
          : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)
        // These listeners stay on the request while its stream is open (heap snapshot): they must not keep the body.
        chunks.length = 0
        whole = undefined
        const bodyShape = shape
        shape = undefined
        dispatch(req, res, body, bodyShape)
      })
      req.on("error", () => res.destroy())
    })
    // The request listener above first runs once the server listens, after this is set.
    const connections = options.maxConnections === undefined && options.maxConnectionsPerClient === undefined
      ? undefined
      : capConnections(server, {
        total: options.maxConnections ?? Number.MAX_SAFE_INTEGER,
        perClient: options.maxConnectionsPerClient ?? Number.MAX_SAFE_INTEGER
      }, (line) => runFork(Effect.logWarning(line)))

    yield* Effect.async<void, ListenError>((resume) => {
      server.once("error", (e) =>
        resume(Effect.fail(new ListenError({ message: `cannot listen on ${options.host}:${options.port}: ${e.message}` }))))
      server.listen(options.port, options.host, () => resume(Effect.void))
    })
    const address = server.address() as net.AddressInfo
    const hostPart = address.family === "IPv6" ? `[${address.address}]` : address.address

    yield* Effect.addFinalizer(() =>
      Effect.gen(function* () {
        server.close()
        server.closeIdleConnections()
        if (options.onShutdown) yield* options.onShutdown
        const deadline = Date.now() + (options.shutdownGraceMs ?? 10_000)
        while (inFlight.size + directInFlight.size > 0 && Date.now() < deadline) yield* Effect.sleep("20 millis")
        for (const cancel of directInFlight) cancel()
        for (const fiber of inFlight) yield* Fiber.interrupt(fiber)
        server.closeAllConnections()
        connections?.close()
      }))

    return { url: `http://${hostPart}:${address.port}`, address, server, streams: hub, connections: connections?.table } satisfies RunningEdge
  })
