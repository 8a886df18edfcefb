/**
 * The REST routes (rest.ts) called directly with edge requests, over the real Commands and Queries of the
 * library sample (coreLayer: classic-level in a temp dir): statuses, headers and bodies for each route, and
 * every refusal before the writer (bad path, body, If-Match, idempotency key). No HTTP server, no timing.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Logger, LogLevel } from "effect"
import library from "../../examples/library/app.ts"
import { Commands } from "../../src/commands/commands.ts"
import { loadSettings, WoConfig } from "../../src/support/config.ts"
import { Catalog } from "../../src/domain/app-catalog.ts"
import type { EdgeRequest, EdgeResponse } from "../../src/http/edge/edge-types.ts"
import { makeRestRoutes } from "../../src/http/rest/rest.ts"
import { Queries } from "../../src/projections/queries.ts"
import { coreLayer } from "../../src/runtime/runtime.ts"
import { tempDir } from "../../testkit/server.ts"

/** The library app over a fresh, empty store, with the default settings (not the test process's environment). */
const freshApp = Effect.suspend(() =>
  Effect.map(
    loadSettings({ dataDir: tempDir("wo-rest-") }).pipe(Effect.withConfigProvider(ConfigProvider.fromMap(new Map()))),
    (settings) => coreLayer(library, settings)
  ))

const routes = Effect.gen(function* () {
  const settings = yield* WoConfig
  return makeRestRoutes(yield* Catalog, yield* Commands, yield* Queries, settings.maxJsonDepth)
})

interface Sent {
  readonly body?: string
  readonly headers?: Record<string, string>
}

/** `GET /api/books?limit=1`, as the edge hands it over: the path, and the query string as sent. */
const request = (method: string, target: string, { body = "", headers = {} }: Sent = {}): EdgeRequest => {
  const q = target.indexOf("?")
  const search = q < 0 ? "" : target.slice(q)
  return {
    method,
    path: q < 0 ? target : target.slice(0, q),
    query: new URLSearchParams(search),
    search,
    headers: body === "" ? headers : { "content-type": "application/json", ...headers },
    body: Buffer.from(body),
    remoteAddress: "127.0.0.1"
  }
}

const buffered = (response: EdgeResponse) => {
  if (response._tag !== "Buffered") throw new Error(`expected a buffered answer, got ${response._tag}`)
  return { status: response.status, headers: response.headers, json: response.body === undefined ? undefined : JSON.parse(response.body) }
}

/** Sends requests in order to one fresh app. */
const withRoutes = <A>(f: (send: (method: string, target: string, sent?: Sent) => Effect.Effect<ReturnType<typeof buffered>>) => Effect.Effect<A>) =>
  Effect.gen(function* () {
    const rest = yield* routes
    return yield* f((method, target, sent) => Effect.map(rest(request(method, target, sent)), buffered))
  }).pipe(
    (program) => Effect.flatMap(freshApp, (layer) => Effect.provide(program, layer)),
    Effect.scoped,
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )

const dune = JSON.stringify({ title: "Dune", author: "Frank Herbert" })

