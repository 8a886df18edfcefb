// The durable-write floor (issue 25): the least a hand-written server can do for the pricing app's REST create and
// set_price and still answer only after the write is on disk. node:http, JSON.parse, a hand-written check of the
// product's fields, rows in a Map, and group commit: every request that arrives while a write is in flight waits
// for the next one, and each group is one classic-level `batch(..., { sync: true })` of an event record (under its
// sequence number) and the row (with its version) per request. Answers have the same bytes as ours:
// `{"id":"1","version":1,"name":"p1","price":3,"currency":"USD"}` with an ETag (and a Location for a create).
// Data dir: $DATA_DIR (required; the harness makes a fresh one).
import { createServer, type ServerResponse } from 'node:http';
import { ClassicLevel } from 'classic-level';
import { listenAndAnnounce } from './listen.ts';

interface Product {
  id: string;
  version: number;
  name: string;
  price: number;
  currency: 'USD' | 'EUR';
}

interface Pending {
  res: ServerResponse;
  row: Product;
  kind: 'created' | 'invoked';
}

const db = new ClassicLevel<string, string>(process.env.DATA_DIR!, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
const rows = new Map<string, Product>();
/** Rows decided but not yet durable (a second set_price on a row in the same group builds on the first). */
const latest = new Map<string, Product>();
let lastId = 0;
let seq = 0;
let waiting: Pending[] = [];
let writing = false;

const pad = (n: number) => String(n).padStart(12, '0');

const answer = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
};

const refuse = (res: ServerResponse, status: number, message: string) => answer(res, status, JSON.stringify({ error: 'ValidationFailed', message }));

/** One durable write for every request waiting; the next group forms while it is on its way to disk. */
const flush = () => {
  if (writing || waiting.length === 0) return;
  writing = true;
  const group = waiting;
  waiting = [];
  const ops = group.flatMap(({ row, kind }) => {
    seq++;
    const event = JSON.stringify({ seq, type: 'products', id: row.id, version: row.version, kind, data: kind === 'created' ? { name: row.name, price: row.price, currency: row.currency } : { price: row.price } });
    return [
      { type: 'put' as const, key: `e!${pad(seq)}`, value: event },
      { type: 'put' as const, key: `r!products!${row.id}`, value: JSON.stringify(row) },
    ];
  });
  db.batch(ops, { sync: true }).then(
    () => {
      for (const { res, row, kind } of group) {
        rows.set(row.id, row);
        if (latest.get(row.id) === row) latest.delete(row.id);
        const headers: Record<string, string> = { etag: `"${row.version}"` };
        if (kind === 'created') headers.location = `/api/products/${row.id}`;
        answer(res, kind === 'created' ? 201 : 200, JSON.stringify(row), headers);
      }
    },
    (err: unknown) => {
      for (const { res, row } of group) {
        if (latest.get(row.id) === row) latest.delete(row.id);
        answer(res, 503, JSON.stringify({ error: 'StoreUnavailable', message: String(err) }));
      }
    },
  ).finally(() => {
    writing = false;
    flush();
  });
};

const isPrice = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0;

/** The decision: the new row, or why not. Reads the row as the last write left it, or as a waiting one will. */
const decide = (method: string, path: string, body: unknown, res: ServerResponse): Pending | undefined => {
  if (typeof body !== 'object' || body === null) return void refuse(res, 400, 'the body must be a JSON object');
  const b = body as Record<string, unknown>;
  if (method === 'POST' && path === '/api/products') {
    if (typeof b.name !== 'string' || b.name.length === 0) return void refuse(res, 400, 'name: a non-empty string');
    if (!isPrice(b.price)) return void refuse(res, 400, 'price: a positive number');
    if (b.currency !== 'USD' && b.currency !== 'EUR') return void refuse(res, 400, 'currency: USD or EUR');
    return { res, kind: 'created', row: { id: String(++lastId), version: 1, name: b.name, price: b.price, currency: b.currency } };
  }
  const m = /^\/api\/products\/(\d+)\/set_price$/.exec(path);
  if (method === 'POST' && m) {
    if (!isPrice(b.price)) return void refuse(res, 400, 'price: a positive number');
    const current = latest.get(m[1]) ?? rows.get(m[1]);
    if (current === undefined) return void answer(res, 404, JSON.stringify({ error: 'NotFound', message: `products ${m[1]} does not exist` }));
    return { res, kind: 'invoked', row: { ...current, version: current.version + 1, price: b.price } };
  }
  answer(res, 404, '{"error":"NotFound"}');
  return undefined;
};

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return refuse(res, 400, 'the body is not JSON');
    }
    const pending = decide(req.method ?? 'GET', req.url ?? '/', body, res);
    if (pending === undefined) return;
    latest.set(pending.row.id, pending.row);
    waiting.push(pending);
    flush();
  });
});

await db.open();
listenAndAnnounce(server);
