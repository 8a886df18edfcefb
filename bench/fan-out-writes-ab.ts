// Old against new on the fan-out's socket writes alone (stream-hub.ts, direct-chunks.ts), in one process: STREAMS
// real loopback SSE responses per checkout (node:http on port 0, raw clients that read nothing past the head, as the
// unread streams of bench/readers-ab.ts), each hub given FRAMES frames per stream per round (one ~170-byte modern
// notice each), then flushed; server CPU (process.cpuUsage: this process is the server) per frame written, alternated
// per round. Where readers-ab.ts measures a whole server on a shared machine, this isolates the writes' own cost.
//   OLD_ROOT=/work/old-1da node --conditions=writeonce-source --import tsx bench/fan-out-writes-ab.ts
// Env: STREAMS (1000), ROUNDS (8), FRAMES ("1,4,16,40": frames coalesced per stream per write), REPS (8 flushes a round; a paused client's socket fills past some MB, so keep FRAMES x REPS x ROUNDS modest).
import * as http from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import type { StreamHub } from '../src/http/streams/stream-hub.ts';
import { makeStreamHub } from '../src/http/streams/stream-hub.ts';

const OLD_ROOT = process.env.OLD_ROOT;
if (!OLD_ROOT) throw new Error('set OLD_ROOT to a checkout of the old code');
const STREAMS = Number(process.env.STREAMS ?? 1000);
const ROUNDS = Number(process.env.ROUNDS ?? 8);
const REPS = Number(process.env.REPS ?? 8);
const FRAMES = (process.env.FRAMES ?? '1,4,16,40').split(',').map(Number);
const oldHub = ((await import(join(OLD_ROOT, 'src/http/streams/stream-hub.ts'))) as { makeStreamHub: typeof makeStreamHub }).makeStreamHub;

type Name = 'old' | 'new';
const prefix = Buffer.from('event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"wo://products/17","_meta":{"modelcontextprotocol.io/subscriptionId":');

const open = async (make: () => StreamHub) => {
  const hub = make();
  const sinks: Array<ReturnType<StreamHub['open']>> = [];
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    // Opened once the head is on the socket, as the edge does (direct chunks need it).
    setImmediate(() => sinks.push(hub.open(res, 1_000_000)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const clients: Socket[] = [];
  for (let i = 0; i < STREAMS; i += 100) {
    await Promise.all(Array.from({ length: Math.min(100, STREAMS - i) }, () => new Promise<void>((resolve) => {
      const c = connect(port, '127.0.0.1', () => c.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n'));
      c.once('data', () => (c.pause(), resolve()));
      clients.push(c);
    })));
  }
  while (sinks.length < STREAMS) await new Promise((r) => setImmediate(r));
  let flushed: (() => void) | undefined;
  hub.observe({ notified: () => {}, dropped: () => {}, streamClosed: () => {}, flushed: () => flushed?.() });
  const tails = sinks.map((_, i) => Buffer.from(`${2_000_000 + i}}}}\n\n`));
  const round = async (frames: number) => {
    const t0 = process.cpuUsage();
    for (let r = 0; r < REPS; r++) {
      const done = new Promise<void>((resolve) => (flushed = resolve));
      for (let f = 0; f < frames; f++) for (let i = 0; i < sinks.length; i++) sinks[i].enqueue(prefix, tails[i]);
      await done;
    }
    const d = process.cpuUsage(t0);
    return (d.user + d.system) / (REPS * frames * sinks.length);
  };
  const close = () => {
    for (const c of clients) c.destroy();
    server.close();
  };
  return { round, close, blocked: () => hub.budget.stats().backlogged };
};

const sides: Record<Name, Awaited<ReturnType<typeof open>>> = { old: await open(oldHub), new: await open(makeStreamHub) };
try {
  for (const frames of FRAMES) {
    for (const k of ['old', 'new'] as const) await sides[k].round(frames); // warm
    const res: Record<Name, number[]> = { old: [], new: [] };
    for (let r = 0; r < ROUNDS; r++) for (const k of (r % 2 ? ['new', 'old'] : ['old', 'new']) as Name[]) res[k].push(await sides[k].round(frames));
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const [o, n] = [median(res.old), median(res.new)];
    console.log(`${String(frames).padStart(3)} frames a write: CPU per frame old ${o.toFixed(3)} µs, new ${n.toFixed(3)} µs (new/old ${(n / o).toFixed(2)}; medians of ${ROUNDS} rounds)  blocked streams ${sides.old.blocked()}/${sides.new.blocked()}  load ${loadavg()[0].toFixed(2)}`);
  }
} finally {
  for (const s of Object.values(sides)) s.close();
}
