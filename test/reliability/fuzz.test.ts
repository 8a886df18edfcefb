/**
 * Fuzzing a live server (in-process, raw keep-alive HTTP) with fast-check: over 10,000 generated inputs, each
 * property run twice, with a fixed seed and with a random one (FUZZ_SEED=<n> repeats a random run; a failure
 * names its seed).
 *
 *  1. JSON-RPC envelopes for both eras: a valid request with exactly one fault (malformed JSON, a batch, too
 *     deep, not JSON-RPC, wrong Accept or Content-Type, too large, bad Host or Origin, mismatched Mcp-* headers,
 *     missing or unsupported _meta, session faults, unknown methods, notifications, huge and odd ids), whose
 *     answer the contract fixes exactly; plus inputs with only general invariants (duplicate keys, invalid
 *     UTF-8, random bytes and headers, other HTTP methods).
 *  2. Tool arguments generated from each tool's advertised inputSchema, valid or broken in one named place, over
 *     legacy MCP, modern MCP and REST; the expected outcome is computed from the rows before the call.
 *  3. Raw bytes on a socket: malformed request lines and headers.
 *
 * Invariants everywhere: the server keeps answering; every status is one the contract allows; /mcp answers are
 * JSON-RPC (403 and 413 included); the log moves by exactly one event for an accepted
 * write and not at all otherwise.
 */
import { Effect } from "effect"
import fc from "fast-check"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Rows } from "../../src/projections/rows/rows.ts"
import { makeFuzzClient, sendRawBytes, type FuzzAnswer, type FuzzRequest } from "../../testkit/fuzz-client.ts"
import { invalid, valid, type JsonSchema } from "../../testkit/json-schema-arb.ts"
import { canonical } from "../../testkit/log-reader.ts"
import { MCP_HEADERS, openSession } from "../../testkit/legacy-client.ts"
import { encodeHeaderValue } from "../../testkit/mcp.ts"
import { MODERN_META, MODERN_VERSION } from "../../testkit/modern-client.ts"
import { apps, http, startServer } from "../../testkit/server.ts"

const FIXED_SEED = 7_2026_0728
const RANDOM_SEED = process.env.FUZZ_SEED !== undefined ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31)
const RUNS = { envelope: [3600, 1400], tools: [3200, 1200], raw: [600, 200] } as const
const BODY_LIMIT = 16 * 1024
const MAX_DEPTH = 16
const ALLOWED = new Set([200, 202, 400, 401, 403, 404, 405, 406, 409, 412, 413, 415, 422, 429, 503])

type Server = Awaited<ReturnType<typeof startServer>>
interface Target {
  readonly name: "blog" | "pricing"
  readonly server: Server
  readonly session: string
  readonly client: ReturnType<typeof makeFuzzClient>
  readonly tools: ReadonlyArray<{ name: string; inputSchema: JsonSchema }>
  readonly type: string
}
const targets: Array<Target> = []
let casesRun = 0
const toolStats = { writes: 0, refused: 0, reads: 0 }
const rawStats = { answered: 0, silent: 0 }

const checkpoint = (t: Target) => t.server.runtime.runSync(Effect.map(Rows, (r) => r.checkpoint()))
const rowOf = (t: Target, id: string) => t.server.runtime.runSync(Effect.map(Rows, (r) => r.get(t.type, id)))

