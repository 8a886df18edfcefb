/**
 * The one MCP request builder of test/, bench/ and scripts/, for both eras. A builder returns the HTTP request as
 * data ({ method, path, headers, body }); the caller sends it with the client it likes (fetch, node:http, a raw
 * socket, the bench's undici pool).
 *   - 2025-11-25 (legacy): a session. `initialize`, then `notifications/initialized`, then requests carrying
 *     Mcp-Session-Id and MCP-Protocol-Version.
 *   - 2026-07-28 (modern): no session. Every request carries its envelope in `params._meta`, mirrored in headers:
 *     MCP-Protocol-Version, Mcp-Method and, where the method names something, Mcp-Name.
 * Checked against what @modelcontextprotocol/client 2.4 sends (bench/sdk-client-check.ts).
 */
import { request } from "undici"
import { looksLikeSse, sseDataPayloads } from "./sse.ts"

export const MODERN_VERSION = "2026-07-28"
export const LEGACY_VERSION = "2025-11-25"
export const META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
export const META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
export const META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
export const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

/** The smallest valid modern `_meta`: version and (no) capabilities. */
export const MODERN_META = {
  [META_PROTOCOL_VERSION]: MODERN_VERSION,
  [META_CLIENT_CAPABILITIES]: {}
} as const

/** What every MCP POST carries: a JSON body, and an Accept that takes either a JSON or an SSE answer. */
export const MCP_HEADERS = { accept: "application/json, text/event-stream", "content-type": "application/json" } as const

export interface ClientInfo {
  readonly name: string
  readonly version: string
}

export interface McpHttpRequest {
  readonly method: "POST"
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: string
}

/** Header values must be visible ASCII; anything else goes as `=?base64?…?=`, as the SDK client does. */
export const encodeHeaderValue = (value: string): string => {
  const plain =
    value.length > 0 &&
    value === value.trim() &&
    !(value.startsWith("=?base64?") && value.endsWith("?=")) &&
    /^[\t\x20-\x7e]*$/.test(value)
  return plain ? value : `=?base64?${Buffer.from(value, "utf8").toString("base64")}?=`
}

// ---------------------------------------------------------------------------------------------------------------
// 2026-07-28

/** The headers a modern request must carry: version, Mcp-Method, and Mcp-Name (as given) where the method has one. */
export const modernHeaders = (method: string, name?: string, extra: Record<string, string> = {}): Record<string, string> => ({
  ...MCP_HEADERS,
  "mcp-protocol-version": MODERN_VERSION,
  "mcp-method": method,
  ...(name !== undefined ? { "mcp-name": name } : {}),
  ...extra
})

/** A modern `_meta`, with clientInfo when given. */
export const modernMeta = (clientInfo?: ClientInfo): Record<string, unknown> =>
  clientInfo === undefined ? MODERN_META : { ...MODERN_META, [META_CLIENT_INFO]: clientInfo }

export interface ModernInit {
  readonly id: number | string
  readonly method: string
  readonly params?: Record<string, unknown>
  /** The Mcp-Name mirror (params.name of tools/call, params.uri of resources/read); none when undefined. */
  readonly name?: string
  /** Mcp-Name as the SDK sends it (base64 for values that are not plain visible ASCII); default: as given. */
  readonly encodeName?: boolean
  readonly clientInfo?: ClientInfo
  /** Headers added last (a test's deliberate mismatch, an Origin, a token). */
  readonly headers?: Record<string, string>
  readonly path?: string
}

/** Any 2026-07-28 request: `_meta` added to the params, the envelope mirrored in headers. */
export const modernRequest = (init: ModernInit): McpHttpRequest => {
  const name = init.name === undefined ? undefined : init.encodeName ? encodeHeaderValue(init.name) : init.name
  return {
    method: "POST",
    path: init.path ?? "/mcp",
    headers: modernHeaders(init.method, name, init.headers),
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: init.id,
      method: init.method,
      params: { ...init.params, _meta: modernMeta(init.clientInfo) }
    })
  }
}

/** The body of a `subscriptions/listen` request on `uris`; `extra` goes beside resourceSubscriptions. */
export const listenBody = (id: number | string, uris: ReadonlyArray<string>, extra: Record<string, unknown> = {}, clientInfo?: ClientInfo) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "subscriptions/listen",
    params: { notifications: { resourceSubscriptions: uris, ...extra }, _meta: modernMeta(clientInfo) }
  })

// ---------------------------------------------------------------------------------------------------------------
// 2025-11-25

export interface LegacySession {
  readonly origin: string
  readonly path: string
  /** Absent when the server runs legacy statelessly and issues none. */
  readonly sessionId?: string
  readonly protocolVersion: string
}

/** The headers of a request on a legacy session. */
export const legacyHeaders = (session: { readonly sessionId?: string; readonly protocolVersion: string }): Record<string, string> => ({
  ...MCP_HEADERS,
  "mcp-protocol-version": session.protocolVersion,
  ...(session.sessionId ? { "mcp-session-id": session.sessionId } : {})
})

/** The `initialize` body that opens a legacy session. */
export const initializeBody = (id: number | string, clientInfo: ClientInfo, protocolVersion = LEGACY_VERSION) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "initialize", params: { protocolVersion, capabilities: {}, clientInfo } })

export const initializedBody = () => JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })

