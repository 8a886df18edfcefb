/**
 * Modern-era header mirroring: MCP-Protocol-Version, Mcp-Method and Mcp-Name must repeat the body.
 * Values may use the `=?base64?<utf-8 as base64>?=` sentinel, decoded before comparing; a malformed sentinel
 * is a mismatch. Values are compared exactly. The transport reads the headers (transport.ts); these rules see
 * only their values.
 */
import { Either } from "effect"

const SENTINEL = /^=\?base64\?(.*)\?=$/
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** The header's value with the base64 sentinel decoded; Left when the sentinel's payload is not base64. */
export const decodeHeaderValue = (value: string): Either.Either<string, string> => {
  // Most values are plain (bench: MCP get, modern): no regular expression for them.
  if (!value.startsWith("=?")) return Either.right(value)
  const m = SENTINEL.exec(value)
  if (m === null) return Either.right(value)
  if (!BASE64.test(m[1])) return Either.left(`the base64 in ${value} is malformed`)
  return Either.right(Buffer.from(m[1], "base64").toString("utf8"))
}

/** The Mcp-Name a request must carry: params.name for tools/call and prompts/get, params.uri for resources/read. */
export const expectedMcpName = (method: string, params: Readonly<Record<string, unknown>>): string | undefined => {
  if (method === "tools/call" || method === "prompts/get") return typeof params.name === "string" ? params.name : undefined
  if (method === "resources/read") return typeof params.uri === "string" ? params.uri : undefined
  return undefined
}

/** The mirror headers' values, as the transport read them (absent: undefined). */
export interface MirrorHeaders {
  readonly mcpMethod: string | undefined
  readonly mcpName: string | undefined
}

/** Left(reason) when a required mirror header is missing, malformed or different from the body. */
export const checkMirrorHeaders = (
  headers: MirrorHeaders,
  method: string,
  params: Readonly<Record<string, unknown>>
): Either.Either<void, string> => {
  const methodHeader = headers.mcpMethod
  if (methodHeader === undefined) return Either.left("the Mcp-Method header is required")
  if (methodHeader !== method) return Either.left(`Mcp-Method header value '${methodHeader}' does not match body value '${method}'`)
  const name = expectedMcpName(method, params)
  if (name === undefined) return Either.right(undefined)
  const nameHeader = headers.mcpName
  if (nameHeader === undefined) return Either.left("the Mcp-Name header is required for this method")
  return Either.flatMap(decodeHeaderValue(nameHeader), (decoded) =>
    decoded === name ? Either.right(undefined) : Either.left(`Mcp-Name header value '${nameHeader}' does not match body value '${name}'`))
}
