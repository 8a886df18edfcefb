// Peer: the official MCP SDK v1 (`@modelcontextprotocol/sdk`), McpServer + StreamableHTTPServerTransport,
// 2025-era only (it has no 2026-07-28 support).
//
// V1_MODE=stateful (default): one McpServer + transport per session, keyed by Mcp-Session-Id, as in the
//   SDK's simpleStreamableHttp example. Chosen as the default because a long-lived client making many
//   calls is what the docs prescribe sessions for, and it is the same shape as our legacy sessions;
//   the stateless idiom builds a server + transport per request, which measures set-up, not calls.
// V1_MODE=stateless: the documented stateless idiom (sessionIdGenerator undefined, fresh pair per POST).
// V1_JSON=1 sets enableJsonResponse (JSON bodies instead of the default SSE responses).
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { listenAndAnnounce } from './listen.ts';
import { setPrice, setPriceInput, setPriceOutput } from './price-tool.ts';

function buildServer(): McpServer {
  const server = new McpServer({ name: 'bench-sdk-v1', version: '1.0.0' });
  server.registerTool(
    'set_price',
    { description: 'Set the price of a product (in memory)', inputSchema: setPriceInput, outputSchema: setPriceOutput },
    async (args) => setPrice(args),
  );
  return server;
}

const stateless = process.env.V1_MODE === 'stateless';
const enableJsonResponse = process.env.V1_JSON === '1';
const sessions = new Map<string, StreamableHTTPServerTransport>();

function jsonRpcError(res: ServerResponse, status: number, message: string): void {
  const body = JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } });
  res.writeHead(status, { 'content-type': 'application/json' }).end(body);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  if (chunks.length === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

async function serveStateless(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
  if (req.method !== 'POST') return jsonRpcError(res, 405, 'Method not allowed.');
  const server = buildServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse });
  res.on('close', () => {
    void transport.close();
    void server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, body);
}

async function serveStateful(req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
  const sid = req.headers['mcp-session-id'];
  const existing = typeof sid === 'string' ? sessions.get(sid) : undefined;
  if (existing) return existing.handleRequest(req, res, body);
  if (sid !== undefined) return jsonRpcError(res, 404, 'Session not found');
  if (req.method !== 'POST' || !isInitializeRequest(body)) return jsonRpcError(res, 400, 'No valid session');
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    enableJsonResponse,
    onsessioninitialized: (id) => void sessions.set(id, transport),
  });
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
  };
  await buildServer().connect(transport);
  return transport.handleRequest(req, res, body);
}

const server = createServer((req, res) => {
  if (!req.url || (req.url !== '/mcp' && !req.url.startsWith('/mcp?'))) {
    res.writeHead(404).end();
    return;
  }
  const run = async (): Promise<void> => {
    const body = req.method === 'POST' ? await readJson(req) : undefined;
    await (stateless ? serveStateless(req, res, body) : serveStateful(req, res, body));
  };
  run().catch((err: unknown) => {
    if (!res.headersSent) jsonRpcError(res, 500, String(err));
    else res.destroy();
  });
});

listenAndAnnounce(server);
