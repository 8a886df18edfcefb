import { Effect, Exit, Schedule, Scope, Stream } from "effect"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startEdge, type EdgeHandler } from "../../src/http/edge/edge.ts"
import { json, type EdgeRequest, type EdgeResponse } from "../../src/http/edge/edge-types.ts"
import { recordTo } from "../../src/http/recording/recorder.ts"
import { parseSse, sseParser } from "../../src/support/sse.ts"
import { tempDir } from "../../testkit/server.ts"
import {
  lineDiff,
  matchJson,
  matchResponse,
  matchText,
  parseTranscript,
  prepareRequest,
  replayTranscript,
  type ActualResponse,
  type ExpectedResponse,
  type Vars
} from "../../src/testing/transcript/index.ts"

const vars = (entries: Record<string, unknown> = {}): Vars => new Map(Object.entries(entries))

describe("parseTranscript", () => {
  const text = [
    "# app: blog",
    "# env: WO_GROUP_COMMIT=on WO_MAX_BATCH=2 | WO_GROUP_COMMIT=off",
    "# a free comment",
    "",
    "### create",
    "POST /api/articles HTTP/1.1",
    "Content-Type: application/json",
    "",
    "{",
    '  "title": "Hi"',
    "}",
    "",
    "--> 201",
    "location: /api/articles/{{id}}",
    "",
    '{"id": "{{id}}"}',
    "",
    "### stream",
    "GET /events",
    "--> 200",
    "# read: 2 events, 500 ms",
    "content-type: text/event-stream",
    ""
  ].join("\n")

  it("reads metadata, env runs and exchanges", () => {
    const t = parseTranscript(text)
    expect(t.app).toBe("blog")
    expect(t.envs).toEqual([{ WO_GROUP_COMMIT: "on", WO_MAX_BATCH: "2" }, { WO_GROUP_COMMIT: "off" }])
    expect(t.exchanges).toHaveLength(2)
    const [create, stream] = t.exchanges
    expect(create.title).toBe("create")
    expect(create.line).toBe(5)
    expect(create.request).toEqual({
      method: "POST",
      target: "/api/articles",
      headers: [["Content-Type", "application/json"]],
      body: '{\n  "title": "Hi"\n}'
    })
    expect(create.expect).toEqual({ status: 201, read: undefined, headers: [["location", "/api/articles/{{id}}"]], body: '{"id": "{{id}}"}' })
    expect(stream.request.headers).toEqual([])
    expect(stream.expect.read).toEqual({ events: 2, ms: 500 })
    expect(stream.expect.body).toBe("")
  })

  it("defaults to a single run without env", () => {
    expect(parseTranscript("# app: blog\n### x\nGET /\n--> 200\n").envs).toEqual([{}])
  })

  it("names the line of a missing status", () => {
    expect(() => parseTranscript("# app: blog\n\n### broken\nGET /x\n\n### next\nGET /y\n--> 200\n")).toThrow(
      /line 3: exchange "broken" has no "--> <status>" line/
    )
  })

  it("rejects a body glued to the headers and unknown directives", () => {
    expect(() => parseTranscript("### x\nGET /\n--> 200\ncontent-type: application/json\n{}\n")).toThrow(/line 5: expected a response header/)
    expect(() => parseTranscript("### x\nGET /\n--> 200\n# wait: 2\n")).toThrow(/line 4: unknown directive/)
    expect(() => parseTranscript("### x\nGET /\n--> 200\n# read: soon\n")).toThrow(/"N events" or "N ms"/)
  })
})

describe("matchText", () => {
  it("captures a substring and then requires the same value", () => {
    const v = vars()
    expect(matchText("/api/articles/{{id}}", "/api/articles/42", v)).toBe(true)
    expect(v.get("id")).toBe("42")
    expect(matchText("/api/articles/{{id}}/publish", "/api/articles/42/publish", v)).toBe(true)
    expect(matchText("/api/articles/{{id}}", "/api/articles/43", v)).toBe(false)
  })

  it("needs a non-empty capture, and {{*}} matches anything without capturing", () => {
    const v = vars()
    expect(matchText("/x/{{id}}", "/x/", v)).toBe(false)
    expect(matchText("W/{{*}}", "W/", v)).toBe(true)
    expect(matchText('"{{*}}"', '"abc"', v)).toBe(true)
    expect(v.size).toBe(0)
  })

  it("treats regex characters literally and repeats within one pattern", () => {
    const v = vars()
    expect(matchText("a.b({{x}})-{{x}}", "a.b(7)-7", v)).toBe(true)
    expect(matchText("a.b({{y}})-{{y}}", "a.b(7)-8", v)).toBe(false)
    expect(matchText("a.b", "axb", v)).toBe(false)
    expect(v.has("y")).toBe(false)
  })
})