/** Runs the property with the fixed seed, then with the random one; a failure says which seed. */
const fuzz = async <A>(name: string, arb: fc.Arbitrary<A>, runs: readonly [number, number], property: (a: A) => Promise<void>) => {
  for (const [seed, numRuns] of [[FIXED_SEED, runs[0]], [RANDOM_SEED, runs[1]]] as const) {
    try {
      await fc.assert(fc.asyncProperty(arb, async (a) => {
        casesRun++
        await property(a)
      }), { seed, numRuns })
    } catch (e) {
      const hint = seed === RANDOM_SEED ? ` (FUZZ_SEED=${seed} repeats it)` : " (the fixed seed)"
      const cause = (e as Error).cause instanceof Error ? `\n${((e as Error).cause as Error).message}` : ""
      throw new Error(`fuzz "${name}" failed with seed ${seed}${hint}:\n${(e as Error).message}${cause}`)
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// The general invariants of an /mcp answer.

const fail = (why: string, c: { label?: string }, a: FuzzAnswer): never => {
  throw new Error(`${why} [${c.label}] -> ${a.status} ${JSON.stringify(a.headers["content-type"])} ${a.body.slice(0, 300)}`)
}

const isRpc = (m: any) =>
  m !== null && typeof m === "object" && m.jsonrpc === "2.0" &&
  (("method" in m && typeof m.method === "string") ||
    ("id" in m && (("result" in m) !== ("error" in m)) &&
      (!("error" in m) || (Number.isInteger(m.error?.code) && typeof m.error?.message === "string"))))

const checkMcpAnswer = (c: { label?: string; request?: FuzzRequest }, a: FuzzAnswer) => {
  if (!ALLOWED.has(a.status)) fail(`status ${a.status} is not in the contract`, c, a)
  if (a.status === 202) {
    if (a.body !== "") fail("202 with a body", c, a)
    return undefined
  }
  const type = String(a.headers["content-type"] ?? "")
  if (c.request?.method === "HEAD") return undefined // the answer to a GET, without its body
  if (type.startsWith("text/event-stream")) {
    if (a.status !== 200) fail("an SSE answer that is not 200", c, a)
    for (const data of a.events ?? []) if (!isRpc(JSON.parse(data))) fail(`SSE data that is not JSON-RPC: ${data}`, c, a)
    return undefined
  }
  if (type !== "application/json") fail("neither JSON nor SSE", c, a)
  let json: any
  try {
    json = JSON.parse(a.body)
  } catch {
    fail("a JSON content type with a body that is not JSON", c, a)
  }
  if (!isRpc(json) || "method" in json) fail("a JSON answer that is not a JSON-RPC response", c, a)
  return json
}

// ---------------------------------------------------------------------------------------------------------
// 1. Envelopes.

type Era = "legacy" | "modern"
interface Expect {
  readonly status: number
  readonly code?: number
  /** The id the error or result must carry (compared after JSON parsing). */
  readonly id?: unknown
  readonly plain?: string
}
interface Case {
  readonly label: string
  readonly target: number
  readonly request: FuzzRequest
  readonly expect?: Expect
}

interface Base {
  readonly method: string
  readonly params: Record<string, unknown>
  /** The Mcp-Name the modern era needs, when the method has one. */
  readonly name?: string
}

const uriArb = fc.oneof(
  fc.integer({ min: 1, max: 30 }).map((n) => `wo://articles/${n}`),
  fc.integer({ min: 1, max: 30 }).map((n) => `wo://products/${n}`),
  fc.constantFrom("wo://schema/articles", "wo://schema/products", "test://watched-resource", "wo://", "wo://articles/", "file:///etc/passwd", ""),
  fc.string({ maxLength: 10 })
)
const readOnlyCall = fc.tuple(fc.constantFrom("articles_list", "articles_get", "products_list", "products_get", "nope_tool"), fc.oneof(
  fc.record({ id: fc.oneof(fc.integer({ min: 1, max: 30 }).map(String), fc.string({ maxLength: 4 })) }),
  fc.record({ limit: fc.integer({ min: 1, max: 5 }) }, { requiredKeys: [] }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })
), fc.option(fc.oneof(fc.string({ maxLength: 4 }), fc.integer()), { nil: undefined })).map(([name, args, progressToken]): Base => ({
  method: "tools/call",
  params: { name, arguments: args, ...(progressToken === undefined ? {} : { _meta: { progressToken } }) },
  name
}))

const baseArb = (era: Era): fc.Arbitrary<Base> =>
  fc.oneof(
    { weight: 3, arbitrary: readOnlyCall },
    { weight: 2, arbitrary: fc.constantFrom<Base>({ method: "tools/list", params: {} }, { method: "resources/list", params: {} }, { method: "resources/templates/list", params: {} }) },
    { weight: 2, arbitrary: uriArb.map((uri): Base => ({ method: "resources/read", params: { uri }, name: uri })) },
    era === "legacy"
      ? { weight: 2, arbitrary: fc.tuple(fc.constantFrom("ping", "resources/subscribe", "resources/unsubscribe"), uriArb).map(([method, uri]): Base => ({ method, params: method === "ping" ? {} : { uri } })) }
      : { weight: 2, arbitrary: fc.oneof(
        { weight: 5, arbitrary: fc.constant<Base>({ method: "server/discover", params: {} }) },
        { weight: 1, arbitrary: fc.array(uriArb, { maxLength: 3 }).map((uris): Base => ({ method: "subscriptions/listen", params: { notifications: { resourceSubscriptions: uris } } })) }
      ) }
  )

const idArb = fc.oneof(fc.integer({ min: 0, max: 1000 }), fc.string({ minLength: 1, maxLength: 8 }))
const decodedName = (v: string) => (v.startsWith("=?base64?") ? Buffer.from(v.slice(9, -2), "base64").toString("utf8") : v)

/** Headers of a valid request of the era, with the name encoded as base64 when it is not plain ASCII. */
const headersOf = (era: Era, base: Base, session: string): Record<string, string> => {
  const h: Record<string, string> = { ...MCP_HEADERS }
  if (era === "legacy") Object.assign(h, { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" })
  else {
    h["mcp-protocol-version"] = MODERN_VERSION
    h["mcp-method"] = base.method
    if (base.name !== undefined) h["mcp-name"] = encodeHeaderValue(base.name)
  }
  return h
}

const messageOf = (era: Era, base: Base, id: unknown): Record<string, unknown> => ({
  jsonrpc: "2.0",
  id,
  method: base.method,
  params: era === "modern" ? { ...base.params, _meta: { ...((base.params._meta as object) ?? {}), ...MODERN_META } } : base.params
})

/** The id a refusal must carry: the message's id when it is a string or a finite number, else null. */
const usableId = (m: unknown) => {
  const id = (m as { id?: unknown } | null)?.id
  return typeof id === "string" || (typeof id === "number" && Number.isFinite(id)) ? id : null
}
const nest = (depth: number): unknown => (depth === 0 ? 1 : depth % 2 ? [nest(depth - 1)] : { a: nest(depth - 1) })

type Fault = (era: Era, base: Base, id: unknown, headers: Record<string, string>) => fc.Arbitrary<{ label: string; body: Buffer; headers: Record<string, string | Array<string>>; expect?: Expect; method?: string }>
const json = (v: unknown) => Buffer.from(JSON.stringify(v))

const faults: Record<string, { eras: ReadonlyArray<Era>; weight: number; make: Fault }> = {
  none: {
    eras: ["legacy", "modern"],
    weight: 4,
    make: (era, base, id, headers) => fc.constant({ label: "valid", body: json(messageOf(era, base, id)), headers, expect: { status: 200, id } })
  },
  malformed: {
    eras: ["legacy", "modern"],
    weight: 3,
    make: (era, base, id, headers) => {
      const text = JSON.stringify(messageOf(era, base, id))
      return fc.oneof(
        fc.integer({ min: 0, max: text.length - 1 }).map((cut) => text.slice(0, cut)),
        fc.constantFrom("{", "nul", "{'jsonrpc':'2.0'}", "{\"id\":1,}", "{\"a\":}", "\u0000", "NaN", "{\"jsonrpc\":\"2.0\" \"id\":1}", "\"unterminated", "{}{}", "[1,]")
      ).map((body) => ({ label: "malformed", body: Buffer.from(body), headers, expect: { status: 400, code: -32700, id: null } }))
    }
  },
  batch: {
    eras: ["legacy", "modern"],
    weight: 1,
    make: (era, base, id, headers) =>
      fc.constantFrom(0, 1, 2).map((n) => ({ label: `batch of ${n}`, body: json(Array(n).fill(messageOf(era, base, id))), headers, expect: { status: 400, code: -32600, id: null } }))
  },
  deep: {
    eras: ["legacy", "modern"],
    weight: 1,
    make: (era, base, id, headers) =>
      fc.integer({ min: MAX_DEPTH - 1, max: MAX_DEPTH + 40 }).map((d) => ({
        label: `params nested ${d} more`,
        body: json(messageOf(era, { ...base, params: { ...base.params, deep: nest(d) } }, id)),
        headers,
        expect: { status: 400, code: -32600, id: null }
      }))
  },
  notRpc: {
    eras: ["legacy", "modern"],
    weight: 3,
    make: (era, base, id, headers) => {
      const m = messageOf(era, base, id)
      return fc.oneof(
        fc.constantFrom("1.0", 2, null, "2.0 ", undefined).map((v) => ({ ...m, jsonrpc: v })),
        fc.constantFrom(null, true, {}, [], [1]).map((v) => ({ ...m, id: v })),
        fc.constantFrom(1, null, {}, [], true).map((v) => ({ ...m, method: v })),
        fc.constantFrom([], "x", 1, null, true, [{ a: 1 }]).map((v) => ({ ...m, params: v })),
        fc.constant({ jsonrpc: "2.0", id }),
        fc.constantFrom(1, "x", null, true).map((v) => v)
      ).map((bad) => ({ label: `not JSON-RPC: ${JSON.stringify(bad).slice(0, 80)}`, body: json(bad), headers, expect: { status: 400, code: -32600, id: usableId(bad) } }))
    }
  },
  accept: {
    eras: ["legacy", "modern"],
    weight: 1,
    make: (era, base, id, headers) =>
      fc.constantFrom("application/json", "text/event-stream", "text/html", "application/xml, text/plain", "application/json;q=1", "").map((accept) => ({
        label: `Accept: ${accept}`,
        body: json(messageOf(era, base, id)),
        headers: { ...headers, accept },
        expect: { status: 406, code: -32600, id: null }
      }))
  },
  contentType: {
    eras: ["legacy", "modern"],
    weight: 1,
    make: (era, base, id, headers) =>
      fc.constantFrom("text/plain", "application/x-www-form-urlencoded", "multipart/form-data", "application/jsonp", "json", undefined).map((type) => {
        const { "content-type": _dropped, ...rest } = headers
        return {
          label: `Content-Type: ${type}`,
          body: json(messageOf(era, base, id)),
          headers: type === undefined ? rest : { ...rest, "content-type": type },
          expect: { status: 415, code: -32600, id: null }
        }
      })
  },
  tooLarge: {
    eras: ["legacy", "modern"],
    weight: 1,
    make: (era, base, id, headers) =>
      fc.integer({ min: 1, max: 5000 }).map((extra) => ({
        label: `body over the limit by about ${extra}`,
        body: json(messageOf(era, { ...base, params: { ...base.params, pad: "x".repeat(BODY_LIMIT + extra) } }, id)),
        headers,
        expect: { status: 413, code: -32600, id: null }
      }))
  },
  hostOrOrigin: {
    eras: ["legacy", "modern"],
    weight: 1,
    make: (era, base, id, headers) =>
      fc.oneof(
        fc.constantFrom("evil.example", "127.0.0.1.nip.io", "localhost.evil", "[::2]:80").map((host) => ({ host })),
        fc.constantFrom("http://evil.example", "null", "https://localhost.evil", "http://127.0.0.1.nip.io:80").map((origin) => ({ origin }))
      ).map((h) => ({ label: `bad ${JSON.stringify(h)}`, body: json(messageOf(era, base, id)), headers: { ...headers, ...h }, expect: { status: 403, code: -32600, id: null } }))
  },
  mirror: {
    eras: ["modern"],
    weight: 3,
    make: (era, base, id, headers) => {
      const body = json(messageOf(era, base, id))
      const options: Array<fc.Arbitrary<Record<string, string | undefined>>> = [
        // (Not surrounding whitespace: HTTP trims it from header values, so it is no mismatch.)
        fc.constantFrom(undefined, "tools/lis", base.method.toUpperCase(), `${base.method}/`, "server/discover").filter((v) => v !== base.method).map((v) => ({ "mcp-method": v })),
        fc.constantFrom(undefined, "2025-11-25", "2026-07-29", "2026-07-28,2026-07-28").map((v) => ({ "mcp-protocol-version": v }))
      ]
      if (base.name !== undefined) {
        const name = base.name
        options.push(fc.constantFrom(undefined, encodeHeaderValue(`${name}x`), "=?base64?%%%?=", "=?base64?YWJj?=", encodeHeaderValue(`${name} `))
          .filter((v) => v === undefined || v.startsWith("=?base64?%") || decodedName(v) !== name)
          .map((v) => ({ "mcp-name": v })))
      }
      return fc.oneof(...options).map((patch) => {
        const h: Record<string, string> = { ...headers }
        for (const [k, v] of Object.entries(patch)) if (v === undefined) delete h[k]
        else h[k] = v
        return { label: `mirror ${JSON.stringify(patch)}`, body, headers: h, expect: { status: 400, code: -32020, id } }
      })
    }
  },
  modernMeta: {
    eras: ["modern"],
    weight: 2,
    make: (_era, base, id, headers) =>
      fc.oneof(
        fc.constantFrom("2099-01-01", "2025-11-25x", "").map((v) => ({
          label: `unsupported version ${v}`,
          body: json({ jsonrpc: "2.0", id, method: base.method, params: { ...base.params, _meta: { ...MODERN_META, "io.modelcontextprotocol/protocolVersion": v } } }),
          headers: { ...headers, "mcp-protocol-version": v },
          expect: { status: 400, code: -32022, id }
        })),
        fc.constantFrom(undefined, null, "caps", 1).map((caps) => ({
          label: `clientCapabilities ${caps}`,
          body: json({ jsonrpc: "2.0", id, method: base.method, params: { ...base.params, _meta: { "io.modelcontextprotocol/protocolVersion": MODERN_VERSION, ...(caps === undefined ? {} : { "io.modelcontextprotocol/clientCapabilities": caps }) } } }),
          headers,
          expect: { status: 400, code: -32602, id }
        })),
        fc.constantFrom("initialize", "ping", "logging/setLevel", "prompts/list", "resources/subscribe", "tools/cal").map((method) => ({
          label: `modern unknown method ${method}`,
          body: json({ jsonrpc: "2.0", id, method, params: { _meta: MODERN_META } }),
          headers: { ...headers, "mcp-method": method },
          expect: { status: 404, code: -32601, id }
        }))
      )
  },
  session: {
    eras: ["legacy"],
    weight: 2,
    make: (era, base, id, headers) => {
      const body = json(messageOf(era, base, id))
      return fc.oneof(
        fc.constant({ label: "no session", body, headers: { ...headers, "mcp-session-id": undefined as unknown as string }, expect: { status: 400, code: -32600, id } }),
        fc.string({ minLength: 1, maxLength: 30 }).filter((s) => /^[\x21-\x7e]+$/.test(s)).map((sid) => ({ label: `unknown session ${sid}`, body, headers: { ...headers, "mcp-session-id": sid }, expect: { status: 404, code: -32600, id } })),
        fc.constantFrom("2024-11-05", "garbage", "2025-11-26").map((v) => ({ label: `legacy version ${v}`, body, headers: { ...headers, "mcp-protocol-version": v }, expect: { status: 400, code: -32600, id } })),
        fc.constantFrom("tools/cal", "server/discover", "subscriptions/listen", "prompts/list", "").map((method) => ({
          label: `legacy unknown method ${method}`,
          body: json({ jsonrpc: "2.0", id, method, params: {} }),
          headers,
          expect: { status: 200, code: -32601, id }
        }))
      )
    }
  },
  notification: {
    eras: ["legacy", "modern"],
    weight: 2,
    make: (era, base, id, headers) =>
      fc.oneof(
        fc.constant(() => {
          const { id: _id, ...note } = messageOf(era, base, id)
          return note
        }),
        fc.constant(() => ({ jsonrpc: "2.0", id, result: {} })),
        fc.constant(() => ({ jsonrpc: "2.0", id: null, error: { code: -1, message: "x" } })),
        fc.constant(() => ({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 1 } }))
      ).map((make) => ({ label: `notification or response ${JSON.stringify(make()).slice(0, 60)}`, body: json(make()), headers, expect: { status: 202 } }))
  },
  oddId: {
    eras: ["legacy", "modern"],
    weight: 2,
    make: (era, base, _id, headers) =>
      fc.oneof(
        fc.constantFrom("1e300", "-1e300", "9007199254740993", "123456789012345678901234567890", "0", "-0", "1.5", "1E2", "-7"),
        fc.constantFrom("", "x".repeat(2000), "é✓🙂", "\u0000", "\ud83d").map((s) => JSON.stringify(s)),
        fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n))
      ).map((idText) => {
        const text = JSON.stringify(messageOf(era, base, "__ID__")).replace('"__ID__"', idText)
        return { label: `id ${idText.slice(0, 40)}`, body: Buffer.from(text), headers, expect: { status: 200, id: JSON.parse(text).id } }
      })
  },
  // Only the general invariants below.
  duplicateKeys: {
    eras: ["legacy", "modern"],
    weight: 1,
    make: (era, base, id, headers) =>
      fc.constantFrom(`"id":"first",`, `"method":"nope",`, `"jsonrpc":"1.0",`, `"params":[],`, `"id":{},`).map((dup) => ({
        label: `duplicate key ${dup}`,
        body: Buffer.from(JSON.stringify(messageOf(era, base, id)).replace(/^\{/, `{${dup}`)),
        headers
      }))
  },
  invalidUtf8: {
    eras: ["legacy", "modern"],
    weight: 1,
    make: (era, base, id, headers) => {
      const text = JSON.stringify(messageOf(era, base, id))
      return fc.tuple(
        fc.constantFrom([0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82], [0xfe, 0xff]),
        fc.integer({ min: 0, max: text.length })
      ).map(([bytes, at]) => ({
        label: `invalid UTF-8 ${bytes.map((b) => b.toString(16)).join(" ")} at ${at}`,
        body: Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from(bytes), Buffer.from(text.slice(at))]),
        headers
      }))
    }
  },
  randomBody: {
    eras: ["legacy", "modern"],
    weight: 1,
    make: (_era, _base, _id, headers) =>
      fc.oneof(
        fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
        fc.jsonValue({ maxDepth: 4 }).map((v) => json(v)),
        fc.record({ jsonrpc: fc.constant("2.0"), id: fc.jsonValue({ maxDepth: 1 }), method: fc.string({ maxLength: 12 }), params: fc.jsonValue({ maxDepth: 3 }) }, { requiredKeys: [] }).map((v) => json(v))
      ).map((body) => ({ label: `random body ${body.toString("hex").slice(0, 60)}`, body, headers }))
  },
  otherMethod: {
    eras: ["legacy", "modern"],
    weight: 1,
    make: (era, base, id, headers) =>
      fc.tuple(fc.constantFrom("GET", "DELETE", "PUT", "PATCH", "OPTIONS", "HEAD"), fc.boolean()).map(([method, keepSession]) => {
        const h: Record<string, string> = { ...headers, accept: method === "GET" ? "text/event-stream" : headers.accept }
        // Never end the shared session: a DELETE goes out with a session id of its own.
        if (method === "DELETE" || !keepSession) h["mcp-session-id"] = "not-a-session"
        return { label: `${method} /mcp (${era})`, method, body: method === "GET" || method === "HEAD" ? Buffer.alloc(0) : json(messageOf(era, base, id)), headers: h }
      })
  }
}

