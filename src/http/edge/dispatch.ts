/**
 * Request dispatch: the request read whole becomes an `EdgeRequest`, taken by the direct route (no fiber) or run
 * by the handler in a fiber of its own; the answer is written (answer.ts), and a request that dies is answered 500.
 */
import { Cause, Effect, Exit, type Fiber } from "effect"
import type * as http from "node:http"
import { errorJson, type EdgeRequest, type EdgeResponse } from "./edge-types.ts"
import type { JsonScan } from "./json-scan.ts"
import type { StreamHub } from "../streams/stream-hub.ts"
import { INTERNAL, pushBody, streamBody, writeBuffered, type Buffered } from "./answer.ts"

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

/** Runs an effect on the edge's runtime (Runtime.runFork of it). */
export type RunFork<R> = <A, E>(effect: Effect.Effect<A, E, R>) => Fiber.RuntimeFiber<A, E>

/** The requests not yet answered, which shutdown waits for: the handler's fibers, and the direct path's cancels. */
export interface InFlight {
  readonly fibers: Set<Fiber.RuntimeFiber<void, never>>
  readonly direct: Set<() => void>
}

/** The query of every request without one: shared, so read-only (no route changes a request's query). */
const NO_QUERY = new URLSearchParams()

const PLAIN_PATH = /^\/(?!\/)[A-Za-z0-9_\-/]*$/

/**
 * The request target as a URL, or undefined: node:http lets through targets that URL cannot parse
 * (`GET http://[::1/x`), and a throw in a request listener would end the process.
 */
export const parseTarget = (target: string | undefined) => {
  // The usual target (a plain path: no query, dot segment, escape or backslash) is its own pathname.
  if (target !== undefined && PLAIN_PATH.test(target)) return { pathname: target, search: "", searchParams: NO_QUERY }
  try {
    return new URL(target ?? "/", "http://edge")
  } catch {
    return undefined
  }
}

const badTarget = errorJson(400, "BadRequest", "the request target is not a valid URL", {}, { connection: "close" }) as Buffered

/**
 * The edge's dispatch of a request read whole. `direct` is tried first; `pushLimit` bounds each push stream's
 * unwritten frames.
 */
export const makeDispatch = <R>(
  handler: EdgeHandler<R>,
  direct: DirectRoute | undefined,
  runFork: RunFork<R>,
  hub: StreamHub,
  pushLimit: number,
  inFlight: InFlight
) => {
  const fibers = inFlight.fibers
  const directInFlight = inFlight.direct
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
      remoteAddress: req.socket.remoteAddress ?? "",
      connection: req.socket,
      // Attached by the router once the request is authenticated (access/); here so that every request has one shape.
      principal: undefined
    }
    if (direct !== undefined && dispatchDirect(direct, request, res)) return
    // A push stream outlives its fiber (see pushBody): then the fiber's end must not end the response.
    let parked = false
    const program = Effect.flatMap(Effect.suspend(() => handler(request)), (response) =>
      response._tag === "Buffered"
        ? Effect.sync(() => writeBuffered(res, response))
        : response._tag === "Stream"
        ? streamBody(res, response, hub)
        : Effect.map(pushBody(res, response, hub, pushLimit, runFork), (open) => void (parked = open)))
    const fiber = runFork(program)
    fibers.add(fiber)
    // The client went away before we answered: interrupt, so finalizers free what the request held.
    const onClose = () => {
      if (!res.writableFinished) fiber.unsafeInterruptAsFork(fiber.id())
    }
    res.once("close", onClose)
    fiber.addObserver((exit) => {
      fibers.delete(fiber)
      res.off("close", onClose)
      if (Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)) {
        runFork(Effect.logError("request failed", exit.cause))
        if (!res.headersSent) writeBuffered(res, INTERNAL)
      }
      if (!parked && !res.writableEnded) res.end()
    })
  }

  return dispatch
}
