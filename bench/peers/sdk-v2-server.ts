// Peer: the official MCP SDK v2 server, dual-era on one endpoint /mcp, wired the way its docs show.
//
// LEGACY=sessions (default): `createMcpHandler(factory, { legacy: 'reject' })` serves 2026-07-28, and
//   2025-era traffic is routed with `isLegacyRequest` to a sessionful NodeStreamableHTTPServerTransport
//   (the SDK's documented pattern for keeping legacy sessions next to the modern entry). This is the
//   like-for-like peer for our server, which keeps legacy sessions.
// LEGACY=stateless: plain `createMcpHandler(factory)`, whose default legacy leg is stateless
//   (a fresh server per legacy request, no Mcp-Session-Id).
// RESPONSE_MODE=auto|json|sse picks the modern response shaping (SDK default: auto).
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  localhostHostValidation,
  localhostOriginValidation,
  NodeStreamableHTTPServerTransport,
  toNodeHandler,
  toWebRequest,
} from '@modelcontextprotocol/node';
import { createMcpHandler, isInitializeRequest, isLegacyRequest, McpServer } from '@modelcontextprotocol/server';
import { listenAndAnnounce } from './listen.ts';
import { setPrice, setPriceInputSchema, setPriceOutputSchema } from './price-tool.ts';

// The per-request factory createMcpHandler calls; also used once per legacy session.
function buildServer(): McpServer {
  const server = new McpServer({ name: 'bench-sdk-v2', version: '1.0.0' });
  server.registerTool(
    'set_price',
    {
      description: 'Set the price of a product (in memory)',
      inputSchema: setPriceInputSchema,
      outputSchema: setPriceOutputSchema,
    },
    async (args) => setPrice(args),
  );
  return server;
}

const legacyMode = process.env.LEGACY === 'stateless' ? 'stateless' : 'sessions';
const responseMode = (process.env.RESPONSE_MODE ?? 'auto') as 'auto' | 'json' | 'sse';
const validateHost = localhostHostValidation();
const validateOrigin = localhostOriginValidation();

function notFound(res: ServerResponse): void {
  res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
}

function jsonRpcError(res: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } });
  res.writeHead(status, { 'content-type': 'application/json' }).end(body);
}

// --- LEGACY=stateless: the SDK's default dual-era entry, nothing hand-wired.
function statelessDualEra() {
  const handler = createMcpHandler(() => buildServer(), { legacy: 'stateless', responseMode });
  return toNodeHandler(handler);
}

// --- LEGACY=sessions: modern strict entry + sessionful legacy transports keyed by Mcp-Session-Id.
function sessionfulDualEra() {
  const modern = toNodeHandler(createMcpHandler(() => buildServer(), { legacy: 'reject', responseMode }));
  const sessions = new Map<string, NodeStreamableHTTPServerTransport>();

  async function readJson(req: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (chunks.length === 0) return undefined;
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return undefined; // the SDK answers the parse error itself
    }
  }

  async function serveLegacy(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    const sid = req.headers['mcp-session-id'];
    const existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
    if (existing) return existing.handleRequest(req, res, body);
    if (sid !== undefined) return jsonRpcError(res, 404, 'Session not found');
    if (req.method !== 'POST' || !isInitializeRequest(body)) return jsonRpcError(res, 400, 'No valid session');
    const transport = new NodeStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, transport),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await buildServer().connect(transport);
    return transport.handleRequest(req, res, body);
  }

  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    const probe = await toWebRequest(req, body);
    if (await isLegacyRequest(probe, body)) return serveLegacy(req, res, body);
    return modern(req, res, body);
  };
}

const handle = legacyMode === 'stateless' ? statelessDualEra() : sessionfulDualEra();

const server = createServer((req, res) => {
  if (!validateHost(req, res) || !validateOrigin(req, res)) return;
  if (!req.url || (req.url !== '/mcp' && !req.url.startsWith('/mcp?'))) return notFound(res);
  handle(req, res).catch((err: unknown) => {
    if (!res.headersSent) jsonRpcError(res, 500, String(err));
    else res.destroy();
  });
});

listenAndAnnounce(server);