describe("matchJson", () => {
  it("captures a whole-string placeholder of any type, then compares deeply", () => {
    const v = vars()
    expect(matchJson({ id: "{{id}}", version: "{{v}}", author: "{{a}}" }, { id: "7", version: 3, author: { name: "Ann" } }, v).problems).toEqual([])
    expect(Object.fromEntries(v)).toEqual({ id: "7", v: 3, a: { name: "Ann" } })
    expect(matchJson({ version: "{{v}}" }, { version: "3" }, v).problems).toEqual(['$.version: expected {{v}} = 3, got "3"'])
    expect(matchJson({ link: "/api/x/{{id}}" }, { link: "/api/x/8" }, v).problems).toEqual([
      '$.link: expected a string like "/api/x/7", got "/api/x/8"'
    ])
  })

  it("a value captured from text equals the number written the same; a number captured as JSON is not a string", () => {
    const v = vars({ seq: "12", n: 12 })
    expect(matchJson({ seq: "{{seq}}" }, { seq: 12 }, v).problems).toEqual([])
    expect(matchJson({ seq: "{{seq}}" }, { seq: 13 }, v).problems).toEqual(['$.seq: expected {{seq}} = "12", got 13'])
    expect(matchJson({ n: "{{n}}" }, { n: "12" }, v).problems).toEqual(['$.n: expected {{n}} = 12, got "12"'])
  })

  it("resolves placeholders in keys to their captured values, and never captures there", () => {
    const v = vars({ member: "5" })
    expect(matchJson({ "{{member}}": ["1"] }, { "5": ["1"] }, v).problems).toEqual([])
    expect(matchJson({ "{{member}}": ["1"] }, { "6": ["1"] }, v).problems).toEqual([
      '$: missing key "5" (expected ["1"])',
      '$: unexpected key "6" = ["1"]'
    ])
    expect(matchJson({ "{{other}}": 1 }, { "7": 1 }, v).problems).toContain('$: missing key "{{other}}" (expected 1)')
    expect(v.has("other")).toBe(false)
  })

  it("ignores key order but reports missing and unexpected keys by path", () => {
    const v = vars()
    expect(matchJson({ a: 1, b: { c: [1, 2] } }, { b: { c: [1, 2] }, a: 1 }, v).problems).toEqual([])
    expect(matchJson({ a: 1, b: { c: [1, 2] } }, { a: 2, b: { c: [1], d: true } }, v).problems).toEqual([
      "$.a: expected 1, got 2",
      "$.b.c: expected 2 element(s), got 1",
      '$.b: unexpected key "d" = true'
    ])
    expect(matchJson({ a: 1, z: null }, { a: 1 }, v).problems).toEqual(['$: missing key "z" (expected null)'])
  })

  it('allows extra keys with "..." and extra trailing elements with a final "..."', () => {
    const v = vars()
    expect(matchJson({ a: 1, "...": "*" }, { a: 1, b: 2 }, v).problems).toEqual([])
    expect(matchJson({ a: 1, "...": "*" }, { b: 2 }, v).problems).toEqual(['$: missing key "a" (expected 1)'])
    expect(matchJson([1, "..."], [1, 2, 3], v).problems).toEqual([])
    expect(matchJson([1, 2, "..."], [1], v).problems).toEqual(["$: expected at least 2 element(s), got 1"])
  })

  it("projects the expectation onto the actual value so a diff shows only real differences", () => {
    const v = vars()
    const actual = { id: "x1", version: 2, title: "Hello" }
    const { projected } = matchJson({ title: "Hello", version: 1, id: "{{id}}" }, actual, v)
    expect(projected).toEqual({ id: "x1", version: 1, title: "Hello" })
    const diff = lineDiff(JSON.stringify(projected, null, 2).split("\n"), JSON.stringify(actual, null, 2).split("\n"))
    expect(diff).toEqual(["  {", '    "id": "x1",', '-   "version": 1,', '+   "version": 2,', '    "title": "Hello"', "  }"])
  })
})

