/**
 * One exchange as transcript text (docs/transcripts.md), for the recorder (recorder.ts): the request, then the
 * response, with the server's generated values named by `RecordedValues`. JSON is pretty-printed; so is the JSON
 * data of a stream's events, over several `data:` lines, which rejoin losslessly.
 */
import type { EdgeRequest, Headers } from "../edge/edge-types.ts"
import type { RecordedValues } from "./recorded-values.ts"
import { isEventStream, parseSse, sseFrame, type SseEvent } from "../../support/sse.ts"

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

const prettyIfJson = (text: string, transform: (value: unknown) => unknown = (v) => v) => {
  try {
    return JSON.stringify(transform(JSON.parse(text)), null, 2)
  } catch {
    return text
  }
}

const prettyData = (event: SseEvent, transform: (value: unknown) => unknown): SseEvent =>
  event.data === undefined ? event : { ...event, data: prettyIfJson(event.data, transform) }

const headerOf = (headers: Headers | EdgeRequest["headers"], name: string): string | undefined => {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name && value !== undefined) return Array.isArray(value) ? value.join(", ") : String(value)
  }
  return undefined
}

const isJson = (contentType: string | undefined) => contentType !== undefined && /^application\/([\w.+-]+\+)?json\b/i.test(contentType)

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
    if (value !== undefined) lines.push(`${name}: ${values.responseHeader(request.path, name, value)}`)
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
    // The frame's blank line ends each event.
    for (const event of parseSse(body)) lines.push(sseFrame(prettyData(event, transform)).slice(0, -1))
  } else if (body.length > 0) {
    lines.push(isJson(contentType) ? prettyIfJson(body, transform) : body, "")
  }
  return lines
}

/** The exchange's text, blank line included; `unfinishedEvents` as for `formatResponse`. */
export const formatExchange = (
  values: RecordedValues,
  request: EdgeRequest,
  status: number,
  headers: Headers,
  body: string,
  unfinishedEvents?: number
): string =>
  [...formatRequest(request, values), ...formatResponse(request, status, headers, body, values, unfinishedEvents), ""].join("\n")
