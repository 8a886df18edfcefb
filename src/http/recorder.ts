/**
 * The exchange recorder behind `WO_RECORD` (`wo run --record`): it wraps the edge handler and appends every
 * exchange to a transcript file in the format `wo test` replays (docs/transcripts.md). A bug seen with a real
 * client thereby becomes a regression test: move the file into the app's transcripts/ (this project's:
 * test/transcripts/), trim it, give the exchanges titles.
 *
 * Values the server generates are written as placeholders so the replay captures them instead of pinning them:
 * an `mcp-session-id` becomes `{{session}}` (wherever that value reappears: headers, whole JSON strings), and a
 * row announced by a `location: /api/<type>/<id>` header becomes `{{<type>_<id>}}` in that header, in later
 * `/api/<type>/<id>` paths, and as the `id` of JSON bodies on `/api/<type>...`. Anything else stays literal.
 *
 * Exchanges are written when they complete (a stream when it ends or its client goes away), so concurrent
 * exchanges appear in completion order. This is a debug feature: one synchronous append per exchange.
 */
import { Effect, Stream } from "effect"
import * as fs from "node:fs"
import type { EdgeHandler } from "./edge.ts"
import type { EdgeRequest, EdgeResponse, Headers } from "./edge-types.ts"
import type { PushSink } from "./push-sink.ts"

/** Request headers a replay needs; the replayer supplies Content-Length, and Host unless it was unusual. */
const REQUEST_HEADERS = [
  "content-type",
  "accept",
  "mcp-session-id",
  "mcp-protocol-version",
  "mcp-method",
  "mcp-name",
  "last-event-id",
  "if-match",
  "origin"
]

/** Response headers worth asserting on; volatile ones (date, keep-alive) would only make noise. */
const RESPONSE_HEADERS = ["content-type", "location", "mcp-session-id", "allow", "etag"]

// ---------------------------------------------------------------------------------------------------------------
// SSE text, shared with the replayer so both sides agree on what an event is.

/** One server-sent event. A block holding only comment lines is a comment event (e.g. `: heartbeat`). */
export interface SseEvent {
  readonly comment?: string
  readonly id?: string
  readonly event?: string
  readonly retry?: string
  /** The data lines joined with "\n", as an EventSource delivers them. */
  readonly data?: string
}

const SSE_FIELDS = new Set(["id", "event", "retry", "data"])

const parseSseBlock = (block: string): SseEvent | undefined => {
  const comments: Array<string> = []
  const fields: Record<string, string> = {}
  const data: Array<string> = []
  for (const line of block.split("\n")) {
    if (line === "") continue
    if (line.startsWith(":")) {
      comments.push(line.slice(1).replace(/^ /, ""))
      continue
    }
    const colon = line.indexOf(":")
    const name = colon === -1 ? line : line.slice(0, colon)
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "")
    if (name === "data") data.push(value)
    else if (SSE_FIELDS.has(name)) fields[name] = value
  }
  if (data.length > 0) fields.data = data.join("\n")
  if (Object.keys(fields).length > 0) return fields
  return comments.length > 0 ? { comment: comments.join("\n") } : undefined
}

/** Splits SSE text into complete events; `rest` is the unterminated tail (the start of the next event). */
export const splitSseEvents = (text: string): { readonly events: ReadonlyArray<SseEvent>; readonly rest: string } => {
  const blocks = text.replace(/\r\n/g, "\n").split("\n\n")
  const rest = blocks.pop() ?? ""
  return { events: blocks.flatMap((b) => parseSseBlock(b) ?? []), rest }
}

const prettyIfJson = (text: string, transform: (value: unknown) => unknown = (v) => v) => {
  try {
    return JSON.stringify(transform(JSON.parse(text)), null, 2)
  } catch {
    return text
  }
}

/** An event as transcript text; JSON data is pretty-printed over several `data:` lines (they rejoin losslessly). */
export const formatSseEvent = (event: SseEvent, transform?: (value: unknown) => unknown): string => {
  const lines: Array<string> = []
  if (event.comment !== undefined) lines.push(...event.comment.split("\n").map((c) => `: ${c}`))
  for (const name of ["id", "event", "retry"] as const) {
    if (event[name] !== undefined) lines.push(`${name}: ${event[name]}`)
  }
  if (event.data !== undefined) lines.push(...prettyIfJson(event.data, transform).split("\n").map((d) => `data: ${d}`))
  return lines.join("\n")
}

// ---------------------------------------------------------------------------------------------------------------
// Placeholders for generated values.

const PLACEHOLDER_NAME = /\{\{([A-Za-z_][\w.-]*)\}\}/g

/** Names the recording has given to generated values; names already in the file are never reused. */
class GeneratedValues {
  private readonly names = new Map<string, string>()
  constructor(private readonly taken: Set<string>) {}

