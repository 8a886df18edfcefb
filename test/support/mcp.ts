/** Raw MCP helpers for tests: JSON-RPC over POST /mcp with the headers a legacy client sends. */
import { http, rawRequest } from "./server.ts"

export const MCP_HEADERS = { accept: "application/json, text/event-stream", "content-type": "application/json" }

let nextId = 1

/** One legacy JSON-RPC request; returns the HTTP status and the parsed body. */
export const rpc = async (url: string, method: string, params?: unknown, headers: Record<string, string> = {}) => {
  const res = await http(`${url}/mcp`, {
    method: "POST",
    headers: { ...MCP_HEADERS, "mcp-protocol-version": "2025-11-25", ...headers },
    body: { jsonrpc: "2.0", id: nextId++, method, ...(params === undefined ? {} : { params }) }
  })
  return res
}

/** tools/call, returning the CallToolResult. */
export const callTool = async (url: string, name: string, args: Record<string, unknown>, headers: Record<string, string> = {}) => {
  const res = await rpc(url, "tools/call", { name, arguments: args }, headers)
  if (res.json?.error) throw new Error(`tools/call ${name} failed: ${JSON.stringify(res.json.error)}`)
  return res.json.result as { content: Array<{ type: string; text: string }>; structuredContent?: any; isError?: boolean }
}

export const rawMcp = (url: string, body: string, headers: Record<string, string> = {}, method = "POST") =>
  rawRequest(`${url}/mcp`, { method, headers: { ...MCP_HEADERS, ...headers }, body })
