// Baseline peer for notification fan-out: the least a node:http server can do to push one SSE frame to
// every open stream. It speaks just enough of our wire for bench/scenarios/notify.ts to drive it unchanged:
//   POST /mcp (any body)                  -> an SSE stream, first an acknowledgement frame, then updates;
//   POST /api/products/:id/set_price      -> writes one `notifications/resources/updated` frame to every
//                                            stream (no durability, no registry), then answers with a row.
// Its figures are the floor for commit-to-notification latency and fan-out on this machine, with this client.
import { createServer, type ServerResponse } from 'node:http';
import { listenAndAnnounce } from './listen.ts';

const streams = new Set<ServerResponse>();
let version = 1;

const frame = (method: string, params: Record<string, unknown>) =>
  `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method, params })}\n\n`;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/mcp') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.write(frame('notifications/subscriptions/acknowledged', { notifications: {} }));
      streams.add(res);
      res.on('close', () => streams.delete(res));
      return;
    }
    const m = /^\/api\/products\/(\w+)\/set_price$/.exec(req.url ?? '');
    if (req.method === 'POST' && m) {
      const uri = `wo://products/${m[1]}`;
      const update = frame('notifications/resources/updated', { uri });
      for (const s of streams) if (!s.writableNeedDrain) s.write(update);
      const body = JSON.stringify({ id: m[1], version: ++version, name: 'p', price: 1, currency: 'USD' });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    res.writeHead(404).end();
  });
});

listenAndAnnounce(server);