const caseArb: fc.Arbitrary<Case> = fc.oneof(
  ...(["legacy", "modern"] as const).flatMap((era) =>
    Object.entries(faults).filter(([, f]) => f.eras.includes(era)).map(([, f]) => ({
      weight: f.weight,
      arbitrary: fc.tuple(fc.nat(1), baseArb(era), idArb, fc.boolean()).chain(([target, base, id, upper]) => {
        const t = targets[target]
        return f.make(era, base, id, headersOf(era, base, t.session)).map((made): Case => {
          // Header names are case-insensitive: sometimes send them upper-cased.
          const headers = Object.fromEntries(Object.entries(made.headers).filter(([, v]) => v !== undefined).map(([k, v]) => [upper ? k.toUpperCase() : k, v])) as Record<string, string>
          const listen = base.method === "subscriptions/listen" || made.method === "GET"
          return {
            label: `${era} ${base.method}: ${made.label}`,
            target,
            request: { method: made.method ?? "POST", path: "/mcp", headers, body: made.body, sseIdleMs: listen ? 30 : 1000 },
            expect: made.expect
          }
        })
      })
    })))
)

// ---------------------------------------------------------------------------------------------------------
// 2. Tool arguments against the generated schemas.

type Transport = "legacy" | "modern" | "rest"
interface ToolCase {
  readonly target: number
  readonly tool: string
  readonly transport: Transport
  readonly args: Record<string, unknown>
  readonly broken?: string
}