describe("lineDiff", () => {
  it("folds long unchanged runs", () => {
    const a = Array.from({ length: 20 }, (_, i) => `line ${i}`)
    const b = a.map((l, i) => (i === 10 ? "changed" : l))
    const diff = lineDiff(a, b, 1)
    expect(diff).toEqual(["  ...", "  line 9", "- line 10", "+ changed", "  line 11", "  ..."])
  })
})

describe("matchResponse", () => {
  const actual = (over: Partial<ActualResponse> = {}): ActualResponse => ({
    status: 201,
    headers: { "content-type": "application/json", location: "/api/articles/5" },
    text: '{"id":"5","version":1}',
    ...over
  })
  const expected = (over: Partial<ExpectedResponse> = {}): ExpectedResponse => ({
    status: 201,
    headers: [["Location", "/api/articles/{{id}}"]],
    body: '{"id": "{{id}}", "version": 1}',
    ...over
  })

  it("compares status, listed headers (any case) and body, capturing in file order", () => {
    const v = vars()
    expect(matchResponse(expected(), actual(), v)).toEqual([])
    expect(v.get("id")).toBe("5")
  })

  it("reports each difference with a body diff", () => {
    const problems = matchResponse(expected({ headers: [["etag", '"1"'], ["location", "/api/articles/{{id}}"]] }), actual({
      status: 200,
      text: '{"id":"6","version":1}'
    }), vars())
    expect(problems[0]).toBe("status: expected 201, got 200")
    expect(problems[1]).toBe('header etag: expected "\\"1\\"", the response has none')
    expect(problems[2]).toBe('$.id: expected {{id}} = "5", got "6"')
    expect(problems.slice(3).join("\n")).toContain('-   "id": "5",\n    +   "id": "6",')
  })

  it("compares text bodies with placeholders and requires empty when none is expected", () => {
    expect(matchResponse(expected({ body: "hello {{who}}" }), actual({ text: "hello world\n" }), vars())).toEqual([])
    expect(matchResponse(expected({ body: "" }), actual({ text: "x" }), vars())).toEqual(['expected an empty body, got "x"'])
    expect(matchResponse(expected({ body: "{}" }), actual({ text: "oops" }), vars())).toEqual(['expected a JSON body, got "oops"'])
  })

  describe("SSE", () => {
    const streamed = (text: string): ActualResponse => ({
      status: 200,
      headers: { "content-type": "text/event-stream" },
      text,
      events: parseSse(text)
    })
    const sse = (body: string): ExpectedResponse => ({ status: 200, headers: [], body })

    it("splits events, joins data lines and keeps the unterminated tail", () => {
      const parser = sseParser()
      expect(parser.push('id: 1\ndata: {"a":\ndata: 1}\n\n: heartbeat\n\nevent: x\r\ndata: plain\r\n\r\nid: 3\nda')).toEqual([{ id: "1", data: '{"a":\n1}' }, { comment: "heartbeat" }, { event: "x", data: "plain" }])
      expect(parser.rest()).toBe("id: 3\nda")
    })

    it("compares JSON data structurally and ignores heartbeats unless listed", () => {
      const text = 'id: 7\ndata: {"n":1,"id":"s1"}\n\n: heartbeat\n\nid: 8\ndata: {"n":2}\n\n'
      const v = vars()
      const expectedBody = 'id: {{first}}\ndata: {\ndata:   "id": "{{sid}}",\ndata:   "n": 1\ndata: }\n\nid: {{*}}\ndata: {"n": 2}'
      expect(matchResponse(sse(expectedBody), streamed(text), v)).toEqual([])
      expect(Object.fromEntries(v)).toEqual({ first: "7", sid: "s1" })
      expect(matchResponse(sse("id: 7\ndata: {\"n\":1,\"id\":\"s1\"}\n\n: heartbeat\n\nid: 8\ndata: {\"n\":2}"), streamed(text), vars())).toEqual([])
    })

    it("reports a wrong event with its index and an events diff", () => {
      const problems = matchResponse(sse('id: 7\ndata: {"n": 1}\n\ndata: {"n": 3}'), streamed('id: 7\ndata: {"n":1}\n\nid: 8\ndata: {"n":2}\n\n'), vars())
      expect(problems.slice(0, 2)).toEqual(['event 2 id: not expected, got "8"', "event 2 data $.n: expected 3, got 2"])
      expect(problems.join("\n")).toContain('    + id: 8\n      data: {\n    - data:   "n": 3\n    + data:   "n": 2\n')
      expect(matchResponse(sse('data: {"n": 1}'), streamed('data: {"n":1}\n\ndata: {"n":2}\n\n'), vars())[0]).toBe("expected 1 event(s), got 2")
    })
  })
})

