/** HTTP framing of JSON-RPC answers on /mcp: every error is a JSON-RPC body, never HTML or empty (C2). */
import { json, empty, type EdgeResponse, type Headers } from "../edge-types.ts"
import { ErrorCode } from "./protocol.ts"
import { errorMessage, resultMessage, RpcError, type RpcId } from "./rpc.ts"

export const rpcResult = (id: RpcId, result: unknown, headers: Headers = {}): EdgeResponse => json(200, resultMessage(id, result), headers)

export const rpcError = (id: RpcId | null, error: RpcError, headers: Headers = {}): EdgeResponse =>
  json(error.status ?? 200, errorMessage(id, error), headers)

/** A transport-level refusal (406, 415, 405, 403...) still answered as JSON-RPC with a null id. */
export const httpError = (status: number, message: string, headers: Headers = {}): EdgeResponse =>
  rpcError(null, new RpcError({ code: ErrorCode.InvalidRequest, message, status }), headers)

export const accepted = (): EdgeResponse => empty(202)