const rowIds = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 40 }).map(String) },
  { weight: 1, arbitrary: fc.constantFrom("0", "999999", "-1", "01", "abc") },
  { weight: 1, arbitrary: fc.string({ maxLength: 5 }) }
)

const restExpressible = (op: string, c: ToolCase) =>
  typeof c.args === "object" && c.args !== null && !Array.isArray(c.args) &&
  (c.args.id === undefined || (typeof c.args.id === "string" && /^[0-9a-z-]+$/.test(c.args.id))) &&
  (c.broken === undefined || (!["list", "get", "delete"].includes(op) && !/^arguments(\.(id|expectedVersion|cursor|limit)\b|:)/.test(c.broken)))

const toolCaseArb = (): fc.Arbitrary<ToolCase> =>
  fc.oneof(
    ...targets.flatMap((t, target) =>
      t.tools.map((tool) => {
        const overrides = { byName: { id: rowIds } }
        const op = opOf(t, tool.name)
        const transports: Array<Transport> = ["legacy", "modern", ...(["list", "get", "create", "update", "delete", "set_price"].includes(op) ? ["rest" as const] : [])]
        return {
          weight: op === "create" ? 4 : op === "list" || op === "get" ? 1 : 3,
          arbitrary: fc.tuple(
            fc.constantFrom(...transports),
            fc.oneof(
              { weight: 3, arbitrary: valid(tool.inputSchema, overrides).map((args) => ({ args: args as Record<string, unknown>, broken: undefined as string | undefined })) },
              { weight: 2, arbitrary: invalid(tool.inputSchema, overrides).map((b) => ({ args: b.value as Record<string, unknown>, broken: b.why })) }
            )
          ).map(([transport, { args, broken }]) => ({ target, tool: tool.name, transport, args, broken }))
            // REST carries the id in the path, expectedVersion in If-Match and list's arguments in the query, and a
            // delete has no body: only faults in a body map onto it.
            .filter((c) => c.transport !== "rest" || restExpressible(op, c))
        }
      })
    )
  )

