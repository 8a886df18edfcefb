/**
 * Era classification, per request, from the envelope (never from the method name): body `_meta` carrying a
 * protocol version, or an MCP-Protocol-Version header naming a modern revision, means the stateless 2026-07-28
 * era; everything else is the session-based legacy era.
 */
import type { IncomingHttpHeaders } from "node:http"
import type { Era } from "./dispatch.ts"
import { isModernVersion, META } from "./protocol.ts"

export const metaOf = (params: Readonly<Record<string, unknown>> | undefined): Readonly<Record<string, unknown>> | undefined => {
  const meta = params?._meta
  return typeof meta === "object" && meta !== null && !Array.isArray(meta) ? (meta as Record<string, unknown>) : undefined
}

export const headerValue = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const v = headers[name]
  return Array.isArray(v) ? v[0] : v
}

export const eraOf = (params: Readonly<Record<string, unknown>> | undefined, headers: IncomingHttpHeaders): Era => {
  const meta = metaOf(params)
  if (meta !== undefined && META.protocolVersion in meta) return "modern"
  return isModernVersion(headerValue(headers, "mcp-protocol-version")) ? "modern" : "legacy"
}
