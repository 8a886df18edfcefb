/**
 * Keyed writes on the REST routes' direct path (rest.ts `direct`: no fiber per request) against the generic path
 * (`rest(request)`, a fiber): over the real Commands of the library sample (coreLayer: classic-level in a temp dir),
 * the direct path takes a request with an Idempotency-Key and answers it exactly as the generic path does. The two
 * share one table of keys in flight: same-key requests sent both ways at once write once, and every other answer is
 * the first one byte for byte, flagged as a replay. No HTTP server, no timing.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, Logger, LogLevel } from "effect"
import library from "../../examples/library/app.ts"
import { Commands } from "../../src/commands/commands.ts"
import { loadSettings, WoConfig } from "../../src/support/config.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import type { EdgeRequest, EdgeResponse } from "../../src/http/edge/edge-types.ts"
import { makeRestRoutes } from "../../src/http/rest/rest.ts"
import { Queries } from "../../src/projections/queries.ts"
import { coreLayer } from "../../src/runtime/runtime.ts"
import { tempDir } from "../../testkit/server.ts"

const freshApp = Effect.suspend(() =>
  Effect.map(
    loadSettings({ dataDir: tempDir("wo-rest-keyed-") }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))),
    (settings) => coreLayer(library, settings)
  ))

const request = (method: string, path: string, body: string, key?: string): EdgeRequest => ({
  method,
  path,
  query: new URLSearchParams(),
  search: "",
  headers: { "content-type": "application/json", ...(key === undefined ? {} : { "idempotency-key": key }) },
  body: Buffer.from(body),
  remoteAddress: "127.0.0.1"
})

/** An answer as the edge would write it: status, every header, and the body's exact text. */
interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

const answerOf = (response: EdgeResponse): Answer => {
  if (response._tag !== "Buffered") throw new Error(`expected a buffered answer, got ${response._tag}`)
  return { status: response.status, headers: { ...response.headers } as Record<string, string>, body: response.body ?? "" }
}

const withoutReplay = ({ headers: { "idempotent-replayed": _, ...headers }, ...rest }: Answer): Answer => ({ ...rest, headers })

const keyedRoutes = Effect.gen(function* () {
  const settings = yield* WoConfig
  const rest = makeRestRoutes(yield* Catalog, yield* Commands, yield* Queries, settings.maxJsonDepth)
  /** The direct path: it must take the request (a keyed write included), and answers through its callback. */
  const direct = (r: EdgeRequest) =>
    Effect.async<Answer>((resume) => {
      const taken = rest.direct(r, {
        answer: (response) => resume(Effect.succeed(answerOf(response))),
        failed: (cause) => resume(Effect.die(cause))
      })
      if (taken === undefined) resume(Effect.dieMessage(`the direct path did not take ${r.method} ${r.path}`))
    })
  const generic = (r: EdgeRequest) => Effect.map(rest(r), answerOf)
  return { direct, generic, rows: (path: string) => Effect.map(rest(request("GET", path, "")), (a) => JSON.parse(answerOf(a).body).items as Array<unknown>) }
})

const run = <A>(program: Effect.Effect<A, never, Commands | Catalog | Queries | WoConfig>) =>
  Effect.flatMap(freshApp, (layer) => Effect.provide(program, layer)).pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.Warning))

const dune = JSON.stringify({ title: "Dune", author: "Frank Herbert" })