/** Sends a tool case over its transport; returns the outcome in one shape. */
const sendTool = async (t: Target, c: ToolCase): Promise<{ ok: boolean; body: any; answer: FuzzAnswer }> => {
  const op = c.tool.slice(t.type.length + 1)
  if (c.transport === "rest") {
    const { id, expectedVersion, cursor, limit, ...fields } = c.args as Record<string, any>
    const ifMatch: Record<string, string> = expectedVersion === undefined ? {} : { "if-match": `"${expectedVersion}"` }
    const base = `/api/${t.type}`
    const request: FuzzRequest =
      op === "list"
        ? { method: "GET", path: `${base}?${new URLSearchParams({ ...(cursor !== undefined ? { cursor: String(cursor) } : {}), ...(limit !== undefined ? { limit: String(limit) } : {}) })}`, headers: {} }
        : op === "get"
        ? { method: "GET", path: `${base}/${id}`, headers: {} }
        : op === "create"
        ? { method: "POST", path: base, headers: { "content-type": "application/json" }, body: json(c.args) }
        : op === "update"
        ? { method: "PATCH", path: `${base}/${id}`, headers: { "content-type": "application/json", ...ifMatch }, body: json(fields) }
        : op === "delete"
        ? { method: "DELETE", path: `${base}/${id}`, headers: ifMatch }
        : { method: "POST", path: `${base}/${id}/${op}`, headers: { "content-type": "application/json", ...ifMatch }, body: json(fields) }
    const answer = await t.client.send(request)
    if (!ALLOWED.has(answer.status) && answer.status !== 201) fail(`REST status ${answer.status}`, { label: JSON.stringify(c) }, answer)
    const body = answer.body ? JSON.parse(answer.body) : undefined
    return { ok: answer.status === 200 || answer.status === 201, body, answer }
  }
  const era: Era = c.transport
  const base: Base = { method: "tools/call", params: { name: c.tool, arguments: c.args }, name: c.tool }
  const answer = await t.client.send({ method: "POST", path: "/mcp", headers: headersOf(era, base, t.session), body: json(messageOf(era, base, 1)) })
  const rpc = checkMcpAnswer({ label: JSON.stringify(c) }, answer)
  // `arguments` that is not an object is a malformed tools/call: a protocol error, -32602.
  if (typeof c.args !== "object" || c.args === null || Array.isArray(c.args)) {
    if (answer.status !== 200 || rpc?.error?.code !== -32602) fail("arguments that are not an object must get -32602", { label: JSON.stringify(c) }, answer)
    return { ok: false, body: rpc.error, answer }
  }
  if (answer.status !== 200 || rpc?.result === undefined) fail("a tools/call must be answered with a result", { label: JSON.stringify(c) }, answer)
  const result = rpc.result
  if (result.isError === true) {
    if (typeof result.content?.[0]?.text !== "string" || result.content[0].text === "") fail("isError without a message", { label: JSON.stringify(c) }, answer)
    return { ok: false, body: result, answer }
  }
  return { ok: true, body: result.structuredContent, answer }
}

