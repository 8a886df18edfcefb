// Raw-socket SSE subscribers for notification benchmarks: modern `subscriptions/listen` streams and legacy
// session GET streams, opened over plain TCP (no SDK, no HTTP client in the way), so a thousand of them
// cost the generator little. Each counts `notifications/resources/updated` messages as they arrive and
// timestamps them with performance.now() in the socket's 'data' handler.
//
// The body is parsed with the server's SSE codec, over the raw (chunked) bytes: the server writes every SSE
// event as one chunk (one `res.write`), so a chunk-size line is a line of its own (a field the parser does not
// know) and the CRLF ending a chunk a blank line. A stream can also be opened paused: only its response head is
// read, then the socket stops reading (a stalled client, for the stall-isolation scenario).
import { connect, type Socket } from 'node:net';
import { sseParser, type SseEvent } from '../../src/support/sse.ts';
import { LEGACY_VERSION, legacyHeaders, legacyRpc, listenBody, modernHeaders, openLegacySession, type LegacySession } from '../../testkit/mcp.ts';

const UPDATED = 'notifications/resources/updated';
const UPDATED_BUF = Buffer.from(UPDATED, 'latin1');
const EMPTY = Buffer.alloc(0);
const ACK = 'notifications/subscriptions/acknowledged';
const GET_SEQ = /^get-(\d+)/;
const TERMINATOR_TEXT = '0\r\n\r\n';
const TERMINATOR = Buffer.from(TERMINATOR_TEXT, 'latin1');

export interface Subscriber {
  readonly kind: 'listen' | 'get';
  /** notifications/resources/updated received so far */
  count: number;
  /** performance.now() of the last one */
  lastAt: number;
  /** true once the server ended the stream (overflow, shutdown) or the socket closed */
  ended: boolean;
  /** bytes read so far, head included */
  bytes: number;
  /** Called per notification: the subscriber, the arrival time and, for GET streams, the log seq of its event id. */
  onUpdated?: (sub: Subscriber, at: number, seq: number | undefined) => void;
  readonly socket: Socket;
  pause(): void;
  resume(): void;
  close(): void;
}

interface OpenOptions {
  origin: string;
  head: string;
  body?: string;
  /** Resolve once this marker has been seen in a frame (the listen ack), else on the response head. */
  readyMarker?: string;
  /** Stop reading right after the response head (a stalled client). */
  paused?: boolean;
  timeoutMs?: number;
}

function openRaw(kind: Subscriber['kind'], opts: OpenOptions): Promise<Subscriber> {
  const { hostname, port } = new URL(opts.origin);
  const socket = connect({ host: hostname, port: Number(port) });
  socket.setNoDelay(true);
  let buf = ''; // the response head
  let headSeen = false;
  const parser = sseParser();
  let last = ''; // the stream's last bytes, for the chunked terminator
  const sub: Subscriber = {
    kind,
    count: 0,
    lastAt: 0,
    ended: false,
    bytes: 0,
    socket,
    pause: () => void socket.pause(),
    resume: () => void socket.resume(),
    close: () => void socket.destroy(),
  };
  return new Promise<Subscriber>((resolve, reject) => {
    let settled = false;
    const finish = (err?: Error): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        socket.destroy();
        reject(err);
      } else resolve(sub);
    };
    const timer = setTimeout(() => finish(new Error(`${kind} stream not ready after ${opts.timeoutMs ?? 10_000} ms`)), opts.timeoutMs ?? 10_000);
    socket.on('error', (e) => {
      sub.ended = true;
      finish(e);
    });
    socket.once('close', () => {
      sub.ended = true;
      finish(new Error(`${kind} stream closed before it was ready: ${buf.slice(0, 300)}`));
    });
    socket.on('end', () => void (sub.ended = true));
    let fast = false; // listen streams once acknowledged: count markers in the raw bytes, no decoding
    let carry: Buffer = EMPTY;
    socket.on('data', (chunk: Buffer) => {
      const at = performance.now();
      sub.bytes += chunk.length;
      if (fast) {
        // A marker split across two chunks: look at the seam (a whole marker never fits in `carry`).
        let n = 0;
        if (carry.length) {
          const seam = Buffer.concat([carry, chunk.subarray(0, UPDATED_BUF.length - 1)]);
          if (seam.indexOf(UPDATED_BUF) >= 0) n++;
        }
        for (let i = chunk.indexOf(UPDATED_BUF); i >= 0; i = chunk.indexOf(UPDATED_BUF, i + UPDATED_BUF.length)) n++;
        carry = chunk.length >= UPDATED_BUF.length - 1 ? chunk.subarray(chunk.length - (UPDATED_BUF.length - 1)) : Buffer.concat([carry, chunk]).subarray(-(UPDATED_BUF.length - 1));
        for (let k = 0; k < n; k++) {
          sub.count++;
          sub.lastAt = at;
          sub.onUpdated?.(sub, at, undefined);
        }
        if (chunk.length >= 5 && chunk.subarray(chunk.length - 5).equals(TERMINATOR)) sub.ended = true;
        return;
      }
      const text = chunk.toString('latin1');
      let events: SseEvent[];
      if (!headSeen) {
        buf += text;
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const status = /^HTTP\/1\.1 (\d{3})/.exec(buf);
        if (!status || status[1] !== '200') return finish(new Error(`${kind} stream: ${buf.slice(0, 400)}`));
        headSeen = true;
        if (opts.paused) {
          socket.pause();
          return finish();
        }
        if (!opts.readyMarker) finish();
        events = parser.push(buf.slice(end + 4));
      } else events = parser.push(text);
      for (const event of events) {
        if (event.data?.includes(UPDATED)) {
          sub.count++;
          sub.lastAt = at;
          const m = kind === 'get' ? GET_SEQ.exec(event.id ?? '') : null;
          sub.onUpdated?.(sub, at, m ? Number(m[1]) : undefined);
        } else if (opts.readyMarker && event.data?.includes(opts.readyMarker)) {
          finish();
          if (kind === 'listen' && parser.rest() === '') fast = true;
        }
      }
      last = (last + text).slice(-TERMINATOR.length);
      if (last === TERMINATOR_TEXT) sub.ended = true; // the chunked terminator: the server ended the stream
    });
    socket.once('connect', () => {
      socket.write(opts.head + (opts.body ?? ''));
    });
  });
}