/** A JSON-RPC request on a legacy session; `params` left out when undefined. */
export const legacyRequest = (
  session: { readonly path?: string; readonly sessionId?: string; readonly protocolVersion: string },
  init: { readonly id: number | string; readonly method: string; readonly params?: unknown; readonly headers?: Record<string, string>; readonly path?: string }
): McpHttpRequest => ({
  method: "POST",
  path: init.path ?? session.path ?? "/mcp",
  headers: { ...legacyHeaders(session), ...init.headers },
  body: JSON.stringify({ jsonrpc: "2.0", id: init.id, method: init.method, ...(init.params === undefined ? {} : { params: init.params }) })
})

// ---------------------------------------------------------------------------------------------------------------
// tools/call in either era

export interface ToolCall {
  /** JSON-RPC id; the load generator's sequence number is a good choice. */
  readonly id: number
  readonly name: string
  readonly arguments: Record<string, unknown>
  readonly path?: string
}

const BENCH_CLIENT: ClientInfo = { name: "wo-bench", version: "0.0.0" }

/** tools/call as the SDK client sends it in 2026-07-28. */
export const modernToolCall = (call: ToolCall, clientInfo: ClientInfo = BENCH_CLIENT): McpHttpRequest =>
  modernRequest({ id: call.id, method: "tools/call", params: { name: call.name, arguments: call.arguments }, name: call.name, encodeName: true, clientInfo, ...(call.path !== undefined ? { path: call.path } : {}) })

/** tools/call on a legacy session. */
export const legacyToolCall = (session: LegacySession, call: ToolCall): McpHttpRequest =>
  legacyRequest(session, { id: call.id, method: "tools/call", params: { name: call.name, arguments: call.arguments }, ...(call.path !== undefined ? { path: call.path } : {}) })

// ---------------------------------------------------------------------------------------------------------------
// Answers

export type ResponseHeaders = Record<string, string | Array<string> | undefined>

export interface JsonRpcResponse {
  id?: unknown
  result?: unknown
  error?: unknown
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** The JSON-RPC response in a body that is either one JSON object or an SSE stream (notifications skipped). */
export const jsonRpcResponse = (body: string, headers?: ResponseHeaders): JsonRpcResponse | undefined => {
  const ct = headers?.["content-type"]
  const sse = typeof ct === "string" ? ct.startsWith("text/event-stream") : looksLikeSse(body)
  for (const payload of sse ? sseDataPayloads(body) : [body]) {
    try {
      const msg: unknown = JSON.parse(payload)
      if (isRecord(msg) && ("result" in msg || "error" in msg)) return msg
    } catch {
      // not JSON: keep looking
    }
  }
  return undefined
}

/** HTTP 200, a JSON-RPC result (no error), and not a tool-level `isError`. */
export const toolCallSucceeded = (status: number, body: string, headers?: ResponseHeaders): boolean => {
  if (status !== 200) return false
  const msg = jsonRpcResponse(body, headers)
  if (!msg || msg.error !== undefined || !isRecord(msg.result)) return false
  return msg.result.isError !== true
}

// ---------------------------------------------------------------------------------------------------------------
// A legacy session over undici (the bench's client; the tests' own helpers in testkit/legacy-client.ts use fetch)

const send = (origin: string, req: McpHttpRequest) => request(origin + req.path, { method: req.method, headers: req.headers, body: req.body })

/** Legacy handshake: initialize, keep the Mcp-Session-Id if one is issued, then notifications/initialized. */
export const openLegacySession = async (url: string, path = "/mcp", clientInfo: ClientInfo = BENCH_CLIENT): Promise<LegacySession> => {
  const origin = new URL(url).origin
  const init = await send(origin, { method: "POST", path, headers: { ...MCP_HEADERS }, body: initializeBody(0, clientInfo) })
  const text = await init.body.text()
  const reply = jsonRpcResponse(text, init.headers)
  if (init.statusCode !== 200 || !isRecord(reply?.result)) {
    throw new Error(`initialize failed: HTTP ${init.statusCode} ${text.slice(0, 300)}`)
  }
  const sid = init.headers["mcp-session-id"]
  const session: LegacySession = {
    origin,
    path,
    protocolVersion: typeof reply.result.protocolVersion === "string" ? reply.result.protocolVersion : LEGACY_VERSION,
    ...(typeof sid === "string" ? { sessionId: sid } : {})
  }
  const ack = await send(origin, { method: "POST", path, headers: legacyHeaders(session), body: initializedBody() })
  await ack.body.dump()
  if (ack.statusCode !== 202) throw new Error(`notifications/initialized got HTTP ${ack.statusCode}`)
  return session
}

/** DELETE the session so the server frees it; a no-op for sessionless servers. */
export const closeLegacySession = async (session: LegacySession): Promise<void> => {
  if (!session.sessionId) return
  const res = await request(session.origin + session.path, { method: "DELETE", headers: legacyHeaders(session) })
  await res.body.dump()
}

/** One legacy JSON-RPC request on the session (e.g. resources/subscribe); throws unless it gets a result. */
export const legacyRpc = async (session: LegacySession, id: number, method: string, params: Record<string, unknown>): Promise<unknown> => {
  const res = await send(session.origin, legacyRequest(session, { id, method, params }))
  const text = await res.body.text()
  const reply = jsonRpcResponse(text, res.headers)
  if (res.statusCode !== 200 || reply === undefined || reply.error !== undefined) {
    throw new Error(`${method} failed: HTTP ${res.statusCode} ${text.slice(0, 300)}`)
  }
  return reply.result
}