/** The operation a tool runs: `list`, `get`, `create`, ..., a method's name, or `view` for a view's read tool. */
const opOf = (t: Target, tool: string) => (tool.startsWith("view_") ? "view" : tool.slice(t.type.length + 1))
const READS = ["list", "get", "view"]

/** What must happen, from the row as it is before the call. */
const expectedOutcome = (t: Target, c: ToolCase): { ok: boolean | "either"; row?: Record<string, unknown> | null } => {
  const op = opOf(t, c.tool)
  const mutating = !READS.includes(op)
  if (c.broken !== undefined) return { ok: mutating ? false : "either" }
  const a = c.args as Record<string, any>
  const row = typeof a.id === "string" ? rowOf(t, a.id) : undefined
  const versionOk = row !== undefined && (a.expectedVersion === undefined || a.expectedVersion === row.version)
  const { id: _id, expectedVersion: _ev, ...fields } = a
  switch (op) {
    case "list":
      return { ok: a.cursor === undefined ? true : "either" }
    case "view":
      return { ok: true }
    case "get":
      return row === undefined ? { ok: false } : { ok: true, row }
    case "create":
      return { ok: true }
    case "update":
      return versionOk && Object.keys(fields).length > 0 ? { ok: true, row: { ...row, ...fields, version: row!.version + 1 } } : { ok: false }
    case "delete":
      return versionOk ? { ok: true, row: null } : { ok: false }
    default: // a method: set_price
      return versionOk && typeof a.price === "number" && a.price > 0 ? { ok: true, row: { ...row, price: a.price, version: row!.version + 1 } } : { ok: false }
  }
}

