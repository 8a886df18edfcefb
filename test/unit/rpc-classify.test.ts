/** JSON-RPC classification (protocol.ts): one parsed value is a request, a notification, a response, or -32600. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { classify, ErrorCode, errorMessage, idOf, RpcError } from "../../src/http/mcp/protocol.ts"

/** The message as classified, or the error as the transport would see it. */
const run = (u: unknown) => Effect.either(Effect.suspend(() => Either.match(classify(u), { onLeft: Effect.fail, onRight: Effect.succeed })))

const invalid = (u: unknown) =>
  Effect.gen(function* () {
    const result = yield* run(u)
    expect(Either.isLeft(result)).toBe(true)
    const error = (result as Either.Left<RpcError, unknown>).left
    expect(error).toBeInstanceOf(RpcError)
    expect(error).toMatchObject({ code: ErrorCode.InvalidRequest })
    // No HTTP status on a protocol error: the transport answers a malformed message with 400.
    expect(error).not.toHaveProperty("status")
    return error
  })

describe("classify", () => {
  it.effect("a request: id, method and params (absent params read as {})", () =>
    Effect.gen(function* () {
      expect(yield* run({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { cursor: "x" } }))
        .toEqual(Either.right({ _tag: "Request", id: 1, method: "tools/list", params: { cursor: "x" } }))
      expect(yield* run({ jsonrpc: "2.0", id: "a", method: "ping" })).toEqual(Either.right({ _tag: "Request", id: "a", method: "ping", params: {} }))
      expect(yield* run({ jsonrpc: "2.0", id: 0, method: "ping" })).toEqual(Either.right({ _tag: "Request", id: 0, method: "ping", params: {} }))
    }))

  it.effect("a notification: a method without an id", () =>
    Effect.gen(function* () {
      expect(yield* run({ jsonrpc: "2.0", method: "notifications/initialized" }))
        .toEqual(Either.right({ _tag: "Notification", method: "notifications/initialized", params: {} }))
      expect(yield* run({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 3 } }))
        .toEqual(Either.right({ _tag: "Notification", method: "notifications/cancelled", params: { requestId: 3 } }))
    }))

  it.effect("a response: a result or an error with an id (null allowed)", () =>
    Effect.gen(function* () {
      expect(yield* run({ jsonrpc: "2.0", id: 7, result: {} })).toEqual(Either.right({ _tag: "Response" }))
      expect(yield* run({ jsonrpc: "2.0", id: null, error: { code: -1, message: "no" } })).toEqual(Either.right({ _tag: "Response" }))
    }))

  it.effect("a batch is refused as such", () =>
    Effect.gen(function* () {
      const error = yield* invalid([{ jsonrpc: "2.0", id: 1, method: "ping" }])
      expect(error.message).toMatch(/batches are not supported/)
    }))

  it.effect("anything not a well-formed JSON-RPC 2.0 message is -32600", () =>
    Effect.gen(function* () {
      for (const u of [
        null,
        42,
        "ping",
        {},
        { jsonrpc: "1.0", id: 1, method: "ping" },
        { id: 1, method: "ping" },
        { jsonrpc: "2.0", id: 1, method: 5 },
        { jsonrpc: "2.0", id: { n: 1 }, method: "ping" },
        { jsonrpc: "2.0", id: true, method: "ping" },
        { jsonrpc: "2.0", id: Number.NaN, method: "ping" },
        { jsonrpc: "2.0", id: 1, method: "ping", params: [1, 2] },
        { jsonrpc: "2.0", method: "notify", params: "x" },
        { jsonrpc: "2.0", id: 1 },
        { jsonrpc: "2.0", id: [1], result: {} },
        { jsonrpc: "2.0", result: {} }
      ]) {
        const error = yield* invalid(u)
        expect(error.message).toMatch(/^invalid JSON-RPC message/)
      }
    }))

  it("the id of a refused message is kept when usable, else null", () => {
    expect(idOf({ id: 4, method: 5 })).toBe(4)
    expect(idOf({ id: "x" })).toBe("x")
    expect(idOf({ id: Number.POSITIVE_INFINITY })).toBeNull()
    expect(idOf({ id: { a: 1 } })).toBeNull()
    expect(idOf([{ id: 1 }])).toBeNull()
    expect(errorMessage(null, new RpcError({ code: ErrorCode.InvalidRequest, message: "m" })))
      .toEqual({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "m" } })
  })
})
