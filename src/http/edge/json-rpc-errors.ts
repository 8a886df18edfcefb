/**
 * JSON-RPC 2.0 errors and nothing of MCP: the standard codes, the error value and its wire message. The edge
 * answers its refusals on /mcp with these, and the MCP protocol builds its own codes on them.
 */
import { Data } from "effect"

/** The codes JSON-RPC 2.0 itself reserves. */
export const JsonRpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603
} as const

export type RpcId = string | number

/** A protocol error: JSON-RPC code, message and data. How it travels (an HTTP status) is the transport's business. */
export class RpcError extends Data.TaggedError("RpcError")<{
  readonly code: number
  readonly message: string
  readonly data?: unknown
}> {}

export const errorMessage = (id: RpcId | null, error: RpcError) => ({
  jsonrpc: "2.0" as const,
  id,
  error: error.data === undefined ? { code: error.code, message: error.message } : { code: error.code, message: error.message, data: error.data }
})