function headOf(method: string, origin: string, headers: Record<string, string>, body?: string): string {
  const host = new URL(origin).host;
  const lines = [`${method} /mcp HTTP/1.1`, `host: ${host}`];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  if (body !== undefined) lines.push(`content-length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** A modern `subscriptions/listen` stream on `uris`; resolves after the acknowledgement. */
export function openListen(url: string, id: number, uris: string[], opts: { paused?: boolean } = {}): Promise<Subscriber> {
  const origin = new URL(url).origin;
  const body = listenBody(id, uris, {}, { name: 'wo-bench', version: '0.0.0' });
  const head = headOf('POST', origin, modernHeaders('subscriptions/listen'), body);
  return openRaw('listen', { origin, head, body, ...(opts.paused ? { paused: true } : { readyMarker: ACK }) });
}

/** A legacy session's GET stream (subscribe the session first); resolves on the response head. */
export function openGetStream(session: LegacySession, opts: { paused?: boolean } = {}): Promise<Subscriber> {
  const headers = legacyHeaders(session);
  const head = headOf('GET', session.origin, {
    accept: 'text/event-stream',
    'mcp-protocol-version': headers['mcp-protocol-version'] ?? LEGACY_VERSION,
    ...(session.sessionId ? { 'mcp-session-id': session.sessionId } : {}),
  });
  return openRaw('get', { origin: session.origin, head, ...(opts.paused ? { paused: true } : {}) });
}

/** Opens `n` listen streams on one URI, `parallel` at a time (ids 1..n). */
export async function openListens(url: string, n: number, uri: string, parallel = 50): Promise<Subscriber[]> {
  const subs: Subscriber[] = [];
  try {
    for (let i = 0; i < n; i += parallel) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(parallel, n - i) }, (_, j) => openListen(url, 1_000_000 + i + j, [uri])),
      );
      subs.push(...batch);
    }
  } catch (err) {
    for (const s of subs) s.close();
    throw err;
  }
  return subs;
}

/** Opens `n` legacy sessions subscribed to `uri`, each with its GET stream, `parallel` at a time. */
export async function openLegacyGets(url: string, n: number, uri: string, parallel = 50): Promise<Subscriber[]> {
  const subs: Subscriber[] = [];
  try {
    for (let i = 0; i < n; i += parallel) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(parallel, n - i) }, async () => {
          const session = await openLegacySession(url);
          await legacyRpc(session, 1, 'resources/subscribe', { uri });
          return openGetStream(session);
        }),
      );
      subs.push(...batch);
    }
  } catch (err) {
    for (const s of subs) s.close();
    throw err;
  }
  return subs;
}

/**
 * Tracks, over a fixed set of subscribers, how many notifications every one of them has received since the
 * tracker was made ("fully delivered", a level counted from 0), and lets callers await a level. O(1) per
 * notification.
 */
export class DeliveryTracker {
  private readonly reached: number[] = [];
  private readonly start = new Map<Subscriber, number>();
  private full = 0;
  private waiters: { level: number; resolve: (ok: boolean) => void; timer: NodeJS.Timeout }[] = [];

  /** `onEach` gets each notification with the subscriber's level (1 = its first since the tracker was made). */
  constructor(private readonly subs: Subscriber[], private readonly onEach?: (sub: Subscriber, at: number, level: number, seq: number | undefined) => void) {
    for (const s of subs) {
      this.start.set(s, s.count);
      s.onUpdated = (sub, at, seq) => {
        const level = sub.count - this.start.get(sub)!;
        this.onEach?.(sub, at, level, seq);
        this.reached[level] = (this.reached[level] ?? 0) + 1;
        while ((this.reached[this.full + 1] ?? 0) >= this.subs.length) this.full++;
        if (this.waiters.length) this.wake();
      };
    }
  }

  /** The level every subscriber has reached. */
  get fullyDelivered(): number {
    return this.full;
  }

  /** Resolves true once every subscriber has reached `level`, false after `timeoutMs`. */
  waitFor(level: number, timeoutMs: number): Promise<boolean> {
    if (this.full >= level) return Promise.resolve(true);
    return new Promise((resolve) => {
      const w = {
        level,
        resolve,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((x) => x !== w);
          resolve(false);
        }, timeoutMs),
      };
      this.waiters.push(w);
    });
  }

  private wake(): void {
    const ready = this.waiters.filter((w) => this.full >= w.level);
    if (!ready.length) return;
    this.waiters = this.waiters.filter((w) => this.full < w.level);
    for (const w of ready) {
      clearTimeout(w.timer);
      w.resolve(true);
    }
  }

  detach(): void {
    for (const s of this.subs) delete s.onUpdated;
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.resolve(false);
    }
    this.waiters = [];
  }
}
