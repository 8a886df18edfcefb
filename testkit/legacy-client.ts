/** Raw MCP helpers for tests: legacy JSON-RPC over POST /mcp with fetch, the requests built by testkit/mcp.ts. */
import { initializeBody, initializedBody, LEGACY_VERSION, legacyRequest, MCP_HEADERS } from "./mcp.ts"
import { http, rawRequest } from "./server.ts"

export { MCP_HEADERS } from "./mcp.ts"

let nextId = 1
const sessionByUrl = new Map<string, string>()

/** Opens a legacy session (initialize + initialized) and returns its id. */
export const openSession = async (url: string, protocolVersion = LEGACY_VERSION) => {
  const init = await http(`${url}/mcp`, { method: "POST", headers: { ...MCP_HEADERS }, body: initializeBody(nextId++, { name: "test", version: "1" }, protocolVersion) })
  const session = init.headers.get("mcp-session-id")
  if (!session) throw new Error(`initialize gave no session: ${init.status} ${init.text}`)
  await http(`${url}/mcp`, { method: "POST", headers: { ...MCP_HEADERS, "mcp-session-id": session, "mcp-protocol-version": protocolVersion }, body: initializedBody() })
  return session
}

/** One legacy JSON-RPC request on this URL's shared test session; returns the HTTP status and parsed body. */
export const rpc = async (url: string, method: string, params?: unknown, headers: Record<string, string> = {}) => {
  let session = sessionByUrl.get(url)
  if (session === undefined) sessionByUrl.set(url, (session = await openSession(url)))
  const req = legacyRequest({ sessionId: session, protocolVersion: LEGACY_VERSION }, { id: nextId++, method, params, headers })
  return http(`${url}${req.path}`, req)
}

/** tools/call, returning the CallToolResult. */
export const callTool = async (url: string, name: string, args: Record<string, unknown>, headers: Record<string, string> = {}) => {
  const res = await rpc(url, "tools/call", { name, arguments: args }, headers)
  if (res.json?.error) throw new Error(`tools/call ${name} failed: ${JSON.stringify(res.json.error)}`)
  return res.json.result as { content: Array<{ type: string; text: string }>; structuredContent?: any; isError?: boolean }
}

export const rawMcp = (url: string, body: string, headers: Record<string, string> = {}, method = "POST") =>
  rawRequest(`${url}/mcp`, { method, headers: { ...MCP_HEADERS, ...headers }, body })