// ---------------------------------------------------------------------------------------------------------
// 3. Raw bytes.

const rawArb = fc.tuple(
  fc.oneof(
    fc.constantFrom("POST /mcp HTTP/1.1", "GET /api/articles HTTP/1.1", "POST /api/articles HTTP/1.1", "DELETE /mcp HTTP/1.1"),
    fc.constantFrom("POST /mcp HTTP/9.9", "POST  /mcp HTTP/1.1", "post /mcp HTTP/1.1", "BREW /mcp HTTP/1.1", "POST /mcp", "/mcp HTTP/1.1", "POST /m\u0000cp HTTP/1.1", `GET /${"a".repeat(3000)} HTTP/1.1`, "GET http://evil.example/mcp HTTP/1.1"),
    fc.string({ maxLength: 30 }).filter((s) => !/[\r\n]/.test(s))
  ),
  fc.array(fc.oneof(
    fc.constantFrom("Host: 127.0.0.1", "Content-Type: application/json", "Accept: application/json, text/event-stream", "Mcp-Session-Id: x", "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/list"),
    fc.constantFrom("X-Bad Header: 1", "NoColon", "Content-Length: -1", "Content-Length: abc", "Content-Length: 1\r\nContent-Length: 2", "Transfer-Encoding: chunked\r\nContent-Length: 3", "Transfer-Encoding: gzip", " folded: continuation", "X: \u007f\u0001", "Host: a\r\nHost: b", ": empty-name"),
    fc.string({ maxLength: 20 }).filter((s) => !/[\r\n]/.test(s))
  ), { maxLength: 5 }),
  fc.oneof(fc.constant(""), fc.constant("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"), fc.string({ maxLength: 40 }), fc.constant("zz\r\nxx\r\n0\r\n\r\n"))
).map(([line, headers, body]) => {
  // Content-Length never promises more than is sent, and the connection closes after the answer, so nothing waits.
  const te = headers.some((h) => /transfer-encoding: chunked/i.test(h))
  const cl = headers.some((h) => /content-length/i.test(h))
  const text = `${line}\r\n${headers.join("\r\n")}${headers.length ? "\r\n" : ""}${te || cl ? "" : `Content-Length: ${Buffer.byteLength(body)}\r\n`}Connection: close\r\n\r\n${te ? "zz\r\n" : body}`
  return Buffer.from(text, "latin1")
})

// ---------------------------------------------------------------------------------------------------------

