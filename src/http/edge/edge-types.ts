/** The plain request and response values that cross the node:http edge. Everything behind it is Effect. */
import type { IncomingHttpHeaders } from "node:http"
import type { Effect, Scope, Stream } from "effect"
import type { Principal } from "../../access/principal.ts"
import type { PushSink } from "../streams/push-sink.ts"
import type { JsonScan } from "./json-scan.ts"

export interface EdgeRequest {
  readonly method: string
  readonly path: string
  readonly query: URLSearchParams
  /** The query string as sent (`?a=1`, or empty), its escapes not decoded: for reads that refuse a malformed one. */
  readonly search?: string
  /** Lower-cased names, as node:http gives them. */
  readonly headers: IncomingHttpHeaders
  readonly body: Buffer
  /** A JSON body's shape, read chunk by chunk as it arrived (json-scan.ts), so that no step reads it whole again. */
  readonly bodyShape?: JsonScan
  /** The client's address, for per-client limits. */
  readonly remoteAddress: string
  /** The connection it came on (its socket), for what is remembered per connection; absent for a request made in process. */
  readonly connection?: object
  /** Who the request acts as, once the edge has authenticated it; absent where no credential is required. */
  readonly principal?: Principal
}

/** A path segment, percent-decoded; a malformed escape stays as it is (and then matches nothing). */
export const safeDecode = (segment: string) => {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}

export type Headers = Readonly<Record<string, string>>

export type EdgeResponse =
  | { readonly _tag: "Buffered"; readonly status: number; readonly headers: Headers; readonly body?: string }
  | {
    readonly _tag: "Stream"
    readonly status: number
    readonly headers: Headers
    /** Already-framed SSE text; the edge writes each chunk, awaiting `drain`, until the stream ends. */
    readonly events: Stream.Stream<string>
    /** A comment line is sent after this long without an event. */
    readonly heartbeatMs?: number
  }
  | {
    /**
     * A live SSE stream on the push path (push-sink.ts): `start` gets the stream's sink and runs in the stream's
     * scope; it subscribes the sink, may replay through `sink.send` (with backpressure), and returns. The
     * stream stays open until the sink closes (overflow, memory budget, shutdown, the client going away); then
     * the scope closes, releasing what `start` acquired.
     */
    readonly _tag: "Push"
    readonly status: number
    readonly headers: Headers
    readonly start: (sink: PushSink) => Effect.Effect<void, never, Scope.Scope>
    readonly heartbeatMs?: number
  }

const JSON_TYPE = { "content-type": "application/json" }

/**
 * A JSON response from an already-serialised body (so payloads can be shared byte for byte). The headers are merged
 * with Object.assign: on Node 20, `{ ...JSON_TYPE, ...headers }` makes a new hidden class per call (a spread followed
 * by keys it did not have), kept in the old generation until a full collection (test/unit/hot-path-shapes.test.ts).
 */
export const jsonText = (status: number, body: string, headers: Headers = {}): EdgeResponse => ({
  _tag: "Buffered",
  status,
  headers: Object.assign({}, JSON_TYPE, headers),
  body
})

export const json = (status: number, value: unknown, headers: Headers = {}): EdgeResponse =>
  jsonText(status, JSON.stringify(value), headers)

export const empty = (status: number, headers: Headers = {}): EdgeResponse => ({ _tag: "Buffered", status, headers })

/** The JSON error body every non-MCP route uses. */
export const errorJson = (status: number, error: string, message: string, extra: Record<string, unknown> = {}, headers: Headers = {}) =>
  json(status, { error, message, ...extra }, headers)