describe("prepareRequest", () => {
  it("substitutes into path, headers and body; a whole JSON placeholder keeps its type", () => {
    const request = prepareRequest(
      { method: "PATCH", target: "/api/x/{{id}}", headers: [["if-match", '"{{v}}"']], body: '{"price": "{{v}}", "note": "v{{v}}"}' },
      vars({ id: "7", v: 3 })
    )
    expect(request.target).toBe("/api/x/7")
    expect(request.headers).toEqual([["if-match", '"3"']])
    expect(JSON.parse(request.body)).toEqual({ price: 3, note: "v3" })
  })

  it("sends a body without placeholders byte for byte, and refuses uncaptured names", () => {
    expect(prepareRequest({ method: "POST", target: "/", headers: [], body: "{nope" }, vars()).body).toBe("{nope")
    expect(() => prepareRequest({ method: "GET", target: "/x/{{id}}", headers: [], body: "" }, vars())).toThrow(
      "{{id}} is used in a request before any response captured it"
    )
  })
})

// A small server for the replay tests: echoes what it got, and serves a finite and an endless SSE stream.
describe("replayTranscript over HTTP", () => {
  let server: http.Server
  let url: string
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = ""
      req.on("data", (c) => (body += c))
      req.on("end", () => {
        if (req.url === "/echo") {
          res.writeHead(200, { "content-type": "application/json" })
          res.end(JSON.stringify({ method: req.method, host: req.headers.host, origin: req.headers.origin ?? null, length: req.headers["content-length"], body }))
        } else if (req.url === "/endless") {
          res.writeHead(200, { "content-type": "text/event-stream" })
          res.write(": hello\n\n")
          let n = 0
          const timer = setInterval(() => res.write(`id: ${++n}\ndata: {"n":${n}}\n\n`), 20)
          res.on("close", () => clearInterval(timer))
        } else {
          res.writeHead(404)
          res.end()
        }
      })
    })
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise<void>((r) => server.close(() => r())))

  const replay = (text: string, timeoutMs?: number) => replayTranscript(parseTranscript(text), url, { timeoutMs })

  it("sends the Host of the server unless one is listed, plus Content-Length", async () => {
    const result = await replay([
      "### default host",
      "POST /echo",
      "",
      "hi",
      "--> 200",
      "",
      '{"method": "POST", "host": "{{host}}", "origin": null, "length": "2", "body": "hi"}',
      "### host and origin as written",
      "GET /echo",
      "Host: evil.example",
      "Origin: http://evil.example",
      "--> 200",
      "",
      '{"method": "GET", "host": "evil.example", "origin": "http://evil.example", "length": "0", "body": ""}'
    ].join("\n"))
    expect(result.failures).toEqual([])
    expect(result.vars.host).toBe(url.slice("http://".length))
  })

  it("stops an endless stream after N events, or after a duration", async () => {
    const byCount = await replay('### two\nGET /endless\n--> 200\n# read: 2 events\n\nid: 1\ndata: {"n": 1}\n\nid: 2\ndata: {"n": 2}\n')
    expect(byCount.failures).toEqual([])
    const withComment = await replay('### comments count when listed\nGET /endless\n--> 200\n# read: 2 events\n\n: hello\n\nid: 1\ndata: {"n": 1}\n')
    expect(withComment.failures).toEqual([])
    const byTime = await replay('### for a while\nGET /endless\n--> 200\n# read: 300 ms\n\nid: 1\ndata: {"n": 1}\n')
    expect(byTime.ok).toBe(false)
    const got = Number(/expected 1 event\(s\), got (\d+)/.exec(byTime.failures[0])?.[1])
    expect(got).toBeGreaterThan(1) // it read for the whole duration, then hung up
    expect(got).toBeLessThan(30)
  })

  it("fails a stream that does not end, saying how to bound it", async () => {
    const result = await replay("### forever\nGET /endless\n--> 200\n", 300)
    expect(result.failures[0]).toContain('exchange 1 "forever" (line 1): GET /endless')
    expect(result.failures[0]).toContain('the stream was still open after 300 ms (add "# read: N events" or "# read: N ms")')
  })

  it("stops at the first failing exchange and names it", async () => {
    const result = await replay("### fine\nGET /echo\n--> 200\n\n{\"...\": \"*\"}\n### wrong\nGET /nope\n--> 200\n### never run\nGET /{{missing}}\n--> 200\n")
    expect(result.failures).toHaveLength(1)
    expect(result.failures[0]).toBe('exchange 2 "wrong" (line 6): GET /nope\n  status: expected 200, got 404')
  })
})