  /** The placeholder for `key`, naming it `base` (or `base_2`, ...) the first time. */
  name(key: string, base: string): string {
    const known = this.names.get(key)
    if (known !== undefined) return known
    let name = base
    for (let n = 2; this.taken.has(name); n++) name = `${base}_${n}`
    this.taken.add(name)
    this.names.set(key, name)
    return name
  }

  lookup(key: string): string | undefined {
    return this.names.get(key)
  }
}

const sessionKey = (value: string) => `session:${value}`
const rowKey = (type: string, id: string) => `row:${type}/${id}`
const placeholder = (name: string) => `{{${name}}}`

const safeDecode = (segment: string) => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

/** `/api/<type>/<id>/...` with a known row id replaced by its placeholder. */
const pathWithPlaceholders = (path: string, values: GeneratedValues) => {
  const parts = path.split("/")
  if (parts[1] !== "api" || parts.length < 4) return path
  const name = values.lookup(rowKey(safeDecode(parts[2]), safeDecode(parts[3])))
  if (name !== undefined) parts[3] = placeholder(name)
  return parts.join("/")
}

/** A JSON value with known sessions (any whole string) and row ids (`id` keys, for `type`) as placeholders. */
const jsonWithPlaceholders = (values: GeneratedValues, type: string | undefined) => {
  const walk = (value: unknown, key: string | undefined): unknown => {
    if (typeof value === "string") {
      const name = values.lookup(sessionKey(value)) ??
        (key === "id" && type !== undefined ? values.lookup(rowKey(type, value)) : undefined)
      return name === undefined ? value : placeholder(name)
    }
    if (Array.isArray(value)) return value.map((v) => walk(v, undefined))
    if (value !== null && typeof value === "object") {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v, k)]))
    }
    return value
  }
  return (value: unknown) => walk(value, undefined)
}

// ---------------------------------------------------------------------------------------------------------------
// Formatting one exchange.

const headerOf = (headers: Headers | EdgeRequest["headers"], name: string): string | undefined => {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name && value !== undefined) return Array.isArray(value) ? value.join(", ") : String(value)
  }
  return undefined
}

const isJson = (contentType: string | undefined) => contentType !== undefined && /^application\/([\w.+-]+\+)?json\b/i.test(contentType)
const isEventStream = (contentType: string | undefined) => contentType !== undefined && /^text\/event-stream\b/i.test(contentType)

const restType = (path: string) => (path.startsWith("/api/") ? safeDecode(path.split("/")[2] ?? "") : undefined)

const titleOf = (request: EdgeRequest) => {
  let rpcMethod: unknown
  try {
    rpcMethod = (JSON.parse(request.body.toString("utf8")) as { method?: unknown })?.method
  } catch {
    rpcMethod = undefined
  }
  return `${request.method} ${request.path}${typeof rpcMethod === "string" ? ` ${rpcMethod}` : ""}`
}

/** A loopback Host says nothing (the replayer sends its own server's); any other may be why the server refused. */
const LOOPBACK_HOST = /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i

const formatRequest = (request: EdgeRequest, values: GeneratedValues) => {
  const query = request.query.toString()
  const lines = [`### ${titleOf(request)}`, `${request.method} ${pathWithPlaceholders(request.path, values)}${query ? `?${query}` : ""}`]
  const host = headerOf(request.headers, "host")
  if (host !== undefined && !LOOPBACK_HOST.test(host)) lines.push(`host: ${host}`)
  for (const name of REQUEST_HEADERS) {
    const value = headerOf(request.headers, name)
    if (value === undefined) continue
    const session = values.lookup(sessionKey(value))
    lines.push(`${name}: ${session === undefined ? value : placeholder(session)}`)
  }
  lines.push("")
  const body = request.body.toString("utf8")
  if (body.length > 0) {
    const contentType = headerOf(request.headers, "content-type")
    lines.push(isJson(contentType) ? prettyIfJson(body, jsonWithPlaceholders(values, restType(request.path))) : body, "")
  }
  return lines
}

