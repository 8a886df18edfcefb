/**
 * A refusal made before any route runs (body size, Host and Origin, the bearer token), in the shape of the route
 * it was meant for: a JSON-RPC error on /mcp, where every answer is one, REST's `{error, message}` elsewhere.
 */
import { errorJson, json, type EdgeResponse, type Headers } from "./edge-types.ts"
import { errorMessage, JsonRpcErrorCode, RpcError } from "./json-rpc-errors.ts"

/** A transport-level refusal (406, 415, 405, 403, 413...) on /mcp, still answered as JSON-RPC with a null id. */
export const httpError = (status: number, message: string, headers: Headers = {}): EdgeResponse =>
  json(status, errorMessage(null, new RpcError({ code: JsonRpcErrorCode.InvalidRequest, message })), headers)

export const edgeError = (path: string | undefined, status: number, tag: string, message: string, headers: Headers = {}): EdgeResponse =>
  path === "/mcp" ? httpError(status, message, headers) : errorJson(status, tag, message, {}, headers)
