/** Raw MCP helpers for tests: JSON-RPC over POST /mcp with the headers a legacy client sends. */
import { http, rawRequest } from "./server.ts"

export const MCP_HEADERS = { accept: "application/json, text/event-stream", "content-type": "application/json" }

let nextId = 1
const sessionByUrl = new Map<string, string>()

/** Opens a legacy session (initialize + initialized) and returns its id. */
export const openSession = async (url: string, protocolVersion = "2025-11-25") => {
  const init = await http(`${url}/mcp`, {
    method: "POST",
    headers: MCP_HEADERS,
    body: { jsonrpc: "2.0", id: nextId++, method: "initialize", params: { protocolVersion, capabilities: {}, clientInfo: { name: "test", version: "1" } } }
  })
  const session = init.headers.get("mcp-session-id")
  if (!session) throw new Error(`initialize gave no session: ${init.status} ${init.text}`)
  await http(`${url}/mcp`, {
    method: "POST",
    headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": protocolVersion },
    body: { jsonrpc: "2.0", method: "notifications/initialized" }
  })
  return session
}

/** One legacy JSON-RPC request on this URL's shared test session; returns the HTTP status and parsed body. */
export const rpc = async (url: string, method: string, params?: unknown, headers: Record<string, string> = {}) => {
  let session = sessionByUrl.get(url)
  if (session === undefined) sessionByUrl.set(url, (session = await openSession(url)))
  return http(`${url}/mcp`, {
    method: "POST",
    headers: { ...MCP_HEADERS, "mcp-protocol-version": "2025-11-25", "mcp-session-id": session, ...headers },
    body: { jsonrpc: "2.0", id: nextId++, method, ...(params === undefined ? {} : { params }) }
  })
}

/** tools/call, returning the CallToolResult. */
export const callTool = async (url: string, name: string, args: Record<string, unknown>, headers: Record<string, string> = {}) => {
  const res = await rpc(url, "tools/call", { name, arguments: args }, headers)
  if (res.json?.error) throw new Error(`tools/call ${name} failed: ${JSON.stringify(res.json.error)}`)
  return res.json.result as { content: Array<{ type: string; text: string }>; structuredContent?: any; isError?: boolean }
}

export const rawMcp = (url: string, body: string, headers: Record<string, string> = {}, method = "POST") =>
  rawRequest(`${url}/mcp`, { method, headers: { ...MCP_HEADERS, ...headers }, body })
