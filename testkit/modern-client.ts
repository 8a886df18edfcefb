/** Raw helpers for the stateless 2026-07-28 era over node:http: requests (built by testkit/mcp.ts), listen streams. */
import * as nodeHttp from "node:http"
import { sseParser } from "../src/support/sse.ts"
import { listenBody, modernHeaders, modernRequest as buildModern } from "./mcp.ts"
import { openSse } from "./sse.ts"
import { rawRequest } from "./server.ts"

export { listenBody, MODERN_META, MODERN_VERSION, modernHeaders, SUBSCRIPTION_ID } from "./mcp.ts"

let nextId = 1_000_000

/** One modern JSON-RPC request; `name` is the Mcp-Name (tool name or resource URI). */
export const modernRequest = (
  url: string,
  method: string,
  params: Record<string, unknown> = {},
  name?: string,
  extra: Record<string, string> = {},
  id: number | string = nextId++
) => {
  const req = buildModern({ id, method, params, name, headers: extra })
  return rawRequest(`${url}${req.path}`, req)
}

/** tools/call in the modern era. */
export const modernCall = (url: string, tool: string, args: Record<string, unknown>, extra: Record<string, string> = {}) =>
  modernRequest(url, "tools/call", { name: tool, arguments: args }, tool, extra)

/** Opens a subscriptions/listen stream with the SSE test reader. */
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
      const parser = sseParser()
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
          const first = parser.push(chunk).find((m) => m.data)?.data
          if (first !== undefined) settle(JSON.parse(first))
        }
      })
      res.on("end", () => settle(text ? JSON.parse(text) : undefined))
      res.on("error", reject)
    })
    req.on("error", reject)
    req.end(listenBody(id, uris))
  })
