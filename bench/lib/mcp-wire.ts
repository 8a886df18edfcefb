// Raw HTTP shapes of an MCP tools/call on both eras, so the load generator can drive any server
// without an SDK client in the loop. Checked against what @modelcontextprotocol/client 2.4 sends
// (see bench/sdk-client-check.ts).
import { request } from 'undici';
import type { LoadRequest, ResponseHeaders } from './load.ts';
import { looksLikeSse, sseDataPayloads } from './sse.ts';

export const MODERN_VERSION = '2026-07-28';
export const LEGACY_VERSION = '2025-11-25';
const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
const META_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';

const CLIENT_INFO = { name: 'wo-bench', version: '0.0.0' };
const BASE_HEADERS = {
  accept: 'application/json, text/event-stream',
  'content-type': 'application/json',
} as const;

export interface ToolCall {
  /** JSON-RPC id; the load generator's sequence number is a good choice. */
  id: number;
  name: string;
  arguments: Record<string, unknown>;
  path?: string;
}

/** Header values must be visible ASCII; anything else goes as `=?base64?…?=`, as the SDK client does. */
export function encodeHeaderValue(value: string): string {
  const plain =
    value.length > 0 &&
    value === value.trim() &&
    !(value.startsWith('=?base64?') && value.endsWith('?=')) &&
    /^[\t\x20-\x7e]*$/.test(value);
  return plain ? value : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

/** 2026-07-28: no session; the envelope rides in `_meta` and is mirrored in headers. */
export function modernToolCall(call: ToolCall): LoadRequest {
  return modernRequest({ id: call.id, method: 'tools/call', params: { name: call.name, arguments: call.arguments }, name: call.name, path: call.path });
}

export interface ModernRequest {
  id: number;
  method: string;
  params: Record<string, unknown>;
  /** The Mcp-Name mirror (params.name of tools/call, params.uri of resources/read); omitted when undefined. */
  name?: string;
  path?: string;
}

/** Any 2026-07-28 request: `_meta` added to the params, MCP-Protocol-Version, Mcp-Method (and Mcp-Name) mirrored. */
export function modernRequest(req: ModernRequest): LoadRequest {
  const body = {
    jsonrpc: '2.0',
    id: req.id,
    method: req.method,
    params: {
      ...req.params,
      _meta: { [META_VERSION]: MODERN_VERSION, [META_CLIENT_INFO]: CLIENT_INFO, [META_CAPABILITIES]: {} },
    },
  };
  return {
    method: 'POST',
    path: req.path ?? '/mcp',
    headers: {
      ...BASE_HEADERS,
      'mcp-protocol-version': MODERN_VERSION,
      'mcp-method': req.method,
      ...(req.name === undefined ? {} : { 'mcp-name': encodeHeaderValue(req.name) }),
    },
    body: JSON.stringify(body),
  };
}

export interface LegacySession {
  origin: string;
  path: string;
  /** Absent when the server runs legacy statelessly and issues none. */
  sessionId?: string;
  protocolVersion: string;
}

/** Legacy handshake: initialize, keep the Mcp-Session-Id if one is issued, then notifications/initialized. */
export async function openLegacySession(url: string, path = '/mcp'): Promise<LegacySession> {
  const origin = new URL(url).origin;
  const init = await request(origin + path, {
    method: 'POST',
    headers: BASE_HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: LEGACY_VERSION, capabilities: {}, clientInfo: CLIENT_INFO },
    }),
  });
  const text = await init.body.text();
  const reply = jsonRpcResponse(text, init.headers);
  if (init.statusCode !== 200 || !isRecord(reply?.result)) {
    throw new Error(`initialize failed: HTTP ${init.statusCode} ${text.slice(0, 300)}`);
  }
  const sid = init.headers['mcp-session-id'];
  const session: LegacySession = {
    origin,
    path,
    protocolVersion: typeof reply.result.protocolVersion === 'string' ? reply.result.protocolVersion : LEGACY_VERSION,
    ...(typeof sid === 'string' ? { sessionId: sid } : {}),
  };
  const ack = await request(origin + path, {
    method: 'POST',
    headers: legacyHeaders(session),
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await ack.body.dump();
  if (ack.statusCode !== 202) throw new Error(`notifications/initialized got HTTP ${ack.statusCode}`);
  return session;
}

/** DELETE the session so the server frees it; a no-op for sessionless servers. */
export async function closeLegacySession(session: LegacySession): Promise<void> {
  if (!session.sessionId) return;
  const res = await request(session.origin + session.path, { method: 'DELETE', headers: legacyHeaders(session) });
  await res.body.dump();
}

/** One legacy JSON-RPC request on the session (e.g. resources/subscribe); throws unless it gets a result. */
export async function legacyRpc(session: LegacySession, id: number, method: string, params: Record<string, unknown>): Promise<unknown> {
  const res = await request(session.origin + session.path, {
    method: 'POST',
    headers: legacyHeaders(session),
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
  });
  const text = await res.body.text();
  const reply = jsonRpcResponse(text, res.headers);
  if (res.statusCode !== 200 || reply === undefined || reply.error !== undefined) {
    throw new Error(`${method} failed: HTTP ${res.statusCode} ${text.slice(0, 300)}`);
  }
  return reply.result;
}

export function legacyHeaders(session: LegacySession): Record<string, string> {
  return {
    ...BASE_HEADERS,
    'mcp-protocol-version': session.protocolVersion,
    ...(session.sessionId ? { 'mcp-session-id': session.sessionId } : {}),
  };
}

export function legacyToolCall(session: LegacySession, call: ToolCall): LoadRequest {
  return {
    method: 'POST',
    path: call.path ?? session.path,
    headers: legacyHeaders(session),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: call.id,
      method: 'tools/call',
      params: { name: call.name, arguments: call.arguments },
    }),
  };
}

interface JsonRpcResponse {
  id?: unknown;
  result?: unknown;
  error?: unknown;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The JSON-RPC response in a body that is either one JSON object or an SSE stream (notifications skipped). */
export function jsonRpcResponse(body: string, headers?: ResponseHeaders): JsonRpcResponse | undefined {
  const ct = headers?.['content-type'];
  const sse = typeof ct === 'string' ? ct.startsWith('text/event-stream') : looksLikeSse(body);
  const candidates = sse ? sseDataPayloads(body) : [body];
  for (const payload of candidates) {
    try {
      const msg: unknown = JSON.parse(payload);
      if (isRecord(msg) && ('result' in msg || 'error' in msg)) return msg;
    } catch {
      // not JSON: keep looking
    }
  }
  return undefined;
}

/** Check for runLoad: HTTP 200, a JSON-RPC result (no error), and not a tool-level `isError`. */
export function toolCallSucceeded(status: number, body: string, headers?: ResponseHeaders): boolean {
  if (status !== 200) return false;
  const msg = jsonRpcResponse(body, headers);
  if (!msg || msg.error !== undefined || !isRecord(msg.result)) return false;
  return msg.result.isError !== true;
}
