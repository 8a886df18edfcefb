/**
 * The edge's direct route (edge.ts, DirectRoute): requests it takes are answered without a fiber, by a callback.
 * What the generic path gives a request must hold there too: the handler takes what the route leaves, a defect is
 * a logged 500 with the same body, a client that leaves cancels the work, and shutdown waits for the answers.
 */
import { Cause, Effect, Exit, Scope } from "effect"
import * as net from "node:net"
import { afterEach, describe, expect, it } from "vitest"
import { startEdge, type DirectRespond, type DirectRoute, type RunningEdge } from "../../src/http/edge/edge.ts"
import { json, type EdgeResponse } from "../../src/http/edge/edge-types.ts"

const INTERNAL = { error: "Internal", message: "internal error" }

describe("the edge's direct route", () => {
  let scopes: Array<Scope.CloseableScope> = []
  afterEach(async () => {
    for (const scope of scopes) await Effect.runPromise(Scope.close(scope, Exit.void))
    scopes = []
  })

  const start = async (direct: DirectRoute, handler = (): Effect.Effect<EdgeResponse> => Effect.succeed(json(200, { via: "handler" })), shutdownGraceMs = 5_000) => {
    const scope = Effect.runSync(Scope.make())
    scopes.push(scope)
    return Effect.runPromise(
      startEdge(handler, { host: "127.0.0.1", port: 0, bodyLimit: 1024, requestTimeoutMs: 10_000, shutdownGraceMs, direct }).pipe(Scope.extend(scope))
    )
  }
  const get = async (edge: RunningEdge, path: string) => {
    const res = await fetch(`${edge.url}${path}`)
    return { status: res.status, body: await res.json() }
  }

  it("answers what it takes, at once or later, and leaves the rest to the handler", async () => {
    const edge = await start((request, respond) => {
      if (request.path === "/now") {
        respond.answer(json(201, { via: "direct" }))
        return () => {}
      }
      if (request.path === "/later") {
        setTimeout(() => respond.answer(json(200, { via: "later" })), 20)
        return () => {}
      }
      return undefined
    })
    expect(await get(edge, "/now")).toEqual({ status: 201, body: { via: "direct" } })
    expect(await get(edge, "/later")).toEqual({ status: 200, body: { via: "later" } })
    expect(await get(edge, "/other")).toEqual({ status: 200, body: { via: "handler" } })
  })

  it("answers a defect as a failed fiber is answered: 500 with the same body", async () => {
    const edge = await start((request, respond) => {
      if (request.path === "/throws") throw new Error("boom (test)")
      respond.failed(Cause.die(new Error("died (test)")))
      return () => {}
    }, () => Effect.die(new Error("handler died (test)")))
    expect(await get(edge, "/throws")).toEqual({ status: 500, body: INTERNAL })
    expect(await get(edge, "/failed")).toEqual({ status: 500, body: INTERNAL })
    // The generic path's answer to a defect, for comparison: the same.
    const generic = await start(() => undefined, () => Effect.die(new Error("handler died (test)")))
    expect(await get(generic, "/x")).toEqual({ status: 500, body: INTERNAL })
  })

  it("cancels the work when the client leaves before the answer, and not after it", async () => {
    let pending: DirectRespond | undefined
    const cancelled: Array<string> = []
    const edge = await start((request, respond) => {
      pending = respond
      if (request.path === "/quick") respond.answer(json(200, { ok: true }))
      return () => cancelled.push(request.path)
    })
    const socket = net.connect(edge.address.port, "127.0.0.1")
    await new Promise((r) => socket.once("connect", r))
    socket.write("GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n")
    await new Promise<void>((r) => {
      const check = setInterval(() => pending !== undefined && (clearInterval(check), r()), 5)
    })
    socket.destroy()
    await new Promise<void>((r) => {
      const check = setInterval(() => cancelled.length > 0 && (clearInterval(check), r()), 5)
    })
    pending!.answer(json(200, { late: true })) // after the client left: dropped, nothing thrown
    expect((await get(edge, "/quick")).status).toBe(200)
    expect(cancelled).toEqual(["/slow"])
  })

  it("shutdown waits for the answers in flight", async () => {
    let pending: DirectRespond | undefined
    const edge = await start((_request, respond) => {
      pending = respond
      return () => {}
    })
    const answered = get(edge, "/slow")
    await new Promise<void>((r) => {
      const check = setInterval(() => pending !== undefined && (clearInterval(check), r()), 5)
    })
    const closing = Effect.runPromise(Scope.close(scopes.pop()!, Exit.void))
    await new Promise((r) => setTimeout(r, 50))
    pending!.answer(json(200, { answered: "during shutdown" }))
    expect(await answered).toEqual({ status: 200, body: { answered: "during shutdown" } })
    await closing
  })
})
