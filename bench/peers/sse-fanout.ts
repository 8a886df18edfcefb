// The floor for notification fan-out: what a careful hand-written node:http server would do to announce a
// durable change on every open stream. It speaks just enough of our wire for bench/scenarios/notify.ts to
// drive it unchanged, in both eras:
//   POST /mcp subscriptions/listen            -> an SSE stream: an acknowledgement, then updates, each frame
//                                                carrying the listen's subscriptionId (the request id);
//   POST /mcp initialize | resources/subscribe -> a legacy session (Mcp-Session-Id) and its subscriptions;
//   GET /mcp (Mcp-Session-Id)                 -> the session's SSE stream, frames with `id: get-<seq>`;
//   POST /api/products/:id/set_price          -> appends a record to a log file and fsyncs it (durable, as
//                                                ours is), then writes one frame per subscribed stream (the
//                                                modern one spliced with its subscriptionId, the legacy one
//                                                the same for all), then answers with a row.
// Its figures are the floor for commit-to-notification latency, CPU per notification and RSS per stream.
import { createServer, type ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { listenAndAnnounce } from './listen.ts';
import { openListenStream, SUBSCRIPTION_ID, type ListenStreams } from './listen-streams.ts';

const dir = fs.mkdtempSync(path.join(process.env.DATA_DIR ?? os.tmpdir(), 'sse-fanout-'));
const log = fs.openSync(path.join(dir, 'log'), 'a');
process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));

/** uri -> listen streams (with their id's JSON) */
const listens: ListenStreams = new Map();
const sessions = new Map<string, { stream?: ServerResponse }>();
/** uri -> legacy sessions subscribed to it */
const sessionsByUri = new Map<string, Set<{ stream?: ServerResponse }>>();
let seq = 0;
let version = 1;

const frame = (message: unknown, id?: string) => `${id ? `id: ${id}\n` : ''}event: message\ndata: ${JSON.stringify(message)}\n\n`;

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
};

const openStream = (res: ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
};

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const sid = req.headers['mcp-session-id'] as string | undefined;
    if (req.method === 'GET' && req.url === '/mcp' && sid && sessions.has(sid)) {
      const session = sessions.get(sid)!;
      openStream(res);
      session.stream = res;
      res.on('close', () => void (session.stream === res && (session.stream = undefined)));
      return;
    }
    if (req.method === 'POST' && req.url === '/mcp') {
      const msg = JSON.parse(Buffer.concat(chunks).toString() || '{}');
      if (msg.method === 'subscriptions/listen') return openListenStream(listens, msg, res);
      if (msg.method === 'initialize') {
        const id = randomBytes(18).toString('base64url');
        sessions.set(id, {});
        return json(res, 200, { jsonrpc: '2.0', id: msg.id, result: { protocolVersion: msg.params?.protocolVersion ?? '2025-11-25', capabilities: { resources: { subscribe: true } }, serverInfo: { name: 'floor', version: '0' } } }, { 'mcp-session-id': id });
      }
      if (msg.id === undefined) {
        res.writeHead(202).end();
        return;
      }
      const session = sid ? sessions.get(sid) : undefined;
      if (msg.method === 'resources/subscribe' && session) {
        let set = sessionsByUri.get(msg.params.uri);
        if (!set) sessionsByUri.set(msg.params.uri, (set = new Set()));
        set.add(session);
      }
      return json(res, 200, { jsonrpc: '2.0', id: msg.id, result: {} });
    }
    const m = /^\/api\/products\/(\w+)\/set_price$/.exec(req.url ?? '');
    if (req.method === 'POST' && m) {
      const uri = `wo://products/${m[1]}`;
      const record = `${JSON.stringify({ seq: seq + 1, type: 'products', id: m[1], kind: 'invoked', data: JSON.parse(Buffer.concat(chunks).toString() || '{}') })}\n`;
      // Durable first: append and fsync (off the JS thread), then announce.
      fs.write(log, record, (err) => {
        if (err) return json(res, 500, { error: String(err) });
        fs.fdatasync(log, (err2) => {
          if (err2) return json(res, 500, { error: String(err2) });
          const s = ++seq;
          const updated = { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri } };
          const listeners = listens.get(uri);
          if (listeners?.size) {
            // One frame per stream with its subscriptionId, from a prefix and suffix built once.
            const head = JSON.stringify(updated);
            const prefix = `event: message\ndata: ${head.slice(0, -2)},"_meta":{"${SUBSCRIPTION_ID}":`;
            for (const [stream, idJson] of listeners) if (!stream.writableNeedDrain) stream.write(`${prefix}${idJson}}}}\n\n`);
          }
          let legacy: string | undefined;
          for (const session of sessionsByUri.get(uri) ?? []) {
            if (!session.stream || session.stream.writableNeedDrain) continue;
            session.stream.write((legacy ??= frame(updated, `get-${s}`)));
          }
          json(res, 200, { id: m[1], version: ++version, name: 'p', price: 1, currency: 'USD' });
        });
      });
      return;
    }
    res.writeHead(404).end();
  });
});

listenAndAnnounce(server);
