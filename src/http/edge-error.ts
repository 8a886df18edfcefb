/**
 * A refusal made before any route runs (body size, Host and Origin, the bearer token), in the shape of the route
 * it was meant for: a JSON-RPC error on /mcp, where every answer is one (C2), REST's `{error, message}` elsewhere.
 */
import { errorJson, type EdgeResponse, type Headers } from "./edge-types.ts"
import { httpError } from "./mcp/transport.ts"

export const edgeError = (path: string | undefined, status: number, tag: string, message: string, headers: Headers = {}): EdgeResponse =>
  path === "/mcp" ? httpError(status, message, headers) : errorJson(status, tag, message, {}, headers)