describe("REST routes", () => {
  it.effect("create answers 201 with Location and ETag; get and list serve the same row", () =>
    withRoutes((send) =>
      Effect.gen(function* () {
        const created = yield* send("POST", "/api/books", { body: dune })
        expect(created.status).toBe(201)
        expect(created.headers.location).toBe("/api/books/1")
        expect(created.headers.etag).toBe('"1"')
        expect(created.json).toEqual({ id: "1", version: 1, title: "Dune", author: "Frank Herbert", copies: 0, available: 0 })
        const got = yield* send("GET", "/api/books/1")
        expect(got).toMatchObject({ status: 200, json: created.json })
        expect(got.headers.etag).toBe('"1"')
        // A percent-escaped segment is decoded before it is matched.
        expect((yield* send("GET", "/api/%62ooks/%31")).json).toEqual(created.json)
        yield* send("POST", "/api/books", { body: dune })
        const page = yield* send("GET", "/api/books?limit=1")
        expect(page.status).toBe(200)
        expect(page.json.items).toEqual([created.json])
        expect(typeof page.json.nextCursor).toBe("string")
        const next = yield* send("GET", `/api/books?limit=1&cursor=${encodeURIComponent(page.json.nextCursor)}`)
        expect(next.json.items.map((r: { id: string }) => r.id)).toEqual(["2"])
        expect(next.json.nextCursor).toBeUndefined()
      })))

  it.effect("If-Match: the version to change; a stale one is 412, a weak or malformed one 400", () =>
    withRoutes((send) =>
      Effect.gen(function* () {
        yield* send("POST", "/api/books", { body: dune })
        const updated = yield* send("PATCH", "/api/books/1", { body: JSON.stringify({ title: "Dune Messiah" }), headers: { "if-match": '"1"' } })
        expect(updated.status).toBe(200)
        expect(updated.headers.etag).toBe('"2"')
        expect(updated.json).toMatchObject({ version: 2, title: "Dune Messiah" })
        const stale = yield* send("PATCH", "/api/books/1", { body: JSON.stringify({ title: "Children of Dune" }), headers: { "if-match": '"1"' } })
        expect(stale.status).toBe(412)
        expect(stale.json).toMatchObject({ error: "VersionConflict", expected: 1, actual: 2 })
        const weak = yield* send("PATCH", "/api/books/1", { body: JSON.stringify({ title: "x" }), headers: { "if-match": 'W/"2"' } })
        expect(weak.status).toBe(400)
        expect(weak.json).toMatchObject({ error: "ValidationFailed", issues: [{ path: ["If-Match"] }] })
        // Without If-Match, a body's expectedVersion is no part of REST: the change goes through.
        expect((yield* send("PATCH", "/api/books/1", { body: JSON.stringify({ title: "Dune" }) })).json).toMatchObject({ version: 3 })
        // A guarded field is changed by methods only: refused, as REST refuses a domain rule.
        const guarded = yield* send("PATCH", "/api/books/1", { body: JSON.stringify({ copies: 9 }) })
        expect(guarded.status).toBe(422)
        expect(guarded.json).toMatchObject({ error: "Rejected" })
      })))

  it.effect("methods: POST only, exposed ones only; a domain refusal is 422 with its code", () =>
    withRoutes((send) =>
      Effect.gen(function* () {
        yield* send("POST", "/api/books", { body: dune })
        const added = yield* send("POST", "/api/books/1/add_copies", { body: JSON.stringify({ n: 2 }) })
        expect(added.status).toBe(200)
        expect(added.json).toMatchObject({ version: 2, copies: 2, available: 2 })
        expect((yield* send("GET", "/api/books/1/add_copies")).headers.allow).toBe("POST")
        // check_out exists but is not exposed over REST (the lend command runs it).
        expect((yield* send("POST", "/api/books/1/check_out")).status).toBe(404)
        expect((yield* send("POST", "/api/books/1/no_such_method")).status).toBe(404)
        const member = yield* send("POST", "/api/members", { body: JSON.stringify({ name: "Ada" }) })
        expect(member.status).toBe(201)
        const lend = JSON.stringify({ book: "1", member: member.json.id })
        expect((yield* send("POST", "/api/_commands/lend", { body: lend })).status).toBe(200)
        expect((yield* send("POST", "/api/_commands/lend", { body: lend })).status).toBe(200)
        const refused = yield* send("POST", "/api/_commands/lend", { body: lend })
        expect(refused.status).toBe(422)
        expect(refused.json).toMatchObject({ error: "Rejected", code: "no_copies" })
      })))

  it.effect("app commands: 200 with every change; GET is 405; an unknown name 404", () =>
    withRoutes((send) =>
      Effect.gen(function* () {
        yield* send("POST", "/api/books", { body: dune })
        yield* send("POST", "/api/books/1/add_copies", { body: JSON.stringify({ n: 1 }) })
        yield* send("POST", "/api/members", { body: JSON.stringify({ name: "Ada" }) })
        const lent = yield* send("POST", "/api/_commands/lend", { body: JSON.stringify({ book: "1", member: "1" }) })
        expect(lent.status).toBe(200)
        expect(lent.json.command).toBe("lend")
        expect(lent.json.changes.map((c: { type: string; kind: string }) => `${c.type} ${c.kind}`)).toEqual(["books invoked", "loans created"])
        const asGet = yield* send("GET", "/api/_commands/lend")
        expect(asGet.status).toBe(405)
        expect(asGet.headers.allow).toBe("POST")
        expect((yield* send("POST", "/api/_commands/steal", { body: "{}" })).status).toBe(404)
      })))

  it.effect("routes: unexposed operations are 405 with Allow; unknown paths 404, malformed escapes included", () =>
    withRoutes((send) =>
      Effect.gen(function* () {
        const del = yield* send("DELETE", "/api/books/1")
        expect(del.status).toBe(405)
        expect(del.headers.allow).toBe("GET, PATCH")
        const put = yield* send("PUT", "/api/books")
        expect(put.status).toBe(405)
        expect(put.headers.allow).toBe("GET, POST")
        for (const path of ["/api/nothing", "/api/books/", "/api/books//x", "/api/books/1/add_copies/more", "/api/%E0%A4%A"]) {
          const answer = yield* send("GET", path)
          expect(answer.status, path).toBe(404)
          expect(answer.json, path).toEqual({ error: "NotFound", message: `no route for GET ${path}` })
        }
        expect((yield* send("GET", "/api/books/7")).json).toMatchObject({ error: "NotFound" })
      })))

  it.effect("bodies: another content type is 415, bad JSON or a non-object 400, an empty body {}", () =>
    withRoutes((send) =>
      Effect.gen(function* () {
        const text = yield* send("POST", "/api/books", { body: dune, headers: { "content-type": "text/plain" } })
        expect(text.status).toBe(415)
        const broken = yield* send("POST", "/api/books", { body: "{" })
        expect(broken).toMatchObject({ status: 400, json: { error: "InvalidJson" } })
        const array = yield* send("POST", "/api/books", { body: "[1]" })
        expect(array).toMatchObject({ status: 400, json: { error: "ValidationFailed", message: "the body must be a JSON object" } })
        // An empty body is `{}`: the create is then refused for its missing fields, by the catalog.
        const empty = yield* send("POST", "/api/books")
        expect(empty).toMatchObject({ status: 400, json: { error: "ValidationFailed" } })
        expect(empty.json.issues.map((i: { path: Array<string> }) => i.path[0]).sort()).toEqual(["author", "title"])
        // Nothing was written by any of them.
        expect((yield* send("GET", "/api/books")).json.items).toEqual([])
      })))

  it.effect("Idempotency-Key: a retry is answered again, flagged; another body under the key is 422; a bad key 400", () =>
    withRoutes((send) =>
      Effect.gen(function* () {
        const key = { "idempotency-key": "create-dune-1" }
        const first = yield* send("POST", "/api/books", { body: dune, headers: key })
        expect(first.status).toBe(201)
        expect(first.headers["idempotent-replayed"]).toBeUndefined()
        const again = yield* send("POST", "/api/books", { body: dune, headers: key })
        expect(again.status).toBe(201)
        expect(again.headers["idempotent-replayed"]).toBe("true")
        expect(again.json).toEqual(first.json)
        const other = yield* send("POST", "/api/books", { body: JSON.stringify({ title: "Emma", author: "Jane Austen" }), headers: key })
        expect(other).toMatchObject({ status: 422, json: { error: "IdempotencyKeyReused", key: "create-dune-1" } })
        const bad = yield* send("POST", "/api/books", { body: dune, headers: { "idempotency-key": "" } })
        expect(bad).toMatchObject({ status: 400, json: { error: "ValidationFailed", issues: [{ path: ["Idempotency-Key"] }] } })
        // One row only: the retry and the refusals wrote nothing.
        expect((yield* send("GET", "/api/books")).json.items).toHaveLength(1)
      })))
})
