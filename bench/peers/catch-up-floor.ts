// The floor for readers catching up on the log while other requests are served (bench/scenarios/readers.ts):
// what a careful hand-written node:http server does with the same policy as ours, and nothing else. It speaks
// just enough of our wire for bench/readers-alternated.ts to drive it unchanged:
//   GET /api/_events?from=N  -> SSE: events N..EVENTS, `id: <seq>` and `data: <event JSON>`, their bytes built once
//                               at start (no log read, no decoding), 128 per write (built once), one write per event-loop turn
//                               for all readers together (first come first served), waiting for `drain` when the
//                               socket is full;
//   GET /api/products/:id    -> a row's JSON, built per request.
// Its GET p99 while readers catch up, against idle, is the floor for the readers budget's ratio.
import { createServer, type ServerResponse } from 'node:http';
import { listenAndAnnounce } from './listen.ts';

const EVENTS = Number(process.env.EVENTS ?? 3050);
const BATCH = 128;
const frames: Buffer[] = [];
for (let seq = 1; seq <= EVENTS; seq++) {
  const id = String(1 + (seq % 50));
  const event = seq <= 50
    ? { seq, at: 1764770000000 + seq, type: 'products', id, version: 1, kind: 'created', data: { name: `product ${id}`, price: 100, currency: 'EUR' } }
    : { seq, at: 1764770000000 + seq, type: 'products', id, version: Math.ceil(seq / 50), kind: 'invoked', data: { price: 1 + (seq % 1000) }, method: 'set_price', params: { price: 1 + (seq % 1000) } };
  frames.push(Buffer.from(`id: ${seq}\ndata: ${JSON.stringify(event)}\n\n`));
}

/** Each batch's bytes by its first seq, built once for the readers in step. */
const batches = new Map<number, Buffer>();

/** Readers waiting for their next write, first come first served; one write per turn. */
const queue: Array<() => void> = [];
let scheduled = false;
const turn = () => {
  scheduled = false;
  queue.shift()?.();
  if (queue.length > 0) schedule();
};
const schedule = () => {
  if (scheduled) return;
  scheduled = true;
  setImmediate(turn);
};
const pass = (step: () => void) => {
  queue.push(step);
  schedule();
};

const catchUp = (res: ServerResponse, from: number) => {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  res.flushHeaders();
  let next = Math.max(1, from);
  const step = () => {
    if (res.destroyed || next > EVENTS) return;
    let batch = batches.get(next);
    if (batch === undefined) batches.set(next, (batch = Buffer.concat(frames.slice(next - 1, next - 1 + BATCH))));
    next += BATCH;
    if (res.write(batch)) pass(step);
    else res.once('drain', () => pass(step));
  };
  pass(step);
};

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  if (req.method === 'GET' && url.pathname === '/api/_events') return catchUp(res, Number(url.searchParams.get('from') ?? 1));
  const row = /^\/api\/products\/(\d+)$/.exec(url.pathname);
  if (req.method === 'GET' && row) {
    const text = JSON.stringify({ id: row[1], version: 1, name: `product ${row[1]}`, price: 100, currency: 'EUR' });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), etag: '"1"' });
    return res.end(text);
  }
  res.writeHead(404).end();
});
listenAndAnnounce(server);
