/** Raw helpers for the stateless 2026-07-28 era: `_meta` on every request, mirror headers, listen streams. */
import * as nodeHttp from "node:http"
import { rawRequest } from "./server.ts"
import { openSse } from "./sse-client.ts"

export const MODERN_VERSION = "2026-07-28"
export const MODERN_META = {
  "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
  "io.modelcontextprotocol/clientCapabilities": {}
} as const
export const SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

/** The headers a modern request must carry (M2): version, Mcp-Method, and Mcp-Name where the method has one. */
export const modernHeaders = (method: string, name?: string, extra: Record<string, string> = {}): Record<string, string> => ({
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
  "mcp-protocol-version": MODERN_VERSION,
  "mcp-method": method,
  ...(name !== undefined ? { "mcp-name": name } : {}),
  ...extra
})

let nextId = 1_000_000

/** One modern JSON-RPC request; `name` is the Mcp-Name (tool name or resource URI). */
export const modernRequest = (
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  name?: string,
  extra: Record<string, string> = {},
  id: number | string = nextId++
) =>
  rawRequest(`${url}/mcp`, {
    method: "POST",
    headers: modernHeaders(method, name, extra),
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: MODERN_META } })
  })

/** tools/call in the modern era. */
export const modernCall = (url: string, tool: string, args: Record<string, unknown>, extra: Record<string, string> = {}) =>
  modernRequest(url, "tools/call", { name: tool, arguments: args }, tool, extra)

export const listenBody = (id: number | string, uris: ReadonlyArray<string>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "subscriptions/listen",
    params: { notifications: { resourceSubscriptions: uris, ...extra }, _meta: MODERN_META }
  })

/** Opens a subscriptions/listen stream (M6) with the SSE test reader. */
export const openListen = (url: string, id: number | string, uris: ReadonlyArray<string>, extra: Record<string, string> = {}) =>
  openSse(`${url}/mcp`, { method: "POST", headers: modernHeaders("subscriptions/listen", undefined, extra), body: listenBody(id, uris) })

export interface RawListen {
  readonly status: number
  /** The JSON of the first message: the ack on a 200 stream, or the error body otherwise. */
  readonly first: any
  readonly close: () => void
  readonly closed: Promise<void>
}

/**
 * Opens a listen stream from a chosen loopback source address (127.0.0.2 ...), so that one test can act as
 * several clients of the per-client cap. Resolves with the first message.
 */
export const rawListen = (url: string, id: number, uris: ReadonlyArray<string>, localAddress = "127.0.0.1"): Promise<RawListen> =>
  new Promise((resolve, reject) => {
    const req = nodeHttp.request(`${url}/mcp`, { method: "POST", headers: modernHeaders("subscriptions/listen"), localAddress, agent: false }, (res) => {
      let text = ""
      let done = false
      const closed = new Promise<void>((r) => res.once("close", () => r()))
      res.setEncoding("utf8")
      const settle = (first: any) => {
        if (done) return
        done = true
        resolve({ status: res.statusCode ?? 0, first, close: () => req.destroy(), closed })
      }
      res.on("data", (chunk: string) => {
        text += chunk
        if (res.statusCode === 200) {
          const line = text.split("\n").find((l) => l.startsWith("data:"))
          if (line !== undefined && text.includes("\n\n")) settle(JSON.parse(line.slice(5)))
        }
      })
      res.on("end", () => settle(text ? JSON.parse(text) : undefined))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end(listenBody(id, uris))
  })