describe("REST keyed writes without a fiber", () => {
  it.effect("same-key creates sent both ways at once write one row; every answer is the first, byte for byte", () =>
    run(Effect.gen(function* () {
      const { direct, generic, rows } = yield* keyedRoutes
      const create = () => request("POST", "/api/books", dune, "one-dune")
      // Interleaved: direct, generic, direct, ... all in flight before the writer takes any.
      const fibers = yield* Effect.forEach(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? direct : generic)), (send) =>
        Effect.fork(send(create())))
      const answers = yield* Fiber.joinAll(fibers)
      expect(answers.map((a) => a.status)).toEqual(Array(8).fill(201))
      expect(answers.filter((a) => a.headers["idempotent-replayed"] === "true")).toHaveLength(7)
      const first = withoutReplay(answers[0])
      for (const a of answers) expect(withoutReplay(a)).toEqual(first)
      expect(first.headers.location).toBe("/api/books/1")
      // A retry afterwards (answered from the store), either way: the same bytes and headers, flagged.
      const viaDirect = yield* direct(create())
      const viaGeneric = yield* generic(create())
      expect(viaDirect).toEqual(viaGeneric)
      expect(viaDirect).toEqual({ ...first, headers: { ...first.headers, "idempotent-replayed": "true" } })
      expect(yield* rows("/api/books")).toHaveLength(1)
    })))

  it.effect("a reused key, a bad key and a refusal are answered as the generic path answers them, and nothing is recorded", () =>
    run(Effect.gen(function* () {
      const { direct, generic, rows } = yield* keyedRoutes
      yield* direct(request("POST", "/api/books", dune, "dune"))
      const emma = JSON.stringify({ title: "Emma", author: "Jane Austen" })
      // Same key, another body: 422 naming the key, while the first is in flight and after it.
      const reused = yield* direct(request("POST", "/api/books", emma, "dune"))
      expect(reused).toEqual(yield* generic(request("POST", "/api/books", emma, "dune")))
      expect(reused.status).toBe(422)
      expect(JSON.parse(reused.body)).toMatchObject({ error: "IdempotencyKeyReused", key: "dune" })
      const inFlight = yield* Effect.all([direct(request("POST", "/api/books", dune, "two")), direct(request("POST", "/api/books", emma, "two"))], {
        concurrency: "unbounded"
      })
      expect(inFlight.map((a) => a.status)).toEqual([201, 422])
      const bad = yield* direct(request("POST", "/api/books", dune, "has space"))
      expect(bad).toEqual(yield* generic(request("POST", "/api/books", dune, "has space")))
      expect(bad.status).toBe(400)
      // A refusal (a domain rule) is not recorded: its retry is decided again, either way, and not flagged.
      const tooMany = JSON.stringify({ n: 1_000_001 })
      const refused = yield* direct(request("POST", "/api/books/1/add_copies", tooMany, "neg"))
      const again = yield* generic(request("POST", "/api/books/1/add_copies", tooMany, "neg"))
      expect(JSON.parse(refused.body)).toMatchObject({ error: "Rejected", code: "too_many_copies" })
      expect(again).toEqual(refused)
      expect(again.headers["idempotent-replayed"]).toBeUndefined()
      expect(yield* rows("/api/books")).toHaveLength(2)
    })))

  it.effect("each keyed request in flight has a cancel of its own (the edge counts its requests in flight by them)", () =>
    run(Effect.gen(function* () {
      const settings = yield* WoConfig
      const rest = makeRestRoutes(yield* Catalog, yield* Commands, yield* Queries, settings.maxJsonDepth)
      let answered = 0
      let allAnswered: (() => void) | undefined
      const respond = {
        answer: () => {
          if (++answered === 3) allAnswered?.()
        },
        failed: () => {}
      }
      const cancels = [
        rest.direct(request("POST", "/api/books", dune, "a"), respond),
        rest.direct(request("POST", "/api/books", dune, "a"), respond),
        rest.direct(request("POST", "/api/books", dune, "b"), respond)
      ]
      expect(cancels.every((c) => typeof c === "function")).toBe(true)
      expect(new Set(cancels).size).toBe(3)
      // Cancelling does not stop a keyed write: every caller is still answered, and both keys are written.
      for (const cancel of cancels) cancel!()
      yield* Effect.async<void>((resume) => {
        if (answered === 3) return resume(Effect.void)
        allAnswered = () => resume(Effect.void)
      })
      expect(yield* Effect.map(rest(request("GET", "/api/books", "")), (r) => JSON.parse(answerOf(r).body).items)).toHaveLength(2)
    })))

  it.effect("a keyed app command: one loan for concurrent same-key sends both ways, the same answer (same correlation)", () =>
    run(Effect.gen(function* () {
      const { direct, generic, rows } = yield* keyedRoutes
      yield* direct(request("POST", "/api/books", dune))
      yield* direct(request("POST", "/api/books/1/add_copies", JSON.stringify({ n: 3 })))
      yield* direct(request("POST", "/api/members", JSON.stringify({ name: "Ada" })))
      const lend = () => request("POST", "/api/_commands/lend", JSON.stringify({ book: "1", member: "1" }), "lend-1")
      const answers = yield* Effect.all([direct(lend()), generic(lend()), direct(lend()), generic(lend())], { concurrency: "unbounded" })
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200])
      expect(answers.filter((a) => a.headers["idempotent-replayed"] === "true")).toHaveLength(3)
      expect(new Set(answers.map((a) => a.body)).size).toBe(1)
      const retry = yield* direct(lend())
      expect(retry.body).toBe(answers[0].body)
      expect(retry.headers["idempotent-replayed"]).toBe("true")
      expect(yield* rows("/api/loans")).toHaveLength(1)
    })))
})
