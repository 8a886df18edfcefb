/**
 * The exchange recorder behind `WO_RECORD` (`wo run --record`): it wraps the edge handler and appends every
 * exchange to a transcript file in the format `wo test` replays (docs/transcripts.md). A bug seen with a real
 * client thereby becomes a regression test: move the file into the app's transcripts/ (this project's:
 * test/transcripts/), trim it, give the exchanges titles.
 *
 * Values the server generates are written as placeholders so the replay captures them instead of pinning them
 * (recorded-values.ts): sessions, ids of rows created in the transcript, view seqs and ETags, correlations,
 * timestamps. Anything else stays literal.
 *
 * Exchanges are written when they complete (a stream when it ends or its client goes away), so concurrent
 * exchanges appear in completion order. This is a debug feature: one synchronous append per exchange.
 */
import { Effect, Stream } from "effect"
import * as fs from "node:fs"
import type { EdgeHandler } from "./edge.ts"
import { safeDecode, type EdgeRequest, type EdgeResponse, type Headers } from "./edge-types.ts"
import type { PushSink } from "./push-sink.ts"
import { namesIn, RecordedValues, type RecordedRefs } from "./recorded-values.ts"

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
// Formatting one exchange.

const headerOf = (headers: Headers | EdgeRequest["headers"], name: string): string | undefined => {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name && value !== undefined) return Array.isArray(value) ? value.join(", ") : String(value)
  }
  return undefined
}

const isJson = (contentType: string | undefined) => contentType !== undefined && /^application\/([\w.+-]+\+)?json\b/i.test(contentType)
const isEventStream = (contentType: string | undefined) => contentType !== undefined && /^text\/event-stream\b/i.test(contentType)

const rpcOf = (request: EdgeRequest): unknown => {
  try {
    return JSON.parse(request.body.toString("utf8"))
  } catch {
    return undefined
  }
}

const titleOf = (request: EdgeRequest) => {
  const rpcMethod = (rpcOf(request) as { method?: unknown } | undefined)?.method
  return `${request.method} ${request.path}${typeof rpcMethod === "string" ? ` ${rpcMethod}` : ""}`
}

/** A loopback Host says nothing (the replayer sends its own server's); any other may be why the server refused. */
const LOOPBACK_HOST = /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i

const formatRequest = (request: EdgeRequest, values: RecordedValues) => {
  const query = request.query.toString()
  const lines = [`### ${titleOf(request)}`, `${request.method} ${values.path(request.path)}${query ? `?${query}` : ""}`]
  const host = headerOf(request.headers, "host")
  if (host !== undefined && !LOOPBACK_HOST.test(host)) lines.push(`host: ${host}`)
  for (const name of REQUEST_HEADERS) {
    const value = headerOf(request.headers, name)
    if (value === undefined) continue
    lines.push(`${name}: ${values.text(value)}`)
  }
  lines.push("")
  const body = request.body.toString("utf8")
  if (body.length > 0) {
    const contentType = headerOf(request.headers, "content-type")
    const context = values.contextOf(request, rpcOf(request))
    lines.push(isJson(contentType) ? prettyIfJson(body, (v) => values.json(v, context, false)) : body, "")
  }
  return lines
}

const formatResponseHeader = (request: EdgeRequest, name: string, value: string, values: RecordedValues) => {
  if (name === "mcp-session-id") return values.session(value)
  const row = name === "location" ? /^\/api\/([^/?#]+)\/([^/?#]+)$/.exec(value) : null
  if (row) return `/api/${row[1]}/${values.created(safeDecode(row[1]), safeDecode(row[2]))}`
  if (name === "etag" && request.path.startsWith("/api/_views/")) return values.etag(value)
  return values.text(value)
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
  values: RecordedValues,
  unfinishedEvents?: number
) => {
  const lines = [`--> ${status}`]
  if (unfinishedEvents !== undefined) lines.push(`# read: ${unfinishedEvents} ${unfinishedEvents === 1 ? "event" : "events"}`)
  for (const name of RESPONSE_HEADERS) {
    const value = headerOf(headers, name)
    if (value !== undefined) lines.push(`${name}: ${formatResponseHeader(request, name, value, values)}`)
  }
  lines.push("")
  // Registered above (and created rows below, before the walk), so the body's own occurrences use the new names.
  const rpc = rpcOf(request)
  const context = values.contextOf(request, rpc)
  const transform = (value: unknown) => {
    values.registerCreated(request, rpc, context, value)
    return values.json(value, context, true)
  }
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
  /** The catalog's reference fields and params, so ids of created rows are found where they are referenced. */
  readonly refs?: RecordedRefs
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
  const values = new RecordedValues(namesIn(existing), options.refs)
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