// The recorder, round-tripped: record a session against a handler, replay the file against a fresh edge.
describe("recordTo", () => {
  /** A server that generates ids and session ids at random, so replay must capture them. */
  const makeHandler = (): EdgeHandler<never> => {
    const things = new Map<string, string>()
    let sessions = new Set<string>()
    return (request: EdgeRequest): Effect.Effect<EdgeResponse> => {
      const session = request.headers["mcp-session-id"] as string | undefined
      if (request.path === "/mcp" && request.method === "POST" && session === undefined) {
        const id = randomUUID()
        sessions = new Set([...sessions, id])
        return Effect.succeed(json(200, { jsonrpc: "2.0", id: 1, result: { session: id } }, { "mcp-session-id": id }))
      }
      if (request.path === "/mcp" && request.method === "GET") {
        if (!session || !sessions.has(session)) return Effect.succeed(json(404, { error: "no session" }))
        // Endless: only the client going away ends it.
        const events = Stream.iterate(1, (n) => n + 1).pipe(
          Stream.schedule(Schedule.spaced("10 millis")),
          Stream.map((n) => `id: ${n}\ndata: ${JSON.stringify({ n, session })}\n\n`)
        )
        return Effect.succeed({ _tag: "Stream", status: 200, headers: { "content-type": "text/event-stream" }, events })
      }
      if (request.path === "/feed") {
        const events = Stream.make("event: a\ndata: 1\n\n", 'data: {"done":true}\n\n')
        return Effect.succeed({ _tag: "Stream", status: 200, headers: { "content-type": "text/event-stream" }, events })
      }
      if (request.path === "/api/things" && request.method === "POST") {
        if (request.headers["content-type"] !== "application/json") return Effect.succeed(json(415, { error: "UnsupportedMediaType" }))
        const id = randomUUID().slice(0, 8)
        things.set(id, JSON.parse(request.body.toString()).name)
        return Effect.succeed(json(201, { id, name: things.get(id) }, { location: `/api/things/${id}` }))
      }
      const thing = /^\/api\/things\/(.+)$/.exec(request.path)
      if (thing && things.has(thing[1])) return Effect.succeed(json(200, { id: thing[1], name: things.get(thing[1]) }, { etag: '"1"' }))
      return Effect.succeed(json(404, { error: "NotFound" }))
    }
  }

  const serve = async (handler: EdgeHandler<never>) => {
    const scope = Effect.runSync(Scope.make())
    const edge = await Effect.runPromise(
      Scope.extend(startEdge(handler, { host: "127.0.0.1", port: 0, bodyLimit: 1 << 20, requestTimeoutMs: 5_000, shutdownGraceMs: 100 }), scope)
    )
    return { url: edge.url, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
  }

  const request = (url: string, method: string, headers: Record<string, string> = {}, body = "") =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
      const req = http.request(url, { method, headers }, (res) => {
        let text = ""
        res.on("data", (c) => (text += c))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }))
      })
      req.on("error", reject)
      req.end(body)
    })

  /** Reads an SSE response until `events` events arrived, then hangs up. */
  const readEvents = (url: string, headers: Record<string, string>, events: number) =>
    new Promise<string>((resolve, reject) => {
      const req = http.get(url, { headers }, (res) => {
        let text = ""
        res.on("data", (c) => {
          text += c
          if (parseSse(text).length >= events) {
            req.destroy()
            resolve(text)
          }
        })
      })
      req.on("error", (e) => (e.message === "socket hang up" ? undefined : reject(e)))
    })

  const waitFor = async (check: () => boolean) => {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10))
  }

  it("writes a transcript that replays against a fresh server", async () => {
    const file = path.join(tempDir("wo-record-"), "session.http")
    const recording = await serve(recordTo(file, { app: "fake" })(makeHandler()))
    try {
      const init = await request(`${recording.url}/mcp`, "POST", { "content-type": "application/json", "user-agent": "x" }, '{"jsonrpc":"2.0","id":1,"method":"initialize"}')
      const session = init.headers["mcp-session-id"] as string
      await readEvents(`${recording.url}/mcp`, { "mcp-session-id": session, accept: "text/event-stream" }, 2)
      await waitFor(() => fs.readFileSync(file, "utf8").includes("GET /mcp"))
      await request(`${recording.url}/feed`, "GET")
      const created = await request(`${recording.url}/api/things`, "POST", { "content-type": "application/json" }, '{"name":"pen"}')
      const { id } = JSON.parse(created.text)
      await request(`${recording.url}/api/things/${id}`, "GET", { "if-match": '"1"' })
      await request(`${recording.url}/api/things`, "POST", { "content-type": "text/plain" }, "not json")
      await request(`${recording.url}/api/things/none`, "GET", { host: "evil.example" })
    } finally {
      await recording.close()
    }

    const text = fs.readFileSync(file, "utf8")
    expect(text).toMatch(/^# app: fake\n/)
    expect(text).toContain("### POST /mcp initialize\nPOST /mcp\ncontent-type: application/json\n\n{\n  \"jsonrpc\": \"2.0\",")
    expect(text).toContain("mcp-session-id: {{session}}")
    expect(text).toContain('--> 200\n# read: ')
    expect(text).toContain('"session": "{{session}}"')
    expect(text).toContain("event: a\ndata: 1\n\ndata: {\ndata:   \"done\": true\ndata: }\n")
    expect(text).toContain("location: /api/things/{{things_")
    expect(text).toMatch(/GET \/api\/things\/\{\{things_\w+\}\}\nif-match: "1"\n/)
    expect(text).toContain("content-type: text/plain\n\nnot json\n\n--> 415")
    expect(text).not.toContain("user-agent")
    expect(text).toContain("GET /api/things/none\nhost: evil.example\n") // only an unusual Host is kept
    expect(text.match(/^host:/gm)).toHaveLength(1)

    const transcript = parseTranscript(text)
    expect(transcript.exchanges.map((e) => e.title)).toEqual([
      "POST /mcp initialize",
      "GET /mcp",
      "GET /feed",
      "POST /api/things",
      expect.stringMatching(/^GET \/api\/things\/\w+$/),
      "POST /api/things",
      "GET /api/things/none"
    ])
    const fresh = await serve(makeHandler())
    try {
      const result = await replayTranscript(transcript, fresh.url)
      expect(result.failures).toEqual([])
      expect(result.vars.session).toMatch(/^[0-9a-f-]{36}$/)
    } finally {
      await fresh.close()
    }
  })

  it("appends to an existing file without its header, and never reuses a placeholder name", async () => {
    const file = path.join(tempDir("wo-record-"), "again.http")
    for (let run = 0; run < 2; run++) {
      const server = await serve(recordTo(file, { app: "fake" })(makeHandler()))
      try {
        await request(`${server.url}/mcp`, "POST", { "content-type": "application/json" }, "{}")
      } finally {
        await server.close()
      }
    }
    const text = fs.readFileSync(file, "utf8")
    expect(text.match(/# app:/g)).toHaveLength(1)
    expect(text).toContain("mcp-session-id: {{session}}")
    expect(text).toContain("mcp-session-id: {{session_2}}")
    expect(parseTranscript(text).exchanges).toHaveLength(2)
  })

  it("never fails a request because the file cannot be written", async () => {
    const handler = recordTo("/nonexistent-dir/x/y.http")(makeHandler())
    const response = await Effect.runPromise(
      handler({ method: "GET", path: "/nothing", query: new URLSearchParams(), headers: {}, body: Buffer.alloc(0), remoteAddress: "127.0.0.1" })
    )
    expect(response.status).toBe(404)
  })
})
