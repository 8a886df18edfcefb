/**
 * Writing an `EdgeResponse` to node:http: a buffered answer in one `writeHead`, a stream chunk by chunk with real
 * backpressure, and a push stream that needs no fiber once it is open.
 */
import { Effect, Exit, Scope, Stream } from "effect"
import type * as http from "node:http"
import type { EdgeResponse } from "./edge-types.ts"
import type { CloseReason, PushSink } from "../streams/push-sink.ts"
import { sseFrame } from "../../support/sse.ts"
import type { StreamHub } from "../streams/stream-hub.ts"

export type Buffered = Extract<EdgeResponse, { _tag: "Buffered" }>

/**
 * The head in one `writeHead` (the same lines, in the same order, as a `setHeader` each: cheaper per answer). A
 * response that carries its Content-Length already (a durable write's: rest.ts) is written as it is, not copied.
 */
export const writeBuffered = (res: http.ServerResponse, response: Buffered, onEnd?: () => void) => {
  const body = response.body ?? ""
  // Object.assign, not a spread and a new key (a new hidden class per answer: edge-types.ts `jsonText`).
  const headers = response.headers["content-length"] !== undefined
    ? response.headers
    : Object.assign({}, response.headers, { "content-length": Buffer.byteLength(body) })
  res.writeHead(response.status, headers)
  res.end(body, onEnd)
}

export const INTERNAL: Buffered = { _tag: "Buffered", status: 500, headers: { "content-type": "application/json" }, body: JSON.stringify({ error: "Internal", message: "internal error" }) }

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

export const streamBody = (res: http.ServerResponse, response: Extract<EdgeResponse, { _tag: "Stream" }>, hub: StreamHub) => {
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
export const pushBody = (
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
