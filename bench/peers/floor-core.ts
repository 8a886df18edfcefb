// The durable-write floors' shared part (bench/peers/durable-floor.ts on classic-level, pg-floor.ts on
// PostgreSQL): the least a hand-written server can do for the pricing app's REST create and set_price and still
// answer only after the write is durable. node:http, JSON.parse, a hand-written check of the product's fields, rows
// in a Map, and group commit: every request that arrives while a write is in flight waits for the next one, and
// each group is one durable write (`write`) of an event (under its sequence number) and the row (with its version)
// per request. Answers have the same bytes as ours:
// `{"id":"1","version":1,"name":"p1","price":3,"currency":"USD"}` with an ETag (and a Location for a create).
import { createServer, type Server, type ServerResponse } from 'node:http';

export interface Product {
  id: string;
  version: number;
  name: string;
  price: number;
  currency: 'USD' | 'EUR';
}

/** One request's decided write: the event's seq, its kind, and the row after it. */
export interface FloorWrite {
  seq: number;
  kind: 'created' | 'invoked';
  row: Product;
}

/** The event's data, as ours stores it. */
export const eventData = ({ kind, row }: FloorWrite) => (kind === 'created' ? { name: row.name, price: row.price, currency: row.currency } : { price: row.price });

interface Pending extends FloorWrite {
  res: ServerResponse;
}

/** What a floor adds to the write path (bench/peers/notify-floor.ts: listen streams and their notifications). */
export interface FloorExtras {
  /** Answers a request other than the writes (its body parsed); true when it did. */
  route?: (method: string, path: string, body: unknown, res: ServerResponse) => boolean;
  /** A group is durable and its callers answered. */
  committed?: (group: ReadonlyArray<FloorWrite>) => void;
}

/** The floor's HTTP server over `write`, which makes one group durable (resolves once it is). */
export function floorServer(write: (group: ReadonlyArray<FloorWrite>) => Promise<void>, extras: FloorExtras = {}): Server {
  const rows = new Map<string, Product>();
  /** Rows decided but not yet durable (a second set_price on a row in the same group builds on the first). */
  const latest = new Map<string, Product>();
  let lastId = 0;
  let seq = 0;
  let waiting: Pending[] = [];
  let writing = false;

  const answer = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
    res.end(body);
  };
  const refuse = (res: ServerResponse, status: number, message: string) => answer(res, status, JSON.stringify({ error: 'ValidationFailed', message }));

  const settle = (group: Pending[], failure: unknown) => {
    for (const { res, row, kind } of group) {
      if (latest.get(row.id) === row) latest.delete(row.id);
      if (failure !== undefined) {
        answer(res, 503, JSON.stringify({ error: 'StoreUnavailable', message: String(failure) }));
        continue;
      }
      rows.set(row.id, row);
      const headers: Record<string, string> = { etag: `"${row.version}"` };
      if (kind === 'created') headers.location = `/api/products/${row.id}`;
      answer(res, kind === 'created' ? 201 : 200, JSON.stringify(row), headers);
    }
  };

  /** One durable write for every request waiting; the next group forms while it is on its way. */
  const flush = () => {
    if (writing || waiting.length === 0) return;
    writing = true;
    const group = waiting;
    waiting = [];
    write(group).then(
      () => {
        settle(group, undefined);
        extras.committed?.(group);
      },
      (err: unknown) => settle(group, err ?? 'the write failed'),
    ).finally(() => {
      writing = false;
      flush();
    });
  };

  const isPrice = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v > 0;

  /** The decision: the new row, or why not (answered here). */
  const decide = (method: string, path: string, body: unknown, res: ServerResponse): Pending | undefined => {
    if (typeof body !== 'object' || body === null) return void refuse(res, 400, 'the body must be a JSON object');
    const b = body as Record<string, unknown>;
    if (method === 'POST' && path === '/api/products') {
      if (typeof b.name !== 'string' || b.name.length === 0) return void refuse(res, 400, 'name: a non-empty string');
      if (!isPrice(b.price)) return void refuse(res, 400, 'price: a positive number');
      if (b.currency !== 'USD' && b.currency !== 'EUR') return void refuse(res, 400, 'currency: USD or EUR');
      return { res, seq: ++seq, kind: 'created', row: { id: String(++lastId), version: 1, name: b.name, price: b.price, currency: b.currency } };
    }
    const m = /^\/api\/products\/(\d+)\/set_price$/.exec(path);
    if (method === 'POST' && m) {
      if (!isPrice(b.price)) return void refuse(res, 400, 'price: a positive number');
      const current = latest.get(m[1]) ?? rows.get(m[1]);
      if (current === undefined) return void answer(res, 404, JSON.stringify({ error: 'NotFound', message: `products ${m[1]} does not exist` }));
      return { res, seq: ++seq, kind: 'invoked', row: { ...current, version: current.version + 1, price: b.price } };
    }
    answer(res, 404, '{"error":"NotFound"}');
    return undefined;
  };

  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        return refuse(res, 400, 'the body is not JSON');
      }
      if (extras.route?.(req.method ?? 'GET', req.url ?? '/', body, res)) return;
      const pending = decide(req.method ?? 'GET', req.url ?? '/', body, res);
      if (pending === undefined) return;
      latest.set(pending.row.id, pending.row);
      waiting.push(pending);
      flush();
    });
  });
}