describe("fuzzing a live server (fast-check)", () => {
  beforeAll(async () => {
    for (const [name, app, type] of [["blog", apps.blog, "articles"], ["pricing", apps.pricing, "products"]] as const) {
      const server = await startServer(app, { bodyLimit: BODY_LIMIT, maxJsonDepth: MAX_DEPTH, requestTimeoutMs: 2000 })
      const session = await openSession(server.url)
      const listed = await http(`${server.url}/mcp`, {
        method: "POST",
        headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" },
        body: { jsonrpc: "2.0", id: 1, method: "tools/list" }
      })
      targets.push({ name, server, session, client: makeFuzzClient(server.url), tools: listed.json.result.tools, type })
    }
    // Rows for the ids the generators aim at.
    for (let i = 0; i < 20; i++) {
      await http(`${targets[0].server.url}/api/articles`, { method: "POST", body: { title: `a${i}`, body: "b", status: "draft", tags: [], author: { name: "A" } } })
      await http(`${targets[1].server.url}/api/products`, { method: "POST", body: { name: `p${i}`, price: i + 1, currency: "EUR" } })
    }
  })
  afterAll(async () => {
    console.log(`fuzz: ${casesRun} generated inputs (seeds ${FIXED_SEED} fixed, ${RANDOM_SEED} random); tool calls: ` +
      `${toolStats.writes} accepted writes, ${toolStats.reads} reads, ${toolStats.refused} refused; raw: ${rawStats.answered} answered, ${rawStats.silent} closed without an answer`)
    for (const t of targets) {
      t.client.close()
      await t.server.close()
    }
  })

  it("JSON-RPC envelopes and headers, both eras: the contract's answer, and no state change", async () => {
    await fuzz("envelopes", caseArb, RUNS.envelope, async (c) => {
      const t = targets[c.target]
      const before = checkpoint(t)
      const answer = await t.client.send(c.request)
      const body = checkMcpAnswer(c, answer)
      if (checkpoint(t) !== before) fail(`the log moved (${before} -> ${checkpoint(t)}) on an input that writes nothing`, c, answer)
      const e = c.expect
      if (e === undefined) return
      if (answer.status !== e.status) fail(`expected status ${e.status}`, c, answer)
      if (e.plain !== undefined && body?.error !== e.plain) fail(`expected a plain ${e.plain} error`, c, answer)
      if (e.code !== undefined && body?.error?.code !== e.code) fail(`expected error code ${e.code}`, c, answer)
      if ("id" in e && e.status !== 202) {
        const response = body ?? (answer.events ?? []).map((d) => JSON.parse(d)).find((m) => "id" in m && !("method" in m))
        // A listen stream has no response until it ends; it was cut while open.
        if (response === undefined && !answer.cut) fail("a stream that ended without a response", c, answer)
        if (response !== undefined && canonical(response.id) !== canonical(e.id)) fail(`expected id ${JSON.stringify(e.id)}, got ${JSON.stringify(response.id)}`, c, answer)
      }
    })
  })

  it("tool arguments generated from each inputSchema, over legacy, modern and REST: exactly the valid ones write", async () => {
    await fuzz("tool arguments", toolCaseArb(), RUNS.tools, async (c) => {
      const t = targets[c.target]
      const op = opOf(t, c.tool)
      const expected = expectedOutcome(t, c)
      const before = checkpoint(t)
      const { ok, body, answer } = await sendTool(t, c)
      const moved = checkpoint(t) - before
      const label = { label: `${c.transport} ${c.tool} ${JSON.stringify(c.args)}${c.broken ? ` broken at ${c.broken}` : ""}` }
      if (expected.ok !== "either" && ok !== expected.ok) fail(expected.ok ? "a valid call was refused" : "an invalid or impossible call was accepted", label, answer)
      const mutating = !READS.includes(op)
      if (moved !== (ok && mutating ? 1 : 0)) fail(`the log moved by ${moved}`, label, answer)
      toolStats[!ok ? "refused" : mutating ? "writes" : "reads"]++
      if (!ok) {
        if (c.transport === "rest" && ![400, 404, 409, 412, 422].includes(answer.status)) fail("a REST refusal must be 400, 404, 409, 412 or 422", label, answer)
        return
      }
      if (op === "create") {
        const created = rowOf(t, String(body.id))
        const { id: _i, version, ...fields } = created ?? {}
        if (version !== 1 || canonical(fields) !== canonical(c.args)) fail(`created ${canonical(created)} from ${canonical(c.args)}`, label, answer)
        if (canonical(body) !== canonical(created)) fail("the answer is not the stored row", label, answer)
      } else if (op === "get" || (mutating && op !== "delete")) {
        if (canonical(body) !== canonical(expected.row)) fail(`answered ${canonical(body)}, expected ${canonical(expected.row)}`, label, answer)
        if (mutating && canonical(rowOf(t, String(c.args.id))) !== canonical(expected.row)) fail("the stored row is not the answer", label, answer)
      } else if (op === "delete") {
        if (rowOf(t, String(c.args.id)) !== undefined || body.deleted !== true) fail("the row is still there", label, answer)
        // Keep rows to aim at: put one back (ids are never reused, so at a new id).
        const again = t.type === "articles" ? { title: "again", body: "b", status: "draft", tags: [], author: { name: "A" } } : { name: "again", price: 1, currency: "USD" }
        if ((await http(`${t.server.url}/api/${t.type}`, { method: "POST", body: again })).status !== 201) throw new Error("cannot put a row back")
      }
    })
  })

  it("raw bytes: malformed request lines and headers get 400 (or a contract status) and the server stays up", async () => {
    const t = targets[0]
    await fuzz("raw bytes", rawArb, RUNS.raw, async (bytes) => {
      const { text } = await sendRawBytes(t.server.url, bytes, 1500)
      rawStats[text === "" ? "silent" : "answered"]++
      for (const m of text.matchAll(/HTTP\/1\.1 (\d{3})/g)) {
        if (!ALLOWED.has(Number(m[1]))) throw new Error(`status ${m[1]} for ${JSON.stringify(bytes.toString("latin1")).slice(0, 200)}: ${text.slice(0, 200)}`)
      }
    })
  })

  it("afterwards, both servers still answer, reads and writes, and the fuzz ran over 10,000 inputs", async () => {
    for (const t of targets) {
      expect((await http(`${t.server.url}/healthz`)).status).toBe(200)
      const list = await http(`${t.server.url}/api/${t.type}`)
      expect(list.status).toBe(200)
      const id = list.json.items[0].id
      const write = t.type === "articles"
        ? await http(`${t.server.url}/api/articles/${id}`, { method: "PATCH", body: { title: "still here" } })
        : await http(`${t.server.url}/api/products/${id}/set_price`, { method: "POST", body: { price: 3 } })
      expect(write.status).toBe(200)
    }
    expect(casesRun).toBeGreaterThanOrEqual(10_000)
  })
})