const formatResponseHeader = (name: string, value: string, values: GeneratedValues) => {
  if (name === "mcp-session-id") return placeholder(values.name(sessionKey(value), "session"))
  const row = name === "location" ? /^\/api\/([^/?#]+)\/([^/?#]+)$/.exec(value) : null
  if (row) {
    const [type, id] = [safeDecode(row[1]), safeDecode(row[2])]
    return `/api/${row[1]}/${placeholder(values.name(rowKey(type, id), `${type}_${id.replace(/\W/g, "_")}`))}`
  }
  const session = values.lookup(sessionKey(value))
  return session === undefined ? value : placeholder(session)
}

/**
 * The response part; `unfinishedEvents` is set when the stream did not end by itself, so the replay knows when
 * to stop reading.
 */
const formatResponse = (
  request: EdgeRequest,
  status: number,
  headers: Headers,
  body: string,
  values: GeneratedValues,
  unfinishedEvents?: number
) => {
  const lines = [`--> ${status}`]
  if (unfinishedEvents !== undefined) lines.push(`# read: ${unfinishedEvents} ${unfinishedEvents === 1 ? "event" : "events"}`)
  for (const name of RESPONSE_HEADERS) {
    const value = headerOf(headers, name)
    if (value !== undefined) lines.push(`${name}: ${formatResponseHeader(name, value, values)}`)
  }
  lines.push("")
  // Registered above, so the body's own occurrences already use the new names.
  const transform = jsonWithPlaceholders(values, restType(request.path))
  const contentType = headerOf(headers, "content-type")
  if (isEventStream(contentType)) {
    const { events } = splitSseEvents(body)
    for (const event of events) lines.push(formatSseEvent(event, transform), "")
  } else if (body.length > 0) {
    lines.push(isJson(contentType) ? prettyIfJson(body, transform) : body, "")
  }
  return lines
}

// ---------------------------------------------------------------------------------------------------------------

export interface RecorderOptions {
  /** The app name for the `# app:` line a replay needs. */
  readonly app?: string
}

const readIfExists = (file: string) => {
  try {
    return fs.readFileSync(file, "utf8")
  } catch {
    return ""
  }
}

/**
 * A wrapper that records every exchange of an edge handler into `file` (appending; a new or empty file first gets
 * the `# app:` line). A failed write is logged and never fails the request.
 */
export const recordTo = (file: string, options: RecorderOptions = {}) => {
  const existing = readIfExists(file)
  const values = new GeneratedValues(new Set([...existing.matchAll(PLACEHOLDER_NAME)].map((m) => m[1])))
  let preamble = existing.trim() === ""
    ? `# app: ${options.app ?? "(set the app name)"}\n# recorded by writeonce (wo run --record, or WO_RECORD); replayed by wo test (docs/transcripts.md)\n\n`
    : ""

  const append = (render: () => string) =>
    Effect.try(() => {
      // Rendering inside the append keeps request-then-response naming order per exchange.
      fs.appendFileSync(file, preamble + render())
      preamble = ""
    }).pipe(Effect.catchAll((e) => Effect.logWarning(`cannot record the exchange to ${file}`, e.error)))

  const record = (request: EdgeRequest, status: number, headers: Headers, body: string, unfinishedEvents?: number) =>
    append(() =>
      [...formatRequest(request, values), ...formatResponse(request, status, headers, body, values, unfinishedEvents), ""]
        .join("\n"))

  /** The stream, teed: its chunks are kept and the exchange written once it ends or is interrupted. */
  const tee = (request: EdgeRequest, response: Extract<EdgeResponse, { _tag: "Stream" }>): EdgeResponse => {
    const chunks: Array<string> = []
    let ended = false
    const events = response.events.pipe(
      Stream.tap((chunk) => Effect.sync(() => chunks.push(chunk))),
      Stream.onEnd(Effect.sync(() => (ended = true))),
      Stream.ensuring(Effect.suspend(() => {
        const text = chunks.join("")
        const unfinished = ended ? undefined : splitSseEvents(text).events.length
        return record(request, response.status, response.headers, text, unfinished)
      }))
    )
    return { ...response, events }
  }

  /** A push stream, teed: what the sink accepts is kept, and the exchange written when its scope closes. */
  const teePush = (request: EdgeRequest, response: Extract<EdgeResponse, { _tag: "Push" }>): EdgeResponse => ({
    ...response,
    start: (sink) => {
      const chunks: Array<string> = []
      let byClient = false
      const teed: PushSink = {
        ...sink,
        enqueue: (...parts) => {
          const ok = sink.enqueue(...parts)
          if (ok) chunks.push(Buffer.concat(parts).toString("utf8"))
          return ok
        },
        send: (frame) => Effect.tap(sink.send(frame), (ok) => void (ok && chunks.push(frame.toString()))),
        close: (reason, last) => {
          if (!sink.isClosed() && last !== undefined) chunks.push(last)
          if (!sink.isClosed()) byClient = reason === "client"
          sink.close(reason, last)
        }
      }
      const finish = Effect.suspend(() => {
        const text = chunks.join("")
        return record(request, response.status, response.headers, text, byClient || !sink.isClosed() ? splitSseEvents(text).events.length : undefined)
      })
      return Effect.zipRight(Effect.addFinalizer(() => finish), response.start(teed))
    }
  })

  return <R>(handler: EdgeHandler<R>): EdgeHandler<R> => (request) =>
    handler(request).pipe(
      Effect.map((response) => (response._tag === "Stream" ? tee(request, response) : response._tag === "Push" ? teePush(request, response) : response)),
      Effect.tap((response) =>
        response._tag === "Buffered" ? record(request, response.status, response.headers, response.body ?? "") : Effect.void)
    )
}
